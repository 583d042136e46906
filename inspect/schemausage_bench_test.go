package inspect

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
)

// benchDataDir returns a data dir of LEDGERMEDIC_BENCH_ENTRIES topic entries
// (default 200k). With LEDGERMEDIC_BENCH_DIR it is generated there once and
// reused by later runs; otherwise in a temp dir removed afterwards.
func benchDataDir(b *testing.B) string {
	b.Helper()
	want := 200_000
	if s := os.Getenv("LEDGERMEDIC_BENCH_ENTRIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("LEDGERMEDIC_BENCH_ENTRIES=%q: want a positive count", s)
		}
		want = n
	}
	dir := os.Getenv("LEDGERMEDIC_BENCH_DIR")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "dd")
	} else if m, err := fixtures.LoadManifest(dir); err == nil {
		b.Logf("reusing %s: %d stored entries", dir, m.Totals.StoredEntries)
		return dir
	}
	// The default cluster has 11 managed ledgers of 3 ledgers each, the last one
	// half full: 27.5 ledgers' worth of entries, about 26.5 of them stored (one
	// ledger is offloaded).
	perLedger := max(1, want*2/53)
	start := time.Now()
	m, err := fixtures.Generate(context.Background(), dir, fixtures.Options{Seed: 1, EntriesPerLedger: perLedger}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d stored entries in %v at %s", m.Totals.StoredEntries, time.Since(start).Round(time.Millisecond), dir)
	return dir
}

// BenchmarkSchemaUsage compares SchemaUsage with plain Badger iteration over the
// same keys (values read, nothing decoded). Compare the entries/s of raw and
// usage: the target is usage >= 0.7 x raw.
func BenchmarkSchemaUsage(b *testing.B) {
	dir := benchDataDir(b)
	dd := usageOpen(b, dir, true)
	ctx := context.Background()
	b.Run("raw", func(b *testing.B) {
		var n, size int64
		for b.Loop() {
			n, size = 0, 0
			err := dd.RawLedgerIteration(ctx, func(k, v []byte) error {
				n++
				size += int64(len(v))
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		b.SetBytes(size)
	})
	b.Run("usage", func(b *testing.B) {
		var n int64
		for b.Loop() {
			r, err := SchemaUsage(ctx, dd, UsageOptions{}, report.NoProgress{})
			if err != nil {
				b.Fatal(err)
			}
			n = r.Entries
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
}

// BenchmarkSchemaUsageRatio runs raw iteration and SchemaUsage alternately, so
// load from other processes hits both alike, and reports usage/raw throughput.
func BenchmarkSchemaUsageRatio(b *testing.B) {
	dir := benchDataDir(b)
	dd := usageOpen(b, dir, true)
	ctx := context.Background()
	var raw, usage time.Duration
	for b.Loop() {
		start := time.Now()
		if err := dd.RawLedgerIteration(ctx, func(k, v []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
		raw += time.Since(start)
		start = time.Now()
		if _, err := SchemaUsage(ctx, dd, UsageOptions{}, report.NoProgress{}); err != nil {
			b.Fatal(err)
		}
		usage += time.Since(start)
	}
	b.ReportMetric(raw.Seconds()/usage.Seconds(), "usage/raw")
}
