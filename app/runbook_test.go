package app

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestBackfillRunbookInterruptExitCode interrupts a real back-fill between
// batches and holds the runbook to what the binary does: the exit code it
// names for Ctrl-C, and the resume it promises.
func TestBackfillRunbookInterruptExitCode(t *testing.T) {
	if binary == "" {
		t.Fatal("the ledgermedic binary did not build")
	}
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	cmd := exec.Command(binary, "-d", dir, "index", "backfill", "--apply", "--batch", "1", "--rate", "5")
	cmd.Env = append(os.Environ(), "LEDGERMEDIC_DATA_DIR=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("interrupted back-fill: %v (finished before the signal?)", err)
	}
	code := ee.ExitCode()
	doc, rerr := os.ReadFile("../docs/runbook-backfill.md")
	if rerr != nil {
		t.Fatal(rerr)
	}
	m := regexp.MustCompile(`Ctrl-C[^.]*?(?:\.[^.]*?)?exits (\d+)`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("the back-fill runbook no longer says what Ctrl-C exits with")
	}
	if string(m[1]) != "130" || code != 130 {
		t.Errorf("Ctrl-C: the runbook says exit %s, the binary exited %d (want 130 both)\n%s", m[1], code, errb.String())
	}
	if !strings.Contains(errb.String(), "run the same command again to resume") {
		t.Errorf("the interrupted back-fill does not say how to resume: %s", errb.String())
	}
	// Resuming completes: the same command again exits as a whole run does (0 or 1).
	if _, errOut, code := runBin(t, "-d", dir, "index", "backfill", "--apply", "--batch", "1"); code > 1 {
		t.Errorf("resume: exit %d: %s", code, errOut)
	}
}
