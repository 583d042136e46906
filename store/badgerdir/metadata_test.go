package badgerdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

func newWritable(t *testing.T) *Dir {
	t.Helper()
	d, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestCompareAndSet(t *testing.T) {
	m := newWritable(t).Metadata
	const path = "/managed-ledgers/public/default/persistent/orders"

	if _, err := m.Get(path); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing node: err = %v, want ErrNotFound", err)
	}
	v1, err := m.CompareAndSet(path, 0, []byte("one"))
	if err != nil || v1 == 0 {
		t.Fatalf("create: version %d, err %v", v1, err)
	}
	n, err := m.Get(path)
	if err != nil || string(n.Value) != "one" || n.Version != v1 || n.Path != path {
		t.Fatalf("Get = %+v, %v; want value one, version %d", n, err, v1)
	}
	v2, err := m.CompareAndSet(path, v1, []byte("two"))
	if err != nil || v2 == v1 {
		t.Fatalf("update: version %d (was %d), err %v", v2, v1, err)
	}

	mismatches := []struct {
		name   string
		expect uint64
	}{
		{"stale version", v1},
		{"expect absent", 0},
		{"unknown version", v2 + 100},
	}
	for _, c := range mismatches {
		if _, err := m.CompareAndSet(path, c.expect, []byte("bad")); !errors.Is(err, store.ErrVersionMismatch) {
			t.Errorf("%s: err = %v, want ErrVersionMismatch", c.name, err)
		}
	}
	if err := m.CompareAndDelete(path, v1); !errors.Is(err, store.ErrVersionMismatch) {
		t.Errorf("delete with stale version: err = %v, want ErrVersionMismatch", err)
	}
	if n, _ := m.Get(path); string(n.Value) != "two" || n.Version != v2 {
		t.Fatalf("after failed writes: %+v, want value two version %d", n, v2)
	}

	if err := m.CompareAndDelete(path, v2); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := m.Get(path); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after delete: err = %v, want ErrNotFound", err)
	}
	err = m.CompareAndDelete(path, v2)
	if !errors.Is(err, store.ErrVersionMismatch) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete of a deleted node: err = %v, want ErrVersionMismatch and ErrNotFound", err)
	}
	_, err = m.CompareAndSet(path, v2, []byte("three"))
	if !errors.Is(err, store.ErrVersionMismatch) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("set of a deleted node: err = %v, want ErrVersionMismatch and ErrNotFound", err)
	}
}

func TestCompareAndSetConcurrent(t *testing.T) {
	// Many writers start from the same version: exactly one may win.
	m := newWritable(t).Metadata
	v, err := m.CompareAndSet("/n", 0, []byte("start"))
	if err != nil {
		t.Fatal(err)
	}
	const writers = 16
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = m.CompareAndSet("/n", v, []byte(fmt.Sprint("writer ", i)))
		}()
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, store.ErrVersionMismatch):
			t.Errorf("writer %d: err = %v, want nil or ErrVersionMismatch", i, err)
		}
	}
	if wins != 1 {
		t.Errorf("%d writers won, want exactly 1", wins)
	}
}

func TestGetRoundTripBinary(t *testing.T) {
	m := newWritable(t).Metadata
	values := [][]byte{{}, {0}, bytes.Repeat([]byte{0xff, 0}, 3000), []byte("/x\x00y")}
	for i, v := range values {
		path := fmt.Sprintf("/bin/%d", i)
		if _, err := m.CompareAndSet(path, 0, v); err != nil {
			t.Fatal(err)
		}
		n, err := m.Get(path)
		if err != nil || !bytes.Equal(n.Value, v) {
			t.Errorf("%s: got %x, %v; want %x", path, n.Value, err, v)
		}
	}
}

func TestWalk(t *testing.T) {
	nodes := map[string]string{
		"/a":       "1",
		"/a/b":     "2",
		"/a/c/d":   "3",
		"/ab":      "4",
		"/b":       "5",
		"/a/b/e/f": "6",
	}
	d := mustOpen(t, filledDataDir(t, nodes, nil), store.Options{ReadOnly: true})
	walk := func(prefix string) []string {
		var got []string
		err := d.Metadata.Walk(context.Background(), prefix, func(n store.Node) error {
			if nodes[n.Path] != string(n.Value) || n.Version == 0 {
				t.Errorf("node %q: value %q version %d", n.Path, n.Value, n.Version)
			}
			got = append(got, n.Path)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"/a", "/a/b", "/a/b/e/f", "/a/c/d", "/ab", "/b"}},
		{"/a/", []string{"/a/b", "/a/b/e/f", "/a/c/d"}},
		{"/a", []string{"/a", "/a/b", "/a/b/e/f", "/a/c/d", "/ab"}},
		{"/z", nil},
	}
	for _, c := range cases {
		if got := walk(c.prefix); !slices.Equal(got, c.want) {
			t.Errorf("Walk(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}

	stop := errors.New("stop")
	calls := 0
	err := d.Metadata.Walk(context.Background(), "", func(store.Node) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Walk with failing fn: err = %v after %d calls, want stop after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = d.Metadata.Walk(ctx, "", func(store.Node) error { t.Error("fn called after cancel"); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Walk with cancelled ctx: err = %v, want context.Canceled", err)
	}
}

func TestBackupMetadata(t *testing.T) {
	nodes := map[string]string{"/x": "1", "/y/z": "2"}
	d := mustOpen(t, filledDataDir(t, nodes, nil), store.Options{ReadOnly: true})
	var buf bytes.Buffer
	if err := d.BackupMetadata(&buf); err != nil {
		t.Fatal(err)
	}
	// Load the backup into a fresh data dir's metadata and compare.
	fresh := newWritable(t)
	if err := fresh.meta.Load(&buf, 16); err != nil {
		t.Fatal(err)
	}
	for p, v := range nodes {
		n, err := fresh.Metadata.Get(p)
		if err != nil || string(n.Value) != v {
			t.Errorf("restored %s = %q, %v; want %q", p, n.Value, err, v)
		}
	}
}

// A walk longer than one read transaction (walkTxnNodes) hands over every node
// once, in path order, while its callback rewrites each node it was handed (as a
// back-fill's batches do) and creates nodes behind the walk, which it does not
// hand over.
func TestWalkAcrossTransactions(t *testing.T) {
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	defer func(was int) { walkTxnNodes = was }(walkTxnNodes)
	walkTxnNodes = 64
	n := 2*walkTxnNodes + walkTxnNodes/2
	path := func(i int) string { return fmt.Sprintf("/w/n%06d", i) }
	for i := 0; i < n; i += 2 { // the odd ones are created during the walk
		if _, err := d.Metadata.CompareAndSet(path(i), 0, []byte("v0")); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err = d.Metadata.Walk(context.Background(), "/w/", func(nd store.Node) error {
		got = append(got, nd.Path)
		if _, err := d.Metadata.CompareAndSet(nd.Path, nd.Version, []byte("v1")); err != nil {
			return err
		}
		var i int
		fmt.Sscanf(nd.Path, "/w/n%06d", &i)
		if i > 0 {
			_, err := d.Metadata.CompareAndSet(path(i-1), 0, []byte("new"))
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < n; i += 2 {
		want = append(want, path(i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the walk handed over %d nodes (first %q, last %q), want the %d there before it, once each, in order",
			len(got), got[0], got[len(got)-1], len(want))
	}
}
