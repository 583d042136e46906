package repair_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/app"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = app.Run(context.Background(), append([]string{"ledgermedic"}, args...), app.Env{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// TestCLICaptureAndRepair drives the commands as an SRE would: capture a healthy
// copy, dry run on the damaged one, apply, check idempotence, undo.
func TestCLICaptureAndRepair(t *testing.T) {
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: 4})
	broken, m := testutil.Fixture(t, fixtures.Options{Seed: 4, LoseSchemaLedgers: 2, LoseSchemaEntries: 1})
	capFile := filepath.Join(t.TempDir(), "schemas.jsonl")

	code, out, errOut := run(t, "--data-dir", healthy, "schema", "capture", "--out", capFile)
	if code != 0 || !strings.Contains(out, "Schema capture") {
		t.Fatalf("capture: exit %d\n%s\n%s", code, out, errOut)
	}
	lines := bytes.Count(mustRead(t, capFile), []byte("\n"))
	if lines != m.Totals.SchemaVersions {
		t.Fatalf("capture wrote %d lines, want %d", lines, m.Totals.SchemaVersions)
	}
	if code, _, _ := run(t, "--data-dir", healthy, "schema", "capture", "--out", capFile); code != 2 {
		t.Fatalf("overwrite without --force: exit %d, want 2", code)
	}
	if code, _, _ := run(t, "--data-dir", broken, "schema", "capture", "--out", capFile, "--force"); code != 1 {
		t.Fatalf("capture of a damaged dir: exit %d, want 1 (versions skipped)", code)
	}
	// Recapture from the healthy copy for the repair.
	if code, _, _ := run(t, "--data-dir", healthy, "schema", "capture", "--out", capFile, "--force"); code != 0 {
		t.Fatal("recapture failed")
	}

	code, out, _ = run(t, "--data-dir", broken, "schema", "repair")
	if code != 1 || !strings.Contains(out, "unresolved") || !strings.Contains(out, "dry run") {
		t.Fatalf("repair without inputs: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "--data-dir", broken, "schema", "repair", "--from", capFile)
	if code != 0 || !strings.Contains(out, "dry run: nothing was changed") || !strings.Contains(out, "restore") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	code, out, errOut = run(t, "--data-dir", broken, "--json", "schema", "repair", "--from", capFile, "--apply",
		"--backup", filepath.Join(t.TempDir(), "meta.bak"))
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		RunID      string           `json:"run_id"`
		Restored   int              `json:"restored"`
		Unresolved int              `json:"unresolved"`
		Repair     []map[string]any `json:"schema_repair"`
		Notes      []string         `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.RunID == "" || doc.Restored != 3 || doc.Unresolved != 0 || len(doc.Repair) != 3 {
		t.Fatalf("apply output %+v", doc)
	}
	if !strings.Contains(strings.Join(doc.Notes, "\n"), "journal undo --apply "+doc.RunID) {
		t.Errorf("no undo hint in %v", doc.Notes)
	}
	code, out, _ = run(t, "--data-dir", broken, "schema", "repair", "--from", capFile, "--apply")
	if code != 0 || !strings.Contains(out, "nothing to write") {
		t.Fatalf("second apply: exit %d\n%s", code, out)
	}
	if code, out, errOut := run(t, "--data-dir", broken, "journal", "undo", "--apply", doc.RunID); code != 0 {
		t.Fatalf("undo: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "--data-dir", broken, "schema", "repair", "--from", capFile)
	if code != 0 || !strings.Contains(out, "dry run") {
		t.Fatalf("after undo the versions are lost again: exit %d\n%s", code, out)
	}
}

func TestCLIRepairUsageErrors(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	for _, args := range [][]string{
		{"schema", "repair", "--backup", "x"},
		{"schema", "repair", "--from", filepath.Join(dir, "nope")},
		{"schema", "repair", "--topic", "a/b"},
	} {
		if code, _, errOut := run(t, append([]string{"--data-dir", dir}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
