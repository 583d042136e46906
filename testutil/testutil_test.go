package testutil

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
)

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTreeDiff(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), "one")
	writeFile(t, filepath.Join(dir, "sub", "b"), "two")
	writeFile(t, filepath.Join(dir, "c"), "three")
	before := HashTree(t, dir)
	if len(before) != 3 {
		t.Fatalf("hashed %d files, want 3: %v", len(before), before)
	}
	if d := TreeDiff(before, HashTree(t, dir)); d != nil {
		t.Fatalf("an untouched tree differs: %v", d)
	}

	writeFile(t, filepath.Join(dir, "sub", "b"), "twO") // same size, one byte changed
	writeFile(t, filepath.Join(dir, "d"), "")
	if err := os.Remove(filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	want := []string{"c removed", "d added", filepath.Join("sub", "b") + " changed"}
	slices.Sort(want)
	if got := TreeDiff(before, HashTree(t, dir)); !slices.Equal(got, want) {
		t.Fatalf("TreeDiff = %q, want %q", got, want)
	}
}

func TestCopyDirKeepsEveryByte(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "x", "y", "z"), "deep")
	writeFile(t, filepath.Join(src, "top"), "\x00\xff")
	dst := filepath.Join(t.TempDir(), "copy")
	CopyDir(t, src, dst)
	got, want := HashTree(t, dst), HashTree(t, src)
	if len(got) != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("copy %v, source %v", got, want)
	}
}

// TestDumpReadsEveryNodeAndEntry writes known nodes and entries with the store
// and expects exactly them back.
func TestDumpReadsEveryNodeAndEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dd")
	dd, err := datadir.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := badgerdir.NewBulkWriter(dd.Metadata, dd.Ledgers)
	nodes := map[string][]byte{"/a": []byte("1"), "/a/b": {}, "/ledgers/00/0000/L0012": {0, 1, 2}}
	entries := map[EntryID][]byte{{12, 0}: []byte("e0"), {12, 1}: []byte("e1"), {1 << 40, 7}: {9}}
	for p, v := range nodes {
		if err := w.PutNode(p, v); err != nil {
			t.Fatal(err)
		}
	}
	for id, v := range entries {
		if err := w.PutEntry(id.Ledger, id.Entry, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}

	before := HashTree(t, dir)
	got := Dump(t, dir)
	SameTree(t, before, HashTree(t, dir))
	want := Snapshot{Nodes: nodes, Entries: entries}
	if d := want.Diff(got); d != nil || !want.Equal(got) {
		t.Fatalf("dump differs from what was written: %v", d)
	}

	got.Nodes["/a"] = []byte("2")
	delete(got.Nodes, "/a/b")
	got.Entries[EntryID{12, 2}] = nil
	wantDiff := []string{"ledger 12 entry 2 added", "node /a changed", "node /a/b removed"}
	if d := want.Diff(got); !slices.Equal(d, wantDiff) || want.Equal(got) {
		t.Fatalf("Diff = %q, want %q", d, wantDiff)
	}
}

func TestFixtureWritesItsManifest(t *testing.T) {
	dir, m := Fixture(t, fixtures.Options{Seed: 1, Topics: 1, LedgersPerTopic: 1, EntriesPerLedger: 2})
	loaded, err := fixtures.LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded, m) {
		t.Fatal("the manifest on disk is not the one Fixture returned")
	}
	if s := Dump(t, dir); int64(len(s.Entries)) != m.Totals.StoredEntries {
		t.Fatalf("%d entries stored, manifest says %d", len(s.Entries), m.Totals.StoredEntries)
	}
}
