package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestUncleanShutdownSaidOnceWithItsCure kills a real back-fill with SIGKILL:
// each later read says so in one note (not one per database), naming what ends
// it, and a writing run ends it.
func TestUncleanShutdownSaidOnceWithItsCure(t *testing.T) {
	if binary == "" {
		t.Fatal("the ledgermedic binary did not build")
	}
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	cmd := exec.Command(binary, "-d", dir, "index", "backfill", "--apply", "--batch", "1", "--rate", "5")
	cmd.Env = append(os.Environ(), "LEDGERMEDIC_DATA_DIR=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it while it plans (its reads paced at 5 a second take seconds), with
	// the databases open for writing: the journal dir is made when they open.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "journal")); err == nil {
			break
		}
	}
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	count := func(stderr string) int { return strings.Count(stderr, "unclean shutdown") }
	for range 2 {
		_, errOut, code := runBin(t, "-d", dir, "inspect", "topics")
		if code != 0 {
			t.Fatalf("inspect topics after kill -9: exit %d: %s", code, errOut)
		}
		if n := count(errOut); n != 1 || !strings.Contains(errOut, "run the interrupted command again (or any command with --apply)") {
			t.Fatalf("after kill -9 a read says %d unclean-shutdown notes, want one naming its cure:\n%s", n, errOut)
		}
	}
	if _, errOut, code := runBin(t, "-d", dir, "index", "backfill", "--apply", "--batch", "1"); code > 1 {
		t.Fatalf("re-run: exit %d: %s", code, errOut)
	}
	if _, errOut, _ := runBin(t, "-d", dir, "inspect", "topics"); count(errOut) != 0 {
		t.Errorf("after a writing run the note is still said:\n%s", errOut)
	}
}
