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

// Ledgers is a ledger store under test and what the fixture knows of it.
type Ledgers struct {
	Store store.LedgerStore
	// IDs are the ids the seed's ledgers got, in the seed's order (a live
	// BookKeeper picks them).
	IDs []int64
	// ReadOnly: every write must fail with store.ErrReadOnly and change nothing.
	ReadOnly bool
	// Truncated, when non-zero, is a ledger (besides the seed) some of whose
	// entries are lost, with good entries after bad ones.
	Truncated int64
	// Unreachable opens the backend against something that is not there.
	Unreachable Unreachable
}

// LedgerSeed is what a fixture writes before it opens the store: ledgers of
// entries 0..n-1.
func LedgerSeed() [][][]byte {
	entries := func(ledger, n int) [][]byte {
		var out [][]byte
		for i := range n {
			out = append(out, []byte(fmt.Sprintf("ledger %d entry %d", ledger, i)))
		}
		return out
	}
	big := entries(2, 3)
	big[1] = bytes.Repeat([]byte("big entry "), 600)
	return [][][]byte{entries(0, 5), entries(1, 1), big}
}

// LedgerContract runs every promise of store.LedgerStore (and of
// store.EntryBatcher when the store implements it) against the store open
// returns, seeded with LedgerSeed.
func LedgerContract(t *testing.T, open func(t *testing.T, seed [][][]byte) Ledgers) {
	seed := LedgerSeed()
	l := open(t, seed)
	if len(l.IDs) != len(seed) {
		t.Fatalf("fixture: %d ledger ids for %d seeded ledgers", len(l.IDs), len(seed))
	}
	s := l.Store
	t.Run("Entry", func(t *testing.T) { testEntry(t, s, l.IDs, seed) })
	t.Run("EntryReader", func(t *testing.T) { testEntryReader(t, s, l.IDs, seed) })
	t.Run("EntriesOrder", func(t *testing.T) { testEntriesOrder(t, s, l.IDs, seed) })
	t.Run("EntriesStopAtFnError", func(t *testing.T) {
		stop, calls := errors.New("stop here"), 0
		err := s.Entries(context.Background(), l.IDs[0], 0, -1, func(int64, []byte) error {
			if calls++; calls == 2 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || calls != 2 {
			t.Errorf("Entries whose fn fails on the 2nd entry: %v after %d calls; want fn's error after 2", err, calls)
		}
	})
	t.Run("LastEntry", func(t *testing.T) {
		for i, id := range l.IDs {
			if last, err := s.LastEntry(id); err != nil || last != int64(len(seed[i])-1) {
				t.Errorf("LastEntry(%d) = %d, %v; want %d", id, last, err, len(seed[i])-1)
			}
		}
		if _, err := s.LastEntry(absentLedger(l.IDs)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LastEntry of a ledger with no entries: %v; want ErrNotFound", err)
		}
	})
	t.Run("LedgerIDs", func(t *testing.T) { testLedgerIDs(t, s, l.IDs, seed) })
	t.Run("Cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Entries(ctx, l.IDs[0], 0, -1, func(int64, []byte) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("Entries with a cancelled context: %v; want context.Canceled", err)
		}
		if err := s.LedgerIDs(ctx, func(int64, int64) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("LedgerIDs with a cancelled context: %v; want context.Canceled", err)
		}
	})
	t.Run("EntriesAfterTruncated", func(t *testing.T) { testEntriesTruncated(t, s, l.Truncated) })
	if l.ReadOnly {
		t.Run("WritesRefused", func(t *testing.T) { testLedgerReadOnly(t, s, l.IDs, seed) })
	} else {
		t.Run("PutAndDelete", func(t *testing.T) { testLedgerWrites(t, s, l.IDs) })
	}
	t.Run("Unreachable", func(t *testing.T) { checkUnreachable(t, l.Unreachable) })
}

// absentLedger is a ledger id none of ids is.
func absentLedger(ids []int64) int64 { return slices.Max(ids) + 1000 }

