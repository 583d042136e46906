package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// BenchmarkCheck compares Check with plain Badger iteration over the same ledger
// store (values read, nothing decoded): the ratio of their entries/s is what the
// cross-layer checks cost. benchDataDir is shared with BenchmarkSchemaUsage.
func BenchmarkCheck(b *testing.B) {
	dir := benchDataDir(b)
	dd, err := datadir.Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
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

// BenchmarkScanRatio runs, in every iteration and in turn over the same data dir,
// a raw iteration of the ledger store (datadir.DataDir.RawLedgerIteration, the
// yardstick: plain Badger iteration with its default options, values read, nothing
// decoded), check as the CLI runs it (the schema-usage count in its pass),
// check --skip-message-scan, inspect schema-usage, and the scans' own reading
// alone (one goroutine, values in place, nothing decoded); it reports each one's
// speed over raw's (raw time / its time; 1.0 is parity, higher is faster).
// Run it with -cpu 1,2 for the one- and two-core figures (bench/ratios.sh).
func BenchmarkScanRatio(b *testing.B) {
	dir := benchDataDir(b)
	dd, err := datadir.Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
	if err != nil {
		b.Fatal(err)
	}
	defer dd.Close()
	ctx := context.Background()
	check := func(usage bool) func() error {
		return func() error {
			_, _, err := Check(ctx, dd, CheckOptions{SchemaUsage: usage, Sources: []FindingSource{ReplicaFindings}}, report.NoProgress{})
			return err
		}
	}
	scans := []struct {
		name string
		run  func() error
	}{
		{"raw", func() error { return dd.RawLedgerIteration(ctx, func(k, v []byte) error { return nil }) }},
		{"check", check(true)},
		{"check-skip-message-scan", check(false)},
		{"schema-usage", func() error { _, err := SchemaUsage(ctx, dd, UsageOptions{}, report.NoProgress{}); return err }},
		// The floor of the scans' own reading: one goroutine, values read in place
		// (no prefetch), nothing decoded.
		{"iteration-in-place", func() error {
			return dd.ScanLedgerRange(ctx, store.WholeLedgerStore, func(int64, int64, []byte) error { return nil }, nil)
		}},
	}
	spent := make([]time.Duration, len(scans))
	cpu := make([]time.Duration, len(scans))
	for b.Loop() {
		for i, s := range scans {
			start, startCPU := time.Now(), rusage.ProcessCPU()
			if err := s.run(); err != nil {
				b.Fatal(err)
			}
			spent[i] += time.Since(start)
			cpu[i] += rusage.ProcessCPU() - startCPU
		}
	}
	for i, s := range scans[1:] {
		b.ReportMetric(spent[0].Seconds()/spent[i+1].Seconds(), s.name+"/raw")
		// CPU time (all threads): what other jobs on the machine sway less.
		b.ReportMetric(cpu[0].Seconds()/cpu[i+1].Seconds(), s.name+"/raw-cpu")
	}
	b.ReportMetric(spent[0].Seconds()/float64(b.N), "raw-s/op")
}
