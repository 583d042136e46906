package mutate

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Calls that arrive while a folder's fsync runs share the next one, and no call
// returns before a fsync that started after it was made.
func TestDirSyncerGroupsCalls(t *testing.T) {
	ds := newDirSyncer()
	var started atomic.Int64 // fsyncs started
	release := make(chan struct{})
	first := make(chan struct{})
	fsync := func() error {
		if started.Add(1) == 1 {
			close(first)
			<-release // the first fsync runs until the other calls wait
		}
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := ds.sync(fsync); err != nil {
			t.Error(err)
		}
	})
	<-first
	const waiters = 8
	var returned atomic.Int64
	for range waiters {
		wg.Go(func() {
			if err := ds.sync(fsync); err != nil {
				t.Error(err)
			}
			// Their changes came after the first fsync started: only a second one covers them.
			if started.Load() < 2 {
				t.Error("a call returned on a fsync that started before it")
			}
			returned.Add(1)
		})
	}
	// Every waiter holds a ticket before the first fsync ends.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds.mu.Lock()
		asked := ds.asked
		ds.mu.Unlock()
		if asked == waiters+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if returned.Load() != 0 {
		t.Fatal("a call returned while the fsync before it ran")
	}
	close(release)
	wg.Wait()
	if n := started.Load(); n != 2 {
		t.Errorf("%d fsyncs for %d calls, %d of them waiting together: want 2", n, waiters+1, waiters)
	}
}

// A failed fsync is the outcome of every call it covers, and the next call tries again.
func TestDirSyncerReportsFailure(t *testing.T) {
	ds := newDirSyncer()
	fail := errTest("disk gone")
	if err := ds.sync(func() error { return fail }); err != fail {
		t.Fatalf("got %v, want %v", err, fail)
	}
	if err := ds.sync(func() error { return nil }); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
