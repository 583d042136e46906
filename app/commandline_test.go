package app

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// The journal records the command the user typed (command path and the flags
// set), whatever process ran it: the demo and tests run commands in-process.
func TestJournalRecordsTheCommandLine(t *testing.T) {
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: 3})
	broken, _ := testutil.Fixture(t, fixtures.Options{Seed: 3, LoseSchemaLedgers: 1})
	capture := filepath.Join(t.TempDir(), "c.jsonl")
	if _, errOut, code := runApp(t, "-d", healthy, "schema", "capture", "--out", capture); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runApp(t, "-d", broken, "schema", "repair", "--from", capture, "--from", capture, "--apply"); code != 0 {
		t.Fatalf("repair: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runApp(t, "-d", broken, "index", "backfill", "--apply", "--workers", "2"); code > 1 {
		t.Fatalf("backfill: exit %d: %s", code, errOut)
	}
	runs, err := mutate.List(mutate.JournalDir(broken))
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs = %v, %v; want a repair and a back-fill run", runs, err)
	}
	want := [][]string{
		{"schema", "repair", "--from", capture, "--from", capture, "--apply"},
		{"index", "backfill", "--apply", "--workers", "2"},
	}
	for i, r := range runs {
		if !reflect.DeepEqual(r.Args, want[i]) {
			t.Errorf("run %d args = %q, want %q", i, r.Args, want[i])
		}
	}
}
