package app

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// listedRun is what the tests read of a journal list row.
type listedRun struct {
	Run      string `json:"run"`
	Command  string `json:"command"`
	UndoneBy string `json:"undone_by"`
}

// listedRuns is journal list -o json.
func listedRuns(t *testing.T, dir string) []listedRun {
	t.Helper()
	out, errOut, code := runApp(t, "-d", dir, "-o", "json", "journal", "list")
	if code != 0 {
		t.Fatalf("journal list: exit %d: %s", code, errOut)
	}
	var doc struct {
		Runs []listedRun `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Runs
}

// reportRuns reads the journal table of a report page: each run's command line
// and its Undone cell, as text.
func reportRuns(t *testing.T, page string) map[string][2]string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-run="([^"]+)"><td class="mono">[^<]*</td><td class="mono">([^<]*)</td>.*?<td class="num">[^<]*</td>\s*<td>(.*?)</td>`)
	tags := regexp.MustCompile(`<[^>]+>`)
	out := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(page, -1) {
		out[m[1]] = [2]string{html.UnescapeString(m[2]), strings.TrimSpace(html.UnescapeString(tags.ReplaceAllString(m[3], "")))}
	}
	return out
}

// TestJournalListAndReportAgreeOnUndoChains undoes a schema repair, undoes the
// undo, and undoes that again: journal list, the report and undo itself must
// say the same of every run (the repair is undone again at the end), the
// report's command is said once, and the dry run of an undo that brings back
// a ledger says so.
func TestJournalListAndReportAgreeOnUndoChains(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1, LoseSchemaLedgers: 1})
	capture := filepath.Join(t.TempDir(), "schemas.jsonl")
	captureOf(t, 1, capture)
	if _, errOut, code := runApp(t, "-d", dir, "schema", "repair", "--from", capture, "--apply"); code != 0 {
		t.Fatalf("schema repair --apply: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runApp(t, "-d", dir, "journal", "undo", "--apply", "last"); code != 0 {
		t.Fatalf("undo the repair: exit %d: %s", code, errOut)
	}
	// The undo removed the repair's ledger; undoing the undo writes its entries back.
	out, errOut, code := runApp(t, "-d", dir, "-o", "json", "journal", "undo", "last")
	if code != 0 {
		t.Fatalf("dry run undo of the undo: exit %d: %s", code, errOut)
	}
	var plan struct {
		Plan []undoStep `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	back := 0
	for _, s := range plan.Plan {
		if s.Kind == "drop-ledger" && !strings.HasPrefix(s.Action, "write back the ") {
			t.Errorf("undo of a ledger drop says %q", s.Action)
		}
		if strings.HasPrefix(s.Action, "write back the ") {
			back++
		}
	}
	if back == 0 {
		t.Errorf("the undo of the undo brings back no ledger: %+v", plan.Plan)
	}
	for range 2 {
		if _, errOut, code := runApp(t, "-d", dir, "journal", "undo", "--apply", "last"); code != 0 {
			t.Fatalf("undo last: exit %d: %s", code, errOut)
		}
	}
	runs := listedRuns(t, dir)
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 4", len(runs))
	}
	repair, undo1, undo2, undo3 := runs[0], runs[1], runs[2], runs[3]
	want := map[string]string{repair.Run: undo1.Run, undo1.Run: "", undo2.Run: undo3.Run, undo3.Run: ""}
	for _, r := range runs {
		if r.UndoneBy != want[r.Run] {
			t.Errorf("journal list: run %s (%s) undone by %q, want %q", r.Run, r.Command, r.UndoneBy, want[r.Run])
		}
	}
	// Undo agrees: the repair is undone (by the first undo, in effect again).
	if _, errOut, code := runApp(t, "-d", dir, "journal", "undo", "--apply", repair.Run); code != 2 || !strings.Contains(errOut, "undone by run "+undo1.Run) {
		t.Errorf("undo of the repair: exit %d: %s", code, errOut)
	}
	page := filepath.Join(t.TempDir(), "r.html")
	if _, errOut, code := runApp(t, "-d", dir, "report", "--out", page); code > 1 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	rows := reportRuns(t, string(b))
	if len(rows) != 4 {
		t.Fatalf("report lists %d runs, want 4", len(rows))
	}
	for _, r := range runs {
		cmd, undone := rows[r.Run][0], rows[r.Run][1]
		if r.UndoneBy != "" && undone != "undone by "+r.UndoneBy || r.UndoneBy == "" && strings.HasPrefix(undone, "undone by") {
			t.Errorf("run %s: report says %q, journal list undone by %q", r.Run, undone, r.UndoneBy)
		}
		if f := strings.Fields(cmd); len(f) >= 4 && f[0] == f[2] && f[1] == f[3] || strings.HasPrefix(cmd, "undo undo") {
			t.Errorf("run %s: report's command %q says the command twice", r.Run, cmd)
		}
	}
	if c := rows[repair.Run][0]; !strings.HasPrefix(c, "schema repair --from ") {
		t.Errorf("report's command of the repair is %q", c)
	}
}