func testEntry(t *testing.T, s store.LedgerStore, ids []int64, seed [][][]byte) {
	for i, id := range ids {
		for e, want := range seed[i] {
			v, err := s.Entry(id, int64(e))
			if err != nil || !bytes.Equal(v, want) {
				t.Errorf("Entry(%d, %d) = %s, %v; want %s", id, e, short(v), err, short(want))
			}
		}
		past := int64(len(seed[i]))
		if _, err := s.Entry(id, past); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprint(id)) {
			t.Errorf("Entry(%d, %d) past the last: %v; want ErrNotFound naming the ledger", id, past, err)
		}
	}
	if _, err := s.Entry(absentLedger(ids), 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Entry of a ledger with no entries: %v; want ErrNotFound", err)
	}
}

func testEntryReader(t *testing.T, s store.LedgerStore, ids []int64, seed [][][]byte) {
	r := s.EntryReader()
	defer r.Close()
	for i, id := range ids {
		for e, want := range seed[i] {
			var got []byte
			err := r.Peek(id, int64(e), func(v []byte) error { got = bytes.Clone(v); return nil })
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("Peek(%d, %d) = %s, %v; want %s", id, e, short(got), err, short(want))
			}
		}
	}
	called := false
	err := r.Peek(ids[0], int64(len(seed[0])), func([]byte) error { called = true; return nil })
	if !errors.Is(err, store.ErrNotFound) || called {
		t.Errorf("Peek past the last entry: %v (fn called: %v); want ErrNotFound, fn not called", err, called)
	}
	stop := errors.New("fn's own")
	if err := r.Peek(ids[0], 0, func([]byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Peek whose fn fails: %v; want fn's error", err)
	}
}

type entry struct {
	id    int64
	value []byte
}

// entries is one Entries call's entries, values copied inside fn.
func entries(t *testing.T, s store.LedgerStore, ledger, from, to int64) []entry {
	t.Helper()
	var got []entry
	err := s.Entries(context.Background(), ledger, from, to, func(id int64, v []byte) error {
		got = append(got, entry{id, bytes.Clone(v)})
		return nil
	})
	if err != nil {
		t.Fatalf("Entries(%d, %d, %d): %v", ledger, from, to, err)
	}
	return got
}

func testEntriesOrder(t *testing.T, s store.LedgerStore, ids []int64, seed [][][]byte) {
	for i, id := range ids {
		n := int64(len(seed[i]))
		for _, c := range [][2]int64{{0, -1}, {0, n - 1}, {1, 2}, {n - 1, -1}, {n, -1}, {0, 0}} {
			got := entries(t, s, id, c[0], c[1])
			to := c[1]
			if to < 0 || to >= n {
				to = n - 1
			}
			var want []entry
			for e := c[0]; e <= to; e++ {
				want = append(want, entry{e, seed[i][e]})
			}
			if !slices.EqualFunc(got, want, func(a, b entry) bool { return a.id == b.id && bytes.Equal(a.value, b.value) }) {
				t.Errorf("Entries(%d, %d, %d) = %s; want %s (values copied in fn, in entry order)", id, c[0], c[1], entryIDs(got), entryIDs(want))
			}
		}
	}
}

func entryIDs(es []entry) string {
	var ids []string
	for _, e := range es {
		ids = append(ids, fmt.Sprintf("%d:%s", e.id, short(e.value)))
	}
	return "[" + strings.Join(ids, " ") + "]"
}

