package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// Metadata is a metadata store under test and what the fixture knows of it.
type Metadata struct {
	Store store.MetadataStore
	// ReadOnly: the store was opened read-only (or can only be read): every
	// write must fail with store.ErrReadOnly and change nothing.
	ReadOnly bool
	// Cut, when set, makes the store's server or files unreachable for good
	// (stops the server). The suite calls it last, on a read-only store, to
	// check writes are refused before any I/O: still ErrReadOnly, not a
	// connection error.
	Cut func()
	// TruncatedPrefix, when set, holds nodes (besides the seed) some of whose
	// values are truncated, with good values after bad ones in path order.
	TruncatedPrefix string
	// Unreachable opens the backend against something that is not there.
	Unreachable Unreachable
}

// SeedRoot is the node every seeded path starts with, and WriteRoot the one
// under which the suite writes (it exists in the seed).
const (
	SeedRoot  = "/contract"
	WriteRoot = SeedRoot + "/w"
)

// MetadataSeed is what a fixture writes before it opens the store: every node
// with its parents, in path order. The paths pick byte order over tree order
// ("a-b" sorts before "a/b"), and the values include an empty one and binary
// bytes.
func MetadataSeed() []store.Node {
	return []store.Node{
		{Path: SeedRoot, Value: []byte{}},
		{Path: SeedRoot + "/a", Value: []byte("alpha")},
		{Path: SeedRoot + "/a-b", Value: []byte("dash sorts before slash")},
		{Path: SeedRoot + "/a/b", Value: []byte("nested")},
		{Path: SeedRoot + "/a/b/c", Value: []byte{0, 1, 0xfe, 0xff}},
		{Path: SeedRoot + "/a0", Value: []byte("zero sorts after slash")},
		{Path: SeedRoot + "/b", Value: bytes.Repeat([]byte("big value "), 400)},
		{Path: WriteRoot, Value: []byte{}},
	}
}

// MetadataContract runs every promise of store.MetadataStore (and of
// store.NodeBatcher when the store implements it) against the store open
// returns, seeded with MetadataSeed.
func MetadataContract(t *testing.T, open func(t *testing.T, seed []store.Node) Metadata) {
	seed := MetadataSeed()
	m := open(t, seed)
	s := m.Store
	versions := map[string]uint64{}
	t.Run("Get", func(t *testing.T) {
		for _, want := range seed {
			n, err := s.Get(want.Path)
			if err != nil {
				t.Errorf("Get(%q): %v", want.Path, err)
				continue
			}
			if n.Path != want.Path || !bytes.Equal(n.Value, want.Value) || n.Version == 0 {
				t.Errorf("Get(%q) = %q %q v%d; want the seeded %q, a version > 0", want.Path, n.Path, short(n.Value), n.Version, short(want.Value))
			}
			versions[want.Path] = n.Version
		}
		missing := SeedRoot + "/missing"
		if _, err := s.Get(missing); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), missing) {
			t.Errorf("Get(%q) = %v; want ErrNotFound naming the path", missing, err)
		}
	})
	t.Run("WalkOrder", func(t *testing.T) { testWalkOrder(t, s, seed, versions) })
	t.Run("WalkStopsAtFnError", func(t *testing.T) { testWalkStops(t, s) })
	t.Run("WalkValuesCopiedInFn", func(t *testing.T) { testWalkCopies(t, s, seed) })
	t.Run("WalkCancelled", func(t *testing.T) { testWalkCancelled(t, s) })
	t.Run("WalkFromAfterTruncated", func(t *testing.T) { testWalkTruncated(t, s, m.TruncatedPrefix) })
	if b, ok := s.(store.NodeBatcher); ok {
		t.Run("GetNodes", func(t *testing.T) { testGetNodes(t, b, seed, versions) })
	}
	if m.ReadOnly {
		t.Run("WritesRefused", func(t *testing.T) { testMetadataReadOnly(t, s, seed, versions) })
		if m.Cut != nil {
			t.Run("WritesRefusedBeforeIO", func(t *testing.T) {
				m.Cut()
				testMetadataReadOnly(t, s, nil, nil)
			})
		}
	} else {
		t.Run("CompareAndSet", func(t *testing.T) { testCompareAndSet(t, s) })
		if b, ok := s.(store.NodeBatcher); ok {
			t.Run("CompareAndSetNodes", func(t *testing.T) { testCompareAndSetNodes(t, s, b) })
		}
	}
	t.Run("Unreachable", func(t *testing.T) { checkUnreachable(t, m.Unreachable) })
}

