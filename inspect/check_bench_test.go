package inspect

import (
	"context"
	"testing"

	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// BenchmarkCheck compares Check with plain Badger iteration over the same ledger
// store (values read, nothing decoded): the ratio of their entries/s is what the
// cross-layer checks cost. benchDataDir is shared with BenchmarkSchemaUsage.
func BenchmarkCheck(b *testing.B) {
	dir := benchDataDir(b)
	dd, err := store.Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
	if err != nil {
		b.Fatal(err)
	}
	defer dd.Close()
	ctx := context.Background()
	b.Run("raw-iteration", func(b *testing.B) {
		var n int64
		for b.Loop() {
			n = 0
			err := dd.RawLedgerIteration(ctx, func(k, v []byte) error {
				n++
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
	b.Run("check", func(b *testing.B) {
		var n int64
		for b.Loop() {
			_, stats, err := Check(ctx, dd, CheckOptions{}, report.NoProgress{})
			if err != nil {
				b.Fatal(err)
			}
			n = stats.Entries
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
}
