package app

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFailedFixturesGenerateLeavesNoOut interrupts a real fixtures generate:
// --out is left as it was (absent, or the empty directory it was), with no
// partial copy beside it, so the same command run again succeeds.
func TestFailedFixturesGenerateLeavesNoOut(t *testing.T) {
	if binary == "" {
		t.Fatal("the ledgermedic binary did not build")
	}
	for _, existed := range []bool{false, true} {
		parent := t.TempDir()
		out := filepath.Join(parent, "drill")
		if existed {
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(binary, "fixtures", "generate", "--out", out, "--topics", "40", "--entries", "3000", "-q")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		var ee *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("interrupted generate: %v, want exit 130 (finished before the signal?)", err)
		}
		names, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case existed && (len(names) != 1 || names[0].Name() != "drill"):
			t.Errorf("after a failed generate into an empty --out the parent holds %v, want the empty drill/ alone", names)
		case !existed && len(names) != 0:
			t.Errorf("after a failed generate the parent holds %v, want nothing", names)
		}
		if existed {
			if inside, _ := os.ReadDir(out); len(inside) != 0 {
				t.Errorf("--out holds %v after a failed generate", inside)
			}
		}
		if _, errOut, code := runBin(t, "fixtures", "generate", "--out", out, "-q"); code != 0 {
			t.Errorf("retry: exit %d: %s", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(out, "fixture-manifest.json")); err != nil {
			t.Errorf("retry wrote no data dir: %v", err)
		}
	}
}
