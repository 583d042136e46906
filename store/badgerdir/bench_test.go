package badgerdir

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
)

const (
	benchLedgers       = 20
	benchEntriesPerLed = 10_000 // 200k entries in all
	benchValueSize     = 200
)

// benchDataDir opens, read-only, a data dir of 200k entries of 200 bytes.
func benchDataDir(b *testing.B) *Dir {
	b.Helper()
	dir := b.TempDir()
	d, err := Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	w := d.NewBulkWriter()
	value := bytes.Repeat([]byte("x"), benchValueSize)
	for l := range int64(benchLedgers) {
		for e := range int64(benchEntriesPerLed) {
			if err := w.PutEntry(l+1, e, value); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	return mustOpen(b, dir, store.Options{ReadOnly: true})
}

func reportEntries(b *testing.B, n int) {
	if n != benchLedgers*benchEntriesPerLed {
		b.Fatalf("saw %d entries", n)
	}
	b.SetBytes(int64(n) * benchValueSize)
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

func BenchmarkRawLedgerIteration(b *testing.B) {
	d := benchDataDir(b)
	var n int
	for b.Loop() {
		n = 0
		err := d.RawLedgerIteration(context.Background(), func(k, v []byte) error {
			n++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportEntries(b, n)
}

// BenchmarkEntries scans the same data through LedgerStore.Entries, ledger by ledger.
func BenchmarkEntries(b *testing.B) {
	d := benchDataDir(b)
	var n int
	for b.Loop() {
		n = 0
		for l := range int64(benchLedgers) {
			err := d.Ledgers.Entries(context.Background(), l+1, 0, -1, func(int64, []byte) error {
				n++
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	reportEntries(b, n)
}

func BenchmarkLedgerIDs(b *testing.B) {
	d := benchDataDir(b)
	for b.Loop() {
		ledgers := 0
		err := d.Ledgers.LedgerIDs(context.Background(), func(int64, int64) error {
			ledgers++
			return nil
		})
		if err != nil || ledgers != benchLedgers {
			b.Fatalf("%d ledgers, %v", ledgers, err)
		}
	}
}

// BenchmarkPeekEntry0 reads entry 0 of every ledger through an EntryReader, as
// back-fill does, beside the same point reads made with Badger's own
// transaction: "peek/raw-time" is the reader's cost over Badger's floor.
func BenchmarkPeekEntry0(b *testing.B) {
	d := benchDataDir(b)
	db := d.Ledgers.(*ledgerStore).db
	var peek, raw time.Duration
	for b.Loop() {
		t0 := time.Now()
		er := d.Ledgers.EntryReader()
		for l := range int64(benchLedgers) {
			if err := er.Peek(l+1, 0, func([]byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		er.Close()
		t1 := time.Now()
		txn := db.NewTransaction(false)
		for l := range int64(benchLedgers) {
			item, err := txn.Get(EntryKey(l+1, 0))
			if err != nil {
				b.Fatal(err)
			}
			if err := item.Value(func([]byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		txn.Discard()
		peek, raw = peek+t1.Sub(t0), raw+time.Since(t1)
	}
	reads := float64(b.N * benchLedgers)
	b.ReportMetric(float64(peek.Nanoseconds())/reads, "peek-ns/read")
	b.ReportMetric(float64(raw.Nanoseconds())/reads, "raw-ns/read")
	b.ReportMetric(peek.Seconds()/raw.Seconds(), "peek/raw-time")
}