// walked is one walk's nodes, values copied inside fn.
func walked(t *testing.T, s store.MetadataStore, prefix, start string) []store.Node {
	t.Helper()
	var got []store.Node
	err := s.WalkFrom(context.Background(), prefix, start, func(n store.Node) error {
		got = append(got, store.Node{Path: n.Path, Value: bytes.Clone(n.Value), Version: n.Version})
		return nil
	})
	if err != nil {
		t.Fatalf("WalkFrom(%q, %q): %v", prefix, start, err)
	}
	return got
}

func paths(nodes []store.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Path
	}
	return out
}

// expectWalk is the seed's paths that start with prefix and are >= start.
func expectWalk(seed []store.Node, prefix, start string) []string {
	var out []string
	for _, n := range seed {
		if strings.HasPrefix(n.Path, prefix) && n.Path >= start {
			out = append(out, n.Path)
		}
	}
	return out
}

func testWalkOrder(t *testing.T, s store.MetadataStore, seed []store.Node, versions map[string]uint64) {
	all := walked(t, s, SeedRoot, "")
	byPath := map[string]store.Node{}
	for _, n := range seed {
		byPath[n.Path] = n
	}
	for _, n := range all {
		want := byPath[n.Path]
		if !bytes.Equal(n.Value, want.Value) || n.Version != versions[n.Path] {
			t.Errorf("walk: %q = %q v%d; Get gave %q v%d", n.Path, short(n.Value), n.Version, short(want.Value), versions[n.Path])
		}
	}
	for _, c := range []struct{ prefix, start string }{
		{SeedRoot, ""},
		{SeedRoot + "/a", ""}, // a string prefix: a-b and a0 too, not only a's subtree
		{SeedRoot + "/a/", ""},
		{SeedRoot, SeedRoot + "/a/b"},
		{SeedRoot, SeedRoot + "/a-b\x00"}, // the resume point after a-b
		{SeedRoot + "/a", "/"},            // a start before the prefix
		{SeedRoot, SeedRoot + "/zz"},      // past every node
		{SeedRoot + "/nope", ""},
	} {
		got, want := paths(walked(t, s, c.prefix, c.start)), expectWalk(seed, c.prefix, c.start)
		if !slices.Equal(got, want) {
			t.Errorf("WalkFrom(%q, %q) handed over %q; want %q (path byte order)", c.prefix, c.start, got, want)
		}
	}
	var viaWalk []string
	if err := s.Walk(context.Background(), SeedRoot, func(n store.Node) error { viaWalk = append(viaWalk, n.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := expectWalk(seed, SeedRoot, ""); !slices.Equal(viaWalk, want) {
		t.Errorf("Walk(%q) handed over %q; want %q", SeedRoot, viaWalk, want)
	}
}

func testWalkStops(t *testing.T, s store.MetadataStore) {
	stop := errors.New("stop here")
	calls := 0
	err := s.Walk(context.Background(), SeedRoot, func(store.Node) error {
		if calls++; calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Errorf("walk whose fn fails on the 3rd node: %v after %d calls; want fn's error after 3", err, calls)
	}
}

// testWalkCopies: a copy made inside fn must still hold the node's bytes after
// the walk (a backend that lends one buffer must not change it under a copy).
func testWalkCopies(t *testing.T, s store.MetadataStore, seed []store.Node) {
	copies := map[string][]byte{}
	err := s.Walk(context.Background(), SeedRoot, func(n store.Node) error {
		copies[n.Path] = append([]byte(nil), n.Value...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range seed {
		if !bytes.Equal(copies[n.Path], n.Value) {
			t.Errorf("copy of %q made in fn = %q after the walk; want %q", n.Path, short(copies[n.Path]), short(n.Value))
		}
	}
}

func testWalkCancelled(t *testing.T, s store.MetadataStore) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Walk(ctx, SeedRoot, func(store.Node) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Walk with a cancelled context: %v; want context.Canceled", err)
	}
	err = s.WalkFrom(ctx, SeedRoot, SeedRoot+"/b", func(store.Node) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WalkFrom with a cancelled context: %v; want context.Canceled", err)
	}
}

// testWalkTruncated: Walk stops at the first truncated value with a
// *store.TruncatedError naming it; WalkFrom(p+"\x00") resumes with the next
// node; Get of the same node says so too.
func testWalkTruncated(t *testing.T, s store.MetadataStore, prefix string) {
	if prefix == "" {
		t.Skip("the fixture cannot truncate a value")
	}
	var good, bad []string
	var lastGoodAfterBad bool
	start := ""
	for range 10000 {
		var te *store.TruncatedError
		err := s.WalkFrom(context.Background(), prefix, start, func(n store.Node) error {
			if len(bad) > 0 && n.Path <= bad[len(bad)-1] || len(good) > 0 && n.Path <= good[len(good)-1] {
				t.Errorf("resumed walk handed over %q again or out of order", n.Path)
			}
			good = append(good, n.Path)
			lastGoodAfterBad = lastGoodAfterBad || len(bad) > 0
			return nil
		})
		if err == nil {
			break
		}
		if !errors.As(err, &te) || !errors.Is(err, store.ErrTruncatedValue) {
			t.Fatalf("WalkFrom(%q, %q): %v; want only *TruncatedError", prefix, start, err)
		}
		if te.Path == "" || !strings.HasPrefix(te.Path, prefix) || te.Path < start || !strings.Contains(err.Error(), te.Path) {
			t.Fatalf("WalkFrom(%q, %q): %v names path %q", prefix, start, err, te.Path)
		}
		bad = append(bad, te.Path)
		start = te.Path + "\x00"
	}
	if len(bad) == 0 || !lastGoodAfterBad {
		t.Fatalf("fixture: %d truncated, %d good nodes, good after bad %v; want good nodes after a truncated one", len(bad), len(good), lastGoodAfterBad)
	}
	for _, p := range bad {
		var te *store.TruncatedError
		if _, err := s.Get(p); !errors.As(err, &te) || te.Path != p {
			t.Errorf("Get(%q) of a node the walk found truncated: %v", p, err)
		}
	}
	for _, p := range good {
		if _, err := s.Get(p); err != nil {
			t.Errorf("Get(%q) of a node the walk handed over: %v", p, err)
		}
	}
	// A plain walk stops at the first truncated node, after every good one before it.
	var before []string
	err := s.Walk(context.Background(), prefix, func(n store.Node) error { before = append(before, n.Path); return nil })
	var te *store.TruncatedError
	if !errors.As(err, &te) || te.Path != bad[0] {
		t.Errorf("Walk(%q): %v; want a *TruncatedError for %q", prefix, err, bad[0])
	}
	for _, p := range before {
		if p >= bad[0] {
			t.Errorf("Walk(%q) handed over %q past the truncated %q", prefix, p, bad[0])
		}
	}
}

func testGetNodes(t *testing.T, b store.NodeBatcher, seed []store.Node, versions map[string]uint64) {
	ps := []string{seed[3].Path, SeedRoot + "/missing", seed[1].Path}
	nodes, err := b.GetNodes(ps)
	if err != nil {
		t.Fatalf("GetNodes(%q): %v", ps, err)
	}
	if len(nodes) != len(ps) {
		t.Fatalf("GetNodes(%q): %d nodes", ps, len(nodes))
	}
	want := []store.Node{seed[3], {Path: ps[1]}, seed[1]}
	for i, n := range nodes {
		if n.Path != ps[i] || !bytes.Equal(n.Value, want[i].Value) || n.Version != versions[ps[i]] || (n.Version == 0) != (n.Value == nil) {
			t.Errorf("GetNodes[%d] = %q %q v%d; want %q %q v%d (absent: version 0, nil value)", i, n.Path, short(n.Value), n.Version, ps[i], short(want[i].Value), versions[ps[i]])
		}
	}
}

// testMetadataReadOnly: every write fails with ErrReadOnly naming the node;
// with the seed, nothing changed.
func testMetadataReadOnly(t *testing.T, s store.MetadataStore, seed []store.Node, versions map[string]uint64) {
	existing, fresh := SeedRoot+"/a", WriteRoot+"/new"
	_, err := s.CompareAndSet(existing, versions[existing], []byte("changed"))
	wantReadOnly(t, "CompareAndSet", existing, err)
	_, err = s.CompareAndSet(fresh, 0, []byte("new"))
	wantReadOnly(t, "CompareAndSet", fresh, err)
	wantReadOnly(t, "CompareAndDelete", existing, s.CompareAndDelete(existing, versions[existing]))
	if b, ok := s.(store.NodeBatcher); ok {
		_, err := b.CompareAndSetNodes([]store.NodeWrite{{Path: fresh, Value: []byte("new")}, {Path: existing, Expect: versions[existing], Delete: true}})
		wantReadOnly(t, "CompareAndSetNodes", fresh, err)
	}
	if rb, ok := s.(store.ReadBackWriter); ok {
		_, _, err := rb.CompareAndSetNodesReadBack([]store.NodeWrite{{Path: fresh, Value: []byte("new")}})
		wantReadOnly(t, "CompareAndSetNodesReadBack", fresh, err)
	}
	if seed == nil {
		return
	}
	if n, err := s.Get(existing); err != nil || string(n.Value) != "alpha" || n.Version != versions[existing] {
		t.Errorf("after refused writes Get(%q) = %q v%d, %v; want it unchanged", existing, n.Value, n.Version, err)
	}
	if _, err := s.Get(fresh); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after a refused create Get(%q): %v; want ErrNotFound", fresh, err)
	}
}

func wantMismatch(t *testing.T, op, path string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrVersionMismatch) || !strings.Contains(err.Error(), path) {
		t.Errorf("%s: %v; want ErrVersionMismatch naming %q", op, err, path)
	}
}

// wantNode checks path holds value at version (value nil: path is absent).
func wantNode(t *testing.T, s store.MetadataStore, what, path string, value []byte, version uint64) {
	t.Helper()
	n, err := s.Get(path)
	if value == nil {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: Get(%q) = %q v%d, %v; want ErrNotFound", what, path, short(n.Value), n.Version, err)
		}
		return
	}
	if err != nil || !bytes.Equal(n.Value, value) || n.Version != version {
		t.Errorf("%s: Get(%q) = %q v%d, %v; want %q v%d", what, path, short(n.Value), n.Version, err, short(value), version)
	}
}

func testCompareAndSet(t *testing.T, s store.MetadataStore) {
	p := WriteRoot + "/cas"
	v1, err := s.CompareAndSet(p, 0, []byte("one"))
	if err != nil || v1 == 0 {
		t.Fatalf("create %q: v%d, %v", p, v1, err)
	}
	wantNode(t, s, "after create", p, []byte("one"), v1)
	_, err = s.CompareAndSet(p, 0, []byte("again"))
	wantMismatch(t, "create of an existing node (expect 0)", p, err)
	wantNode(t, s, "after a refused create", p, []byte("one"), v1)
	v2, err := s.CompareAndSet(p, v1, []byte("two"))
	if err != nil || v2 == v1 || v2 == 0 {
		t.Fatalf("set %q at v%d: v%d, %v; want a new version", p, v1, v2, err)
	}
	wantNode(t, s, "after set", p, []byte("two"), v2)
	_, err = s.CompareAndSet(p, v1, []byte("stale"))
	wantMismatch(t, "set at a stale version", p, err)
	wantNode(t, s, "after a refused stale set", p, []byte("two"), v2)

	absent := WriteRoot + "/absent"
	_, err = s.CompareAndSet(absent, v2, []byte("x"))
	wantMismatch(t, "set of a missing node at a version", absent, err)
	wantNode(t, s, "after a refused set of a missing node", absent, nil, 0)

	wantMismatch(t, "delete at a stale version", p, s.CompareAndDelete(p, v1))
	if err := s.CompareAndDelete(p, 0); err == nil {
		t.Errorf("delete of %q expecting version 0 (absent) succeeded", p)
	}
	wantNode(t, s, "after refused deletes", p, []byte("two"), v2)
	if err := s.CompareAndDelete(p, v2); err != nil {
		t.Fatalf("delete %q at v%d: %v", p, v2, err)
	}
	wantNode(t, s, "after delete", p, nil, 0)
	wantMismatch(t, "delete of a deleted node", p, s.CompareAndDelete(p, v2))

	// Recreated, the node walks with its new version.
	v3, err := s.CompareAndSet(p, 0, nil)
	if err != nil {
		t.Fatalf("recreate %q: %v", p, err)
	}
	got := walked(t, s, WriteRoot, "")
	if want := []string{WriteRoot, p}; !slices.Equal(paths(got), want) || got[1].Version != v3 || len(got[1].Value) != 0 {
		t.Errorf("walk after writes: %q (%v); want %q, %q at v%d empty", paths(got), got, want, p, v3)
	}
	if err := s.CompareAndDelete(p, v3); err != nil {
		t.Fatal(err)
	}
}

func testCompareAndSetNodes(t *testing.T, s store.MetadataStore, b store.NodeBatcher) {
	q, r, u := WriteRoot+"/q", WriteRoot+"/r", WriteRoot+"/u"
	vq, err := s.CompareAndSet(q, 0, []byte("q1"))
	if err != nil {
		t.Fatal(err)
	}
	vq2, err := s.CompareAndSet(q, vq, []byte("q2"))
	if err != nil {
		t.Fatal(err)
	}
	// One stale version among three writes: nothing is written.
	_, err = b.CompareAndSetNodes([]store.NodeWrite{
		{Path: r, Value: []byte("r")},
		{Path: q, Expect: vq, Value: []byte("stale")},
		{Path: u, Value: []byte("u")},
	})
	wantMismatch(t, "batch with a stale version", q, err)
	wantNode(t, s, "after a refused batch", r, nil, 0)
	wantNode(t, s, "after a refused batch", u, nil, 0)
	wantNode(t, s, "after a refused batch", q, []byte("q2"), vq2)
	// A must-not-exist write of an existing node refuses the batch too.
	_, err = b.CompareAndSetNodes([]store.NodeWrite{{Path: r, Value: []byte("r")}, {Path: q, Value: []byte("exists")}})
	wantMismatch(t, "batch creating an existing node", q, err)
	wantNode(t, s, "after a refused batch", r, nil, 0)

	vs, err := b.CompareAndSetNodes([]store.NodeWrite{
		{Path: r, Value: []byte("r")},
		{Path: q, Expect: vq2, Value: []byte("q3")},
		{Path: u, Value: []byte("u")},
	})
	if err != nil || len(vs) != 3 {
		t.Fatalf("batch: %v, %v", vs, err)
	}
	nodes, err := b.GetNodes([]string{r, q, u})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"r", "q3", "u"} {
		if string(nodes[i].Value) != want || nodes[i].Version != vs[i] || vs[i] == 0 {
			t.Errorf("after batch: %q = %q v%d; the batch returned v%d, want %q", nodes[i].Path, nodes[i].Value, nodes[i].Version, vs[i], want)
		}
	}
	if got, want := paths(walked(t, s, WriteRoot+"/", "")), []string{q, r, u}; !slices.Equal(got, want) {
		t.Errorf("walk after batch: %q; want %q", got, want)
	}
	// Deletes in one batch; a stale one keeps every node.
	_, err = b.CompareAndSetNodes([]store.NodeWrite{{Path: r, Expect: vs[0], Delete: true}, {Path: q, Expect: vq2, Delete: true}})
	wantMismatch(t, "batch delete with a stale version", q, err)
	wantNode(t, s, "after a refused batch delete", r, []byte("r"), vs[0])
	if _, err := b.CompareAndSetNodes([]store.NodeWrite{
		{Path: r, Expect: vs[0], Delete: true}, {Path: q, Expect: vs[1], Delete: true}, {Path: u, Expect: vs[2], Delete: true},
	}); err != nil {
		t.Fatalf("batch delete: %v", err)
	}
	if got := paths(walked(t, s, WriteRoot+"/", "")); len(got) != 0 {
		t.Errorf("walk after batch delete: %q; want none", got)
	}
}

// short shows a value in an error: its first bytes and its length.
func short(v []byte) string {
	if len(v) <= 24 {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q... (%d bytes)", v[:24], len(v))
}
