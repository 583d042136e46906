package bookie_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
	"github.com/ledgermedic/ledgermedic/store/bookie"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// Bookie dirs here are written by fixtures.WriteBookies from the BookKeeper source's
// description of the files; bookie_real_test.go reads files real bookies wrote.

func bookieFixture(t testing.TB, o fixtures.BookieOptions) (string, *fixtures.BookieManifest) {
	t.Helper()
	t.Setenv(store.CacheDirEnv, t.TempDir())
	dd, _ := testutil.Fixture(t, fixtures.Options{Seed: 3, Topics: 4, Partitions: 2, LedgersPerTopic: 2, EntriesPerLedger: 12})
	m, err := fixtures.WriteBookies(context.Background(), dd, filepath.Join(t.TempDir(), "bookies"), o)
	if err != nil {
		t.Fatal(err)
	}
	return dd, m
}

func openWithBookies(t testing.TB, dd string, dirs []string) *datadir.DataDir {
	t.Helper()
	var parts []string
	for _, d := range dirs {
		parts = append(parts, "bookie:"+d)
	}
	u, err := store.ParseLedgersURL(strings.Join(parts, ","))
	if err != nil {
		t.Fatal(err)
	}
	d, err := datadir.Open(dd, store.Options{ReadOnly: true, Ledgers: &u})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

type entryKey struct{ l, e int64 }

// dumpScan collects every entry a full scan passes, in order.
func dumpScan(t *testing.T, d *datadir.DataDir) ([]entryKey, map[entryKey][]byte) {
	t.Helper()
	var order []entryKey
	vals := map[entryKey][]byte{}
	err := d.RawLedgerIteration(context.Background(), func(k, v []byte) error {
		l, e, err := badgerdir.ParseEntryKey(k)
		order = append(order, entryKey{l, e})
		vals[entryKey{l, e}] = bytes.Clone(v)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return order, vals
}

func ledgerCounts(t *testing.T, ls store.LedgerStore) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	if err := ls.LedgerIDs(context.Background(), func(l, n int64) error { out[l] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBookieStoreMatchesBadger: a fixture written as bookie dirs reads back with
// the payloads, counts, ranges and order of the same fixture's Badger store.
func TestBookieStoreMatchesBadger(t *testing.T) {
	dd, m := bookieFixture(t, fixtures.BookieOptions{Bookies: 5})
	if len(m.JournalOnly) == 0 {
		t.Fatal("fixture put no entry in a journal only")
	}
	badger := openLocal(t, dd)
	bk := openWithBookies(t, dd, m.Dirs)

	wantOrder, want := dumpScan(t, badger)
	gotOrder, got := dumpScan(t, bk)
	if !slices.Equal(gotOrder, wantOrder) {
		t.Fatalf("scan order: %d entries, want %d", len(gotOrder), len(wantOrder))
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("ledger %d entry %d: scan payload differs", k.l, k.e)
		}
		e, err := bk.Ledgers.Entry(k.l, k.e)
		if err != nil || !bytes.Equal(e, v) {
			t.Fatalf("ledger %d entry %d: Entry differs (%v)", k.l, k.e, err)
		}
	}
	// One reader serves every entry, each payload lent in the reader's buffer.
	r := bk.Ledgers.EntryReader()
	for k, v := range want {
		if err := r.Peek(k.l, k.e, func(b []byte) error {
			if !bytes.Equal(b, v) {
				return fmt.Errorf("payload differs")
			}
			return nil
		}); err != nil {
			t.Fatalf("ledger %d entry %d: Peek: %v", k.l, k.e, err)
		}
	}
	if err := r.Peek(1<<40, 0, func([]byte) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Peek of an unknown ledger: %v", err)
	}
	r.Close()
	wc, gc := ledgerCounts(t, badger.Ledgers), ledgerCounts(t, bk.Ledgers)
	if fmt.Sprint(wc) != fmt.Sprint(gc) {
		t.Fatalf("LedgerIDs %v, want %v", gc, wc)
	}
	for l := range wc {
		wl, err1 := badger.Ledgers.LastEntry(l)
		gl, err2 := bk.Ledgers.LastEntry(l)
		if wl != gl || err1 != nil || err2 != nil {
			t.Fatalf("ledger %d LastEntry %d (%v), want %d (%v)", l, gl, err2, wl, err1)
		}
		for _, r := range [][2]int64{{0, -1}, {2, 5}, {wl, wl}, {wl + 1, -1}, {5, 2}} {
			var a, b []string
			_ = badger.Ledgers.Entries(context.Background(), l, r[0], r[1], func(e int64, v []byte) error {
				a = append(a, fmt.Sprintf("%d:%x", e, v))
				return nil
			})
			_ = bk.Ledgers.Entries(context.Background(), l, r[0], r[1], func(e int64, v []byte) error {
				b = append(b, fmt.Sprintf("%d:%x", e, v))
				return nil
			})
			if !slices.Equal(a, b) {
				t.Fatalf("ledger %d Entries %v: %d entries, want %d", l, r, len(b), len(a))
			}
		}
	}
	if _, err := bk.Ledgers.LastEntry(1 << 40); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LastEntry of an unknown ledger: %v", err)
	}
	if _, err := bk.Ledgers.Entry(1<<40, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Entry of an unknown ledger: %v", err)
	}
	if err := bk.Ledgers.PutEntry(1, 1, nil); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("PutEntry: %v", err)
	}
	if err := bk.Ledgers.DeleteLedgerEntries(1); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("DeleteLedgerEntries: %v", err)
	}
	fs, err := bk.Ledgers.(*bookie.Store).ReplicaFindings(context.Background())
	if err != nil || len(fs) != 0 || len(m.Expected) != 0 {
		t.Errorf("findings %v (%v), manifest %v: want none", fs, err, m.Expected)
	}
}

func openLocal(t testing.TB, dd string) *datadir.DataDir {
	t.Helper()
	d, err := datadir.Open(dd, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestBookieFaultsMatchManifest: the replica findings are exactly the fixture's
// expected findings, and every entry still served is the Badger payload.
func TestBookieFaultsMatchManifest(t *testing.T) {
	for _, c := range []struct {
		name  string
		o     fixtures.BookieOptions
		kinds []string // must be among the findings
	}{
		{"all faults", fixtures.BookieOptions{Bookies: 5, CutLog: true, UnclosedLog: true, FlipByte: true, MissingBookie: true},
			[]string{store.FindingEntryLogDamaged, store.FindingReplicaCorrupt, store.FindingUnderReplicated}},
		{"flip only", fixtures.BookieOptions{Bookies: 5, FlipByte: true}, []string{store.FindingReplicaCorrupt}},
		{"cut only 3 bookies", fixtures.BookieOptions{Bookies: 3, CutLog: true, LogsPerBookie: 2},
			[]string{store.FindingEntryLogDamaged, store.FindingUnderReplicated}},
		{"missing bookie and journal only", fixtures.BookieOptions{Bookies: 4, MissingBookie: true, JournalOnly: 5},
			[]string{store.FindingUnderReplicated}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dd, m := bookieFixture(t, c.o)
			before := testutil.HashTree(t, filepath.Dir(m.Dirs[0]))
			bk := openWithBookies(t, dd, m.Dirs)
			got, err := bk.Ledgers.(*bookie.Store).ReplicaFindings(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			strip := func(fs []store.ReplicaFinding) []string {
				var out []string
				for _, f := range fs {
					f.Detail = ""
					out = append(out, fmt.Sprintf("%+v", f))
				}
				return out
			}
			if g, w := strip(got), strip(m.Expected); !slices.Equal(g, w) {
				t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			kinds := map[string]int{}
			for _, f := range m.Expected {
				kinds[f.Kind]++
			}
			for _, k := range c.kinds {
				if kinds[k] == 0 {
					t.Errorf("manifest expects no %s finding: %v", k, kinds)
				}
			}
			for _, f := range got {
				if f.Detail == "" {
					t.Errorf("finding without detail: %+v", f)
				}
			}
			_, want := dumpScan(t, openLocal(t, dd))
			_, served := dumpScan(t, bk)
			for k, v := range served {
				if !bytes.Equal(v, want[k]) {
					t.Fatalf("ledger %d entry %d: served payload differs", k.l, k.e)
				}
			}
			if len(served) == 0 {
				t.Fatal("nothing served")
			}
			if diff := testutil.TreeDiff(before, testutil.HashTree(t, filepath.Dir(m.Dirs[0]))); len(diff) > 0 {
				t.Errorf("bookie dirs changed: %v", diff)
			}
		})
	}
}

// TestBookieIndexReused: a second open reuses the index; a changed file rebuilds it.
func TestBookieIndexReused(t *testing.T) {
	dd, m := bookieFixture(t, fixtures.BookieOptions{Bookies: 3})
	note := func() string {
		d := openWithBookies(t, dd, m.Dirs)
		defer d.Close()
		return strings.Join(d.Sources[1].Notes, "; ")
	}
	if n := note(); !strings.Contains(n, "index built") {
		t.Fatalf("first open: %s", n)
	}
	if n := note(); !strings.Contains(n, "index reused") {
		t.Fatalf("second open: %s", n)
	}
	logs, _ := filepath.Glob(filepath.Join(m.Dirs[0], "ledgers/current/*.log"))
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(logs[0], future, future); err != nil {
		t.Fatal(err)
	}
	if n := note(); !strings.Contains(n, "index built") {
		t.Fatalf("after a change: %s", n)
	}
	_, dir, ok := strings.Cut(note(), "index reused: ")
	ents, _ := os.ReadDir(filepath.Dir(dir))
	if !ok || len(ents) != 1 {
		t.Errorf("stale indexes kept: %d", len(ents))
	}
}
