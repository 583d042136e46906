package app

import (
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestUndoCommandTakesAnInvocationPrefix: the README's `journal undo --command
// --apply 20261129T131511` names a back-fill by the second its batches were
// written in; the runs it matches belong to one invocation, so it is no
// ambiguity with --command (and stays one without it, and across invocations).
func TestUndoCommandTakesAnInvocationPrefix(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	if _, errOut, code := runApp(t, "-d", dir, "index", "backfill", "--apply", "--batch", "1"); code > 1 {
		t.Fatalf("backfill: exit %d: %s", code, errOut)
	}
	runs := listedRuns(t, dir)
	if len(runs) < 3 {
		t.Fatalf("%d back-fill runs, want several batches", len(runs))
	}
	// The second most runs start with: the README's prefix.
	count := map[string]int{}
	prefix := ""
	for _, r := range runs {
		p := r.Run[:len("20261129T131511")]
		count[p]++
		if count[p] > count[prefix] {
			prefix = p
		}
	}
	if count[prefix] < 2 {
		t.Fatalf("no two runs share a second: %v", count)
	}
	if _, errOut, code := runApp(t, "-d", dir, "journal", "undo", prefix); code != 2 || !strings.Contains(errOut, "ambiguous") {
		t.Errorf("undo %s without --command: exit %d, want 2 (ambiguous): %s", prefix, code, errOut)
	}
	out, errOut, code := runApp(t, "-d", dir, "journal", "undo", "--command", "--apply", prefix)
	if code != 0 {
		t.Fatalf("undo --command --apply %s: exit %d: %s", prefix, code, errOut)
	}
	after := listedRuns(t, dir)
	for _, r := range after[:len(runs)] {
		if r.UndoneBy == "" {
			t.Errorf("run %s of the back-fill not undone:\n%s", r.Run, out)
		}
	}
	// A prefix that matches runs of two invocations (the back-fill's and the undo's) stays ambiguous.
	if _, errOut, code := runApp(t, "-d", dir, "journal", "undo", "--command", after[0].Run[:9]); code != 2 || !strings.Contains(errOut, "ambiguous") {
		t.Errorf("undo --command with a prefix of two invocations: exit %d: %s", code, errOut)
	}
}
