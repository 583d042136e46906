package index

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// buildCLI builds the ledgermedic binary into a temp dir.
func buildCLI(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	bin := filepath.Join(t.TempDir(), "ledgermedic")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runCLI runs the binary and returns its exit code.
func runCLI(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = nil, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatalf("run %s: %v", bin, err)
	return -1, ""
}

func readSnapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	return testutil.Dump(t, dir).Nodes
}

func countRuns(dir string) int {
	names, _ := filepath.Glob(filepath.Join(dir, "journal", "*.json"))
	return len(names)
}

// TestBackfillKillAndResume SIGKILLs a real back-fill process mid-run, runs it
// again, and expects exactly the metadata of an uninterrupted run.
func TestBackfillKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs it in subprocesses")
	}
	bin := buildCLI(t)
	opts := fixtures.Options{Seed: 3, Topics: 30, LedgersPerTopic: 4, EntriesPerLedger: 6}
	base := t.TempDir()
	whole, killed := filepath.Join(base, "whole"), filepath.Join(base, "killed")
	for _, d := range []string{whole, killed} {
		if _, err := fixtures.Generate(context.Background(), d, opts, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !maps.EqualFunc(readSnapshot(t, whole), readSnapshot(t, killed), bytes.Equal) {
		t.Fatal("fixture generation is not deterministic; the comparison would mean nothing")
	}
	args := []string{"index", "backfill", "--apply", "--batch", "1"}
	wantCode, stderr := runCLI(t, bin, append([]string{"-d", whole}, args...)...)
	if wantCode != 0 && wantCode != 1 {
		t.Fatalf("uninterrupted run exit %d: %s", wantCode, stderr)
	}
	total := countRuns(whole)
	if total < 10 {
		t.Fatalf("uninterrupted run wrote %d batch runs; the fixture is too small to interrupt", total)
	}

	// Throttled so that the kill lands part-way.
	cmd := exec.Command(bin, append([]string{"-d", killed}, append(args, "--rate", "150")...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for countRuns(killed) < total/3 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	done := countRuns(killed)
	if done >= total {
		t.Fatalf("the process finished (%d runs) before it was killed", done)
	}
	t.Logf("killed after %d of %d batch runs", done, total)

	code, stderr := runCLI(t, bin, append([]string{"-d", killed}, args...)...)
	if code != wantCode {
		t.Fatalf("resumed run exit %d, uninterrupted %d: %s", code, wantCode, stderr)
	}
	got, want := readSnapshot(t, killed), readSnapshot(t, whole)
	if !maps.EqualFunc(got, want, bytes.Equal) {
		var diff []string
		for k, v := range want {
			if !bytes.Equal(v, got[k]) {
				diff = append(diff, k)
			}
		}
		t.Fatalf("metadata after kill and resume differs from an uninterrupted run at %d nodes: %s", len(diff), strings.Join(diff, ", "))
	}
	// And once more: nothing left to do, so no new run.
	runs := countRuns(killed)
	if code, _ := runCLI(t, bin, append([]string{"-d", killed}, args...)...); code != wantCode || countRuns(killed) != runs {
		t.Fatalf("third run exit %d, journal runs %d -> %d", code, runs, countRuns(killed))
	}
	_ = os.RemoveAll(base)
}
