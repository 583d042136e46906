// Package storetest holds every backend to the promises written in package store
// (store.go, batch.go, open.go): one suite for metadata stores, one for ledger
// stores, run by each backend's tests against its real server or real files.
//
// A backend's test passes an open function that writes the suite's seed through
// the backend's real writer (a live server, a writable Badger, a real bookie) and
// returns the store to test, opened as the backend opens it; read-only backends
// (a ZooKeeper dataDir, an etcd db file, bookie dirs) are seeded by writing
// through the server whose files they read. What the suite tests depends only on
// what the fixture says the store can do and on the interfaces the store
// implements, never on which backend it is.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// Unreachable opens the backend against a server or file that is not there, and
// returns the error and a name the error must contain (the address or path), so
// the user is told what could not be reached.
type Unreachable func(t *testing.T) (name string, err error)

// checkUnreachable runs u: the open must fail, naming what it could not reach.
func checkUnreachable(t *testing.T, u Unreachable) {
	if u == nil {
		t.Skip("the fixture opens no store that can be unreachable")
	}
	name, err := u(t)
	if err == nil {
		t.Fatalf("open of unreachable %s: no error", name)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("open of unreachable %s: error %q does not name it", name, err)
	}
}

// wantReadOnly checks a write on a read-only store: ErrReadOnly, naming what.
func wantReadOnly(t *testing.T, op, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("%s of %s on a read-only store: %v; want ErrReadOnly", op, what, err)
		return
	}
	if !strings.Contains(err.Error(), what) {
		t.Errorf("%s on a read-only store: %q does not name %s", op, err, what)
	}
}

// Seed writes nodes, parents first, through s's own compare-and-set: how a
// fixture fills a writable store, or the live server whose files a read-only
// backend reads.
func Seed(t *testing.T, s store.MetadataStore, nodes []store.Node) {
	t.Helper()
	for _, n := range nodes {
		if _, err := s.CompareAndSet(n.Path, 0, n.Value); err != nil {
			t.Fatalf("seed %q: %v", n.Path, err)
		}
	}
}

// SameTree checks an offline reader shows what its live twin showed: the same
// nodes under prefix, in the same order, with the same values and versions.
func SameTree(t *testing.T, offline, live store.MetadataStore, prefix string) {
	t.Helper()
	a, b := walked(t, offline, prefix, ""), walked(t, live, prefix, "")
	if len(a) == 0 {
		t.Errorf("offline reader: no node under %q", prefix)
	}
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			t.Errorf("node %q v%d of the live store is missing offline", b[i].Path, b[i].Version)
		case i >= len(b):
			t.Errorf("offline node %q v%d is not in the live store", a[i].Path, a[i].Version)
		case a[i].Path != b[i].Path || !bytes.Equal(a[i].Value, b[i].Value) || a[i].Version != b[i].Version:
			t.Errorf("node %d: offline %q = %s v%d; live %q = %s v%d", i, a[i].Path, short(a[i].Value), a[i].Version, b[i].Path, short(b[i].Value), b[i].Version)
		default:
			continue
		}
		return // after the first difference the rest is noise
	}
}

// ClosedAddr is a 127.0.0.1 address nothing listens on.
func ClosedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// SameReads checks that store got reads as store want does, however it is read:
// the whole walk, walks from starts and under prefixes cut from paths (twenty,
// picked by seed), Get of each path and GetNodes of all when both are
// NodeBatchers. describe says what of a node is compared (nil: path, value,
// whether the value is null, version); it may read more of the store, as a
// backend's own stat. For an offline store read two ways (in memory and onto
// disk), which must not differ in anything.
func SameReads(t *testing.T, got, want store.MetadataStore, paths []string, seed uint64, describe func(s store.MetadataStore, n store.Node) string) {
	t.Helper()
	if describe == nil {
		describe = func(_ store.MetadataStore, n store.Node) string {
			return fmt.Sprintf("%q %x nil=%v v%d", n.Path, n.Value, n.Value == nil, n.Version)
		}
	}
	dump := func(s store.MetadataStore, prefix, start string) []string {
		var out []string
		err := s.WalkFrom(context.Background(), prefix, start, func(n store.Node) error {
			out = append(out, describe(s, n))
			return nil
		})
		if err != nil {
			t.Fatalf("WalkFrom(%q, %q): %v", prefix, start, err)
		}
		return out
	}
	if g, w := dump(got, "", ""), dump(want, "", ""); !slices.Equal(g, w) {
		t.Fatalf("walked %d nodes, want %d:\n%q\nwant\n%q", len(g), len(w), g, w)
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	for range 20 {
		p := paths[rng.IntN(len(paths))]
		prefix, start := p[:rng.IntN(len(p)+1)], ""
		if rng.IntN(2) == 0 {
			start = paths[rng.IntN(len(paths))]
		}
		if g, w := dump(got, prefix, start), dump(want, prefix, start); !slices.Equal(g, w) {
			t.Fatalf("WalkFrom(%q, %q) = %q, want %q", prefix, start, g, w)
		}
	}
	for _, p := range paths {
		g, gerr := got.Get(p)
		w, werr := want.Get(p)
		if fmt.Sprint(g, gerr) != fmt.Sprint(w, werr) {
			t.Fatalf("Get(%q) = %v, %v; want %v, %v", p, g, gerr, w, werr)
		}
	}
	gb, ok1 := got.(store.NodeBatcher)
	wb, ok2 := want.(store.NodeBatcher)
	if ok1 && ok2 {
		g, gerr := gb.GetNodes(paths)
		w, werr := wb.GetNodes(paths)
		if fmt.Sprint(g, gerr) != fmt.Sprint(w, werr) {
			t.Fatalf("GetNodes = %v, %v; want %v, %v", g, gerr, w, werr)
		}
	}
}
