package badgerdir

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
)

func collectEntries(t *testing.T, l store.LedgerStore, ledgerID, from, to int64) []int64 {
	t.Helper()
	var got []int64
	err := l.Entries(context.Background(), ledgerID, from, to, func(e int64, v []byte) error {
		if !bytes.Equal(v, entryValue(ledgerID, e)) {
			t.Errorf("ledger %d entry %d: value %q", ledgerID, e, v)
		}
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func seq(from, to int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestLedgerReads(t *testing.T) {
	entries := map[int64]int{1: 300, 2: 5, 256: 3, 1 << 40: 1}
	d := mustOpen(t, filledDataDir(t, nil, entries), store.Options{ReadOnly: true})
	l := d.Ledgers

	v, err := l.Entry(2, 4)
	if err != nil || !bytes.Equal(v, entryValue(2, 4)) {
		t.Errorf("Entry(2, 4) = %q, %v", v, err)
	}
	for _, k := range [][2]int64{{2, 5}, {3, 0}, {0, 0}} {
		if _, err := l.Entry(k[0], k[1]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Entry%v: err = %v, want ErrNotFound", k, err)
		}
	}
	storetest.CheckEntryReader(t, l, [][2]int64{{2, 4}, {2, 5}, {1, 0}, {1, 299}, {3, 0}, {256, 2}, {1 << 40, 0}, {0, 0}})

	ranges := []struct {
		ledger, from, to int64
		want             []int64
	}{
		{1, 0, -1, seq(0, 299)},
		{1, 3, 6, seq(3, 6)},
		{1, 250, 1000, seq(250, 299)},
		{1, 255, 257, seq(255, 257)},
		{1, -5, 2, seq(0, 2)},
		{1, 6, 3, nil},
		{2, 4, -1, []int64{4}},
		{3, 0, -1, nil},
		{256, 0, -1, seq(0, 2)},
	}
	for _, r := range ranges {
		if got := collectEntries(t, l, r.ledger, r.from, r.to); !slices.Equal(got, r.want) {
			t.Errorf("Entries(%d, %d, %d) = %v, want %v", r.ledger, r.from, r.to, got, r.want)
		}
	}

	for ledger, n := range entries {
		last, err := l.LastEntry(ledger)
		if err != nil || last != int64(n-1) {
			t.Errorf("LastEntry(%d) = %d, %v; want %d", ledger, last, err, n-1)
		}
	}
	if _, err := l.LastEntry(3); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LastEntry(3): err = %v, want ErrNotFound", err)
	}

	var ids [][2]int64
	err = l.LedgerIDs(context.Background(), func(id, n int64) error {
		ids = append(ids, [2]int64{id, n})
		return nil
	})
	want := [][2]int64{{1, 300}, {2, 5}, {256, 3}, {1 << 40, 1}}
	if err != nil || !slices.Equal(ids, want) {
		t.Errorf("LedgerIDs = %v, %v; want %v", ids, err, want)
	}

	stop := errors.New("stop")
	if err := l.Entries(context.Background(), 1, 0, -1, func(int64, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Entries with failing fn: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Entries(ctx, 1, 0, -1, func(int64, []byte) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Entries with cancelled ctx: err = %v", err)
	}
	if err := l.LedgerIDs(ctx, func(int64, int64) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("LedgerIDs with cancelled ctx: err = %v", err)
	}
}

func TestLedgerWrites(t *testing.T) {
	d := mustOpen(t, filledDataDir(t, nil, map[int64]int{1: 10, 2: 3}), store.Options{})
	l := d.Ledgers
	if err := l.PutEntry(1, 10, entryValue(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := l.PutEntry(1, 0, []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	if v, err := l.Entry(1, 0); err != nil || string(v) != "replaced" {
		t.Errorf("Entry(1, 0) = %q, %v", v, err)
	}
	if last, err := l.LastEntry(1); err != nil || last != 10 {
		t.Errorf("LastEntry(1) = %d, %v; want 10", last, err)
	}
	// Values of 1 MiB and more go to Badger's value log with default options; a value-log
	// read must not be mistaken for a truncated one.
	big := bytes.Repeat([]byte("0123456789abcdef"), 100_000)
	if err := l.PutEntry(1, 11, big); err != nil {
		t.Fatal(err)
	}
	if v, err := l.Entry(1, 11); err != nil || !bytes.Equal(v, big) {
		t.Errorf("Entry(1, 11): %d bytes, %v; want %d bytes", len(v), err, len(big))
	}
	if err := l.DeleteLedgerEntries(1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.LastEntry(1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LastEntry after delete: err = %v, want ErrNotFound", err)
	}
	if got := collectEntries(t, l, 2, 0, -1); !slices.Equal(got, seq(0, 2)) {
		t.Errorf("ledger 2 after deleting ledger 1: %v", got)
	}
}

func TestBulkWriter(t *testing.T) {
	d := newWritable(t)
	w := d.NewBulkWriter()
	buf := []byte("reused")
	for i := range 5 {
		if err := w.PutEntry(9, int64(i), buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutNode("/keep", buf); err != nil {
		t.Fatal(err)
	}
	if err := w.PutNode("/drop", buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXX") // the writer must have copied
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteEntry(9, 4); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteNode("/drop"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Ledgers.Entry(9, 0); err != nil || string(v) != "reused" {
		t.Errorf("Entry(9, 0) = %q, %v", v, err)
	}
	if last, err := d.Ledgers.LastEntry(9); err != nil || last != 3 {
		t.Errorf("LastEntry(9) = %d, %v; want 3", last, err)
	}
	if n, err := d.Metadata.Get("/keep"); err != nil || string(n.Value) != "reused" {
		t.Errorf("Get(/keep) = %q, %v", n.Value, err)
	}
	if _, err := d.Metadata.Get("/drop"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(/drop): err = %v, want ErrNotFound", err)
	}
}

func TestRawLedgerIteration(t *testing.T) {
	d := mustOpen(t, filledDataDir(t, nil, map[int64]int{1: 100, 5: 7}), store.Options{ReadOnly: true})
	n := 0
	err := d.RawLedgerIteration(context.Background(), func(k, v []byte) error {
		l, e, err := ParseEntryKey(k)
		if err != nil {
			return err
		}
		if !bytes.Equal(v, entryValue(l, e)) {
			t.Errorf("ledger %d entry %d: %q", l, e, v)
		}
		n++
		return nil
	})
	if err != nil || n != 107 {
		t.Errorf("RawLedgerIteration saw %d entries, err %v; want 107", n, err)
	}
}
