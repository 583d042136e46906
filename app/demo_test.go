package app

import (
	"path/filepath"
	"strings"
	"testing"
)

// The demo is the newcomer's first contact: it must run every step to the exit
// code it promises, and the story must end with a clean check.
func TestDemoRunsEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	out, errOut, code := runApp(t, "demo", "--dir", dir)
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	steps := demoSteps("h", "b", "c", "1")
	if got := strings.Count(out, "\n=== "); got != len(steps) {
		t.Errorf("demo ran %d steps, want %d", got, len(steps))
	}
	// After the repair, check must no longer report the lost schema ledgers.
	afterRepair := out[strings.Index(out, "check again"):]
	afterRepair = afterRepair[:strings.Index(afterRepair, "\n=== ")]
	if strings.Contains(afterRepair, "schema-ledger-lost") || !strings.Contains(afterRepair, "(exit 0)") {
		t.Errorf("check after repair is not clean:\n%s", afterRepair)
	}
	for _, want := range []string{"schema-ledger-lost", "committed", "firstEntryIndex", "legacy"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

func TestDemoRefusesAnExistingDir(t *testing.T) {
	_, errOut, code := runApp(t, "demo", "--dir", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
