// Package testutil holds test-support code shared by the tests of several
// packages: fixture data dirs, the one builder of hand-made data dirs
// (DataDirBuilder, datadir.go), a byte-level hash of a directory tree ("this
// command wrote nothing"), a dump of every metadata node and ledger entry of a
// data dir, a directory copy, the one read-only open of a data dir
// (OpenReadOnly), and the servers the tests run against (ZooKeeper, etcd,
// bookies). Only _test.go files import it.
//
// It stands above every other package of the program (it imports datadir,
// fixtures, cluster, mutate and the stores), so no package it imports can use it
// from its own internal tests: those keep their helpers to themselves.
package testutil

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
)

// Fixture generates a cluster as opts says in a new temp dir and returns the data
// dir and its manifest.
func Fixture(t testing.TB, opts fixtures.Options) (string, *fixtures.Manifest) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dd")
	m, err := fixtures.Generate(context.Background(), dir, opts, nil)
	if err != nil {
		t.Fatalf("generate fixture %+v: %v", opts, err)
	}
	return dir, m
}

// HashTree returns the SHA-256 of every file under dir, keyed by its path
// relative to dir, so trees in different places (a copy) compare equal.
func HashTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		sums[rel] = hex.EncodeToString(s[:])
		return nil
	})
	if err != nil {
		t.Fatalf("hash tree %s: %v", dir, err)
	}
	return sums
}

// TreeDiff lists the files added, removed or changed from before to after (two
// HashTree results), sorted; nil when the trees are the same.
func TreeDiff(before, after map[string]string) []string {
	var out []string
	for p, h := range before {
		switch a, ok := after[p]; {
		case !ok:
			out = append(out, p+" removed")
		case a != h:
			out = append(out, p+" changed")
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, p+" added")
		}
	}
	slices.Sort(out)
	return out
}

// SameTree fails the test when after is not the tree before was.
func SameTree(t testing.TB, before, after map[string]string) {
	t.Helper()
	for _, d := range TreeDiff(before, after) {
		t.Error(d)
	}
}

// EntryID names one ledger entry.
type EntryID struct{ Ledger, Entry int64 }

// Snapshot is every metadata node and every ledger entry of a data dir.
type Snapshot struct {
	Nodes   map[string][]byte
	Entries map[EntryID][]byte
}

// OpenReadOnly opens the data dir read-only, as a dry run or a read does (an
// uncleanly closed dir is read from a sandbox copy in a temp dir, so dir is
// never written), and closes it when the test ends (closing it before is fine).
func OpenReadOnly(t testing.TB, dir string) *datadir.DataDir {
	t.Helper()
	dd, err := datadir.Open(dir, store.Options{ReadOnly: true, SandboxDir: t.TempDir()})
	if err != nil {
		t.Fatalf("open %s read-only: %v", dir, err)
	}
	t.Cleanup(func() { dd.Close() })
	return dd
}

// Dump opens dir read-only (an uncleanly closed dir is read from a sandbox copy in
// a temp dir, so dir is never written) and returns every node and entry.
func Dump(t testing.TB, dir string) Snapshot {
	t.Helper()
	dd, err := datadir.Open(dir, store.Options{ReadOnly: true, SandboxDir: t.TempDir()})
	if err != nil {
		t.Fatalf("dump %s: %v", dir, err)
	}
	defer dd.Close()
	return DumpStore(t, dd)
}

// DumpStore returns every node and entry of an open data dir.
func DumpStore(t testing.TB, dd *datadir.DataDir) Snapshot {
	t.Helper()
	ctx := context.Background()
	s := Snapshot{Nodes: map[string][]byte{}, Entries: map[EntryID][]byte{}}
	err := dd.Metadata.Walk(ctx, "", func(n store.Node) error {
		s.Nodes[n.Path] = bytes.Clone(n.Value)
		return nil
	})
	if err != nil {
		t.Fatalf("dump %s nodes: %v", dd.Path, err)
	}
	err = dd.RawLedgerIteration(ctx, func(k, v []byte) error {
		l, e, err := badgerdir.ParseEntryKey(k)
		if err != nil {
			return fmt.Errorf("entry key %x: %w", k, err)
		}
		s.Entries[EntryID{l, e}] = bytes.Clone(v)
		return nil
	})
	if err != nil {
		t.Fatalf("dump %s entries: %v", dd.Path, err)
	}
	return s
}

// Diff lists how o differs from s, node by node and entry by entry, sorted; nil
// when they hold the same bytes.
func (s Snapshot) Diff(o Snapshot) []string {
	out := diffMaps(s.Nodes, o.Nodes, func(p string) string { return "node " + p })
	out = append(out, diffMaps(s.Entries, o.Entries, func(id EntryID) string {
		return fmt.Sprintf("ledger %d entry %d", id.Ledger, id.Entry)
	})...)
	slices.Sort(out)
	return out
}

// Equal reports whether s and o hold the same nodes and entries, byte for byte.
func (s Snapshot) Equal(o Snapshot) bool { return len(s.Diff(o)) == 0 }

func diffMaps[K comparable](a, b map[K][]byte, name func(K) string) []string {
	var out []string
	for k, v := range a {
		switch w, ok := b[k]; {
		case !ok:
			out = append(out, name(k)+" removed")
		case !bytes.Equal(v, w):
			out = append(out, name(k)+" changed")
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, name(k)+" added")
		}
	}
	return out
}

// CopyDir copies the tree src to dst (created), for tests that damage or run a
// command on a copy of a prepared data dir.
func CopyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return copyFile(p, target)
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
