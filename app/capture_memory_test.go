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

const envCaptureMemDir = "LEDGERMEDIC_TEST_CAPTURE_MEM_DIR"

// TestCaptureSkippedMemoryFlat: schema capture's peak memory does not grow with
// the versions it cannot read. Each size runs in a fresh child process (the test
// binary), which prints its own peak. With the skipped versions in a list and
// their table built whole, each took about 1.5 KB: 16,000 and 64,000 lost
// versions peaked at 125 and 214 MB (250,000 at 502 MB), against 112 and 129 MB
// with them in a spill file. Below about 16,000 topics the peak still grows as
// the fixed budgets fill (4,000: 78 MB).
func TestCaptureSkippedMemoryFlat(t *testing.T) {
	if dir := os.Getenv(envCaptureMemDir); dir != "" {
		captureMemChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("generates and captures 80,000 topics")
	}
	const small, large = 16_000, 64_000
	peak := func(topics int) float64 {
		dir := filepath.Join(t.TempDir(), "dd")
		// A lost ledger per topic: about half the versions.
		if _, err := fixtures.Generate(context.Background(), dir, fixtures.Options{Seed: 3, Topics: topics,
			LedgersPerTopic: 1, EntriesPerLedger: 1, LoseSchemaLedgers: topics}, nil); err != nil {
			t.Fatal(err)
		}
		return rusage.PeakOfChild(t, "TestCaptureSkippedMemoryFlat", envCaptureMemDir+"="+dir)
	}
	a, b := peak(small), peak(large)
	t.Logf("peak RSS: %d topics %.1f MiB, %d topics %.1f MiB", small, a, large, b)
	if b > a*1.3+16 {
		t.Errorf("peak RSS grew from %.1f MiB (%d lost versions) to %.1f MiB (%d)", a, small, b, large)
	}
}

func captureMemChild(t *testing.T, dir string) {
	out := filepath.Join(t.TempDir(), "capture.jsonl")
	o, e, code := runApp(t, "-d", dir, "schema", "capture", "--out", out)
	if code != 1 {
		t.Fatalf("capture of a dir with lost schema ledgers: exit %d, want 1\n%s\n%s", code, o, e)
	}
	rusage.PrintPeak(t)
}
