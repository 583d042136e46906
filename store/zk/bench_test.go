package zk_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

const (
	zkBenchParents = 100
	zkBenchLeaves  = 500 // per parent: 50,000 leaves, 50,100 nodes walked
	zkBenchConc    = 16
)

// zkBenchTree creates /bench/tNNN/lNNNN with 100-byte values, in multis of 1000
// creates, and returns every path under /bench/ in path order.
func zkBenchTree(b *testing.B, raw *zk.Conn) []string {
	b.Helper()
	value := make([]byte, 100)
	if _, err := raw.Create("/bench", nil, 0, openACL); err != nil {
		b.Fatal(err)
	}
	var paths []string
	for p := range zkBenchParents {
		parent := fmt.Sprintf("/bench/t%03d", p)
		paths = append(paths, parent)
		for l := range zkBenchLeaves {
			paths = append(paths, fmt.Sprintf("%s/l%04d", parent, l))
		}
	}
	zkCreateMany(b, raw, paths, value)
	return paths
}

// zkCreateMany creates paths in order (parents before their children), with
// value, in multis of 1000 creates.
func zkCreateMany(t testing.TB, raw *zk.Conn, paths []string, value []byte) {
	t.Helper()
	for lo := 0; lo < len(paths); lo += 1000 {
		var ops []any
		for _, p := range paths[lo:min(lo+1000, len(paths))] {
			ops = append(ops, &zk.CreateRequest{Path: p, Data: value, Acl: openACL})
		}
		if _, err := raw.Multi(ops...); err != nil {
			t.Fatalf("create %d nodes from %s: %v", len(ops), paths[lo], err)
		}
	}
}

// zkBareGets is the yardstick: a pipelined Get of every path, conc at a time, on a
// plain go-zookeeper session.
func zkBareGets(b *testing.B, raw *zk.Conn, paths []string, conc int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(paths)) {
					return
				}
				if _, _, err := raw.Get(paths[i]); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkZKWalk walks 50,100 nodes of a live server through the backend against
// a bare pipelined Get loop over the same paths at the same concurrency. The
// ratio (bare time / walk time) is the figure; target >= 0.5.
func BenchmarkZKWalk(b *testing.B) {
	srv := testutil.StartZooKeeper(b, testutil.ZKOptions{SnapCount: -1})
	raw := testutil.ZKClient(b, srv.Addr)
	paths := zkBenchTree(b, raw)
	s := testutil.MustOpenMetadata(b, "zk://"+srv.Addr, store.Options{ReadOnly: true, Remote: store.RemoteOptions{Concurrency: zkBenchConc}})
	var walk, bare time.Duration
	for b.Loop() {
		t0 := time.Now()
		n := 0
		err := s.Walk(context.Background(), "/bench/", func(node store.Node) error {
			if node.Path != paths[n] {
				return fmt.Errorf("node %d is %s, want %s", n, node.Path, paths[n])
			}
			n++
			return nil
		})
		if err != nil || n != len(paths) {
			b.Fatalf("walk: %d nodes, %v", n, err)
		}
		t1 := time.Now()
		zkBareGets(b, raw, paths, zkBenchConc)
		walk, bare = walk+t1.Sub(t0), bare+time.Since(t1)
	}
	b.ReportMetric(float64(len(paths))*float64(b.N)/walk.Seconds(), "walk-nodes/s")
	b.ReportMetric(float64(len(paths))*float64(b.N)/bare.Seconds(), "bare-nodes/s")
	b.ReportMetric(bare.Seconds()/walk.Seconds(), "walk/bare-speed")
}

// BenchmarkZKCompareAndSetNodes writes batches of 100 SetData (100-byte values)
// through CompareAndSetNodes against a bare conn.Multi(SetData...) of the same
// batch size with the same version checks. Ratio: bare time / ours; target >= 0.5.
func BenchmarkZKCompareAndSetNodes(b *testing.B) {
	const batch = 100
	srv := testutil.StartZooKeeper(b, testutil.ZKOptions{SnapCount: -1})
	raw := testutil.ZKClient(b, srv.Addr)
	s := testutil.MustOpenMetadata(b, "zk://"+srv.Addr, store.Options{Remote: store.RemoteOptions{Concurrency: zkBenchConc}})
	value := make([]byte, 100)
	var ours, bare []string
	for _, set := range []string{"ours", "bare"} {
		if _, err := raw.Create("/"+set, nil, 0, openACL); err != nil {
			b.Fatal(err)
		}
		for i := range batch {
			p := fmt.Sprintf("/%s/n%03d", set, i)
			if _, err := raw.Create(p, value, 0, openACL); err != nil {
				b.Fatal(err)
			}
			if set == "ours" {
				ours = append(ours, p)
			} else {
				bare = append(bare, p)
			}
		}
	}
	var tOurs, tBare time.Duration
	version := int32(0) // ZooKeeper's Stat.version of every node, alike in both sets
	for b.Loop() {
		writes := make([]store.NodeWrite, batch)
		ops := make([]any, batch)
		for i := range batch {
			writes[i] = store.NodeWrite{Path: ours[i], Expect: uint64(version) + 1, Value: value}
			ops[i] = &zk.SetDataRequest{Path: bare[i], Data: value, Version: version}
		}
		// Alternate which goes first, so neither always follows the other's fsync.
		runOurs := func() {
			t0 := time.Now()
			if _, err := s.CompareAndSetNodes(writes); err != nil {
				b.Fatal(err)
			}
			tOurs += time.Since(t0)
		}
		runBare := func() {
			t0 := time.Now()
			if _, err := raw.Multi(ops...); err != nil {
				b.Fatal(err)
			}
			tBare += time.Since(t0)
		}
		if version%2 == 0 {
			runOurs()
			runBare()
		} else {
			runBare()
			runOurs()
		}
		version++
	}
	b.ReportMetric(float64(batch)*float64(b.N)/tOurs.Seconds(), "ours-nodes/s")
	b.ReportMetric(float64(batch)*float64(b.N)/tBare.Seconds(), "bare-nodes/s")
	b.ReportMetric(tBare.Seconds()/tOurs.Seconds(), "ours/bare-speed")
}