func testLedgerIDs(t *testing.T, s store.LedgerStore, ids []int64, seed [][][]byte) {
	counts := map[int64]int64{}
	var order []int64
	err := s.LedgerIDs(context.Background(), func(id, n int64) error {
		order = append(order, id)
		counts[id] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(order) || len(slices.Compact(slices.Clone(order))) != len(order) {
		t.Errorf("LedgerIDs order %v; want ascending, once each", order)
	}
	for i, id := range ids {
		if counts[id] != int64(len(seed[i])) {
			t.Errorf("LedgerIDs: ledger %d has %d entries; want %d", id, counts[id], len(seed[i]))
		}
	}
	stop, calls := errors.New("stop"), 0
	err = s.LedgerIDs(context.Background(), func(int64, int64) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("LedgerIDs whose fn fails: %v after %d calls; want fn's error after 1", err, calls)
	}
}

// testEntriesTruncated: Entries stops at a lost entry with a *TruncatedError
// naming it; Entries from its EntryID+1 resumes past it.
func testEntriesTruncated(t *testing.T, s store.LedgerStore, ledger int64) {
	if ledger == 0 {
		t.Skip("the fixture cannot lose an entry")
	}
	var good, bad []int64
	goodAfterBad := false
	from := int64(0)
	for range 10000 {
		err := s.Entries(context.Background(), ledger, from, -1, func(id int64, _ []byte) error {
			if id < from {
				t.Errorf("Entries(%d, from %d) handed over entry %d", ledger, from, id)
			}
			good = append(good, id)
			goodAfterBad = goodAfterBad || len(bad) > 0
			return nil
		})
		if err == nil {
			break
		}
		var te *store.TruncatedError
		if !errors.As(err, &te) || !errors.Is(err, store.ErrTruncatedValue) || te.LedgerID != ledger || te.EntryID < from || te.Path != "" {
			t.Fatalf("Entries(%d, from %d): %v; want a *TruncatedError naming an entry of the ledger", ledger, from, err)
		}
		bad = append(bad, te.EntryID)
		from = te.EntryID + 1
	}
	if len(bad) == 0 || !goodAfterBad {
		t.Fatalf("fixture: ledger %d has %d lost and %d good entries, good after lost %v", ledger, len(bad), len(good), goodAfterBad)
	}
	for _, e := range bad {
		var te *store.TruncatedError
		if _, err := s.Entry(ledger, e); !errors.As(err, &te) || te.EntryID != e {
			t.Errorf("Entry(%d, %d) of an entry Entries found lost: %v", ledger, e, err)
		}
	}
}

func testLedgerReadOnly(t *testing.T, s store.LedgerStore, ids []int64, seed [][][]byte) {
	id := ids[0]
	wantReadOnly(t, "PutEntry", fmt.Sprint(id), s.PutEntry(id, 0, []byte("changed")))
	fresh := absentLedger(ids)
	wantReadOnly(t, "PutEntry", fmt.Sprint(fresh), s.PutEntry(fresh, 0, []byte("new")))
	wantReadOnly(t, "DeleteLedgerEntries", fmt.Sprint(id), s.DeleteLedgerEntries(id))
	if b, ok := s.(store.EntryBatcher); ok {
		wantReadOnly(t, "PutEntries", fmt.Sprint(fresh), b.PutEntries([]store.EntryWrite{{LedgerID: fresh, Value: []byte("new")}}))
	}
	if v, err := s.Entry(id, 0); err != nil || !bytes.Equal(v, seed[0][0]) {
		t.Errorf("after refused writes Entry(%d, 0) = %s, %v; want it unchanged", id, short(v), err)
	}
	if _, err := s.Entry(fresh, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after a refused put Entry(%d, 0): %v; want ErrNotFound", fresh, err)
	}
}

func testLedgerWrites(t *testing.T, s store.LedgerStore, ids []int64) {
	fresh := absentLedger(ids)
	for e := range int64(3) {
		if err := s.PutEntry(fresh, e, []byte(fmt.Sprint("put ", e))); err != nil {
			t.Fatalf("PutEntry(%d, %d): %v", fresh, e, err)
		}
	}
	if b, ok := s.(store.EntryBatcher); ok {
		if err := b.PutEntries([]store.EntryWrite{{LedgerID: fresh, EntryID: 3, Value: []byte("put 3")}, {LedgerID: fresh, EntryID: 4, Value: []byte("put 4")}}); err != nil {
			t.Fatalf("PutEntries: %v", err)
		}
	}
	got := entries(t, s, fresh, 0, -1)
	for i, e := range got {
		if e.id != int64(i) || string(e.value) != fmt.Sprint("put ", i) {
			t.Errorf("after puts: entry %d = %d %q", i, e.id, e.value)
		}
	}
	if last, err := s.LastEntry(fresh); err != nil || last != int64(len(got)-1) || len(got) < 3 {
		t.Errorf("after %d puts LastEntry = %d, %v", len(got), last, err)
	}
	if err := s.DeleteLedgerEntries(fresh); err != nil {
		t.Fatalf("DeleteLedgerEntries(%d): %v", fresh, err)
	}
	if _, err := s.Entry(fresh, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after DeleteLedgerEntries Entry(%d, 0): %v; want ErrNotFound", fresh, err)
	}
	if _, err := s.LastEntry(fresh); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after DeleteLedgerEntries LastEntry(%d): %v; want ErrNotFound", fresh, err)
	}
	if v, err := s.Entry(ids[0], 0); err != nil || len(v) == 0 {
		t.Errorf("DeleteLedgerEntries(%d) touched ledger %d: %v", fresh, ids[0], err)
	}
}
