//go:build !race

package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// The race detector multiplies memory, so this test runs without it.

// TestReportMemoryFlat: report's peak memory does not grow with the number of
// topics. Each size's report runs in a fresh child process (the test binary),
// which prints its own peak (rusage.PeakRSS). Below about 5,000 topics the
// peak still grows with the cluster, as the fixed budgets fill up (Badger's
// caches, the sorters of check and report: about 100 MB in all); past them it
// is flat. Holding every topic's lanes and every finding in memory, as the
// report once did, took its peak from 160 MB at 6,000 topics to 400 MB at
// 10,000.
func TestReportMemoryFlat(t *testing.T) {
	if dir := os.Getenv(envReportMemDir); dir != "" {
		reportMemChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("generates and reports 30,000 topics")
	}
	const small, large = 6_000, 24_000
	peak := func(topics int) float64 {
		dir := filepath.Join(t.TempDir(), "dd")
		if _, err := fixtures.Generate(context.Background(), dir, fixtures.Options{Seed: 1, Topics: topics,
			LedgersPerTopic: 3, EntriesPerLedger: 2, LoseSchemaLedgers: 2, LoseTopicLedger: true, CorruptCRC: true,
			OrphanLedger: true}, nil); err != nil {
			t.Fatal(err)
		}
		return rusage.PeakOfChild(t, "TestReportMemoryFlat", envReportMemDir+"="+dir)
	}
	a, b := peak(small), peak(large)
	t.Logf("peak RSS: %d topics %.1f MiB, %d topics %.1f MiB", small, a, large, b)
	// 4x the topics may cost a little more (GC timing, the caches' last fill), never per topic.
	if b > a*1.3+16 {
		t.Errorf("peak RSS grew from %.1f MiB (%d topics) to %.1f MiB (%d topics)", a, small, b, large)
	}
}

func reportMemChild(t *testing.T, dir string) {
	out := filepath.Join(t.TempDir(), "r.html")
	if o, e, code := runApp(t, "-d", dir, "report", "--out", out); code > 1 {
		t.Fatalf("report: exit %d\n%s\n%s", code, o, e)
	}
	rusage.PrintPeak(t)
}
