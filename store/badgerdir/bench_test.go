package badgerdir

import (
	"bytes"
	"context"
	"testing"

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
