package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// runAppColumns runs the app in-process with $COLUMNS set (cols 0: unset).
func runAppColumns(t *testing.T, cols string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""),
		Getenv: func(k string) string {
			if k == "COLUMNS" {
				return cols
			}
			return ""
		}}
	code := Run(context.Background(), append([]string{"ledgermedic"}, args...), env)
	return out.String(), errb.String(), code
}

// checkFindingsJSON is check's findings as -o json has them, every severity.
func checkFindingsJSON(t *testing.T, dir string) []report.Finding {
	t.Helper()
	out, errOut, _ := runApp(t, "-d", dir, "check", "-o", "json")
	var doc struct {
		Findings []report.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check -o json: %v\n%s", err, errOut)
	}
	return doc.Findings
}

// TestCheckOutputPutsSummaryAndFindingsFirst: piped (no terminal, no $COLUMNS)
// check prints the summary, then the findings, worst first, then what it
// scanned, fitted to 100 columns, hints whole on their own lines, and no
// coverage table unless asked.
func TestCheckOutputPutsSummaryAndFindingsFirst(t *testing.T) {
	dir := faultyFixture(t)
	all := checkFindingsJSON(t, dir)
	out, errOut, code := runApp(t, "-d", dir, "check")
	if code != 1 {
		t.Fatalf("check: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if lines[0] != "Summary" {
		t.Errorf("check's first line is %q, want the summary", lines[0])
	}
	if f, s := strings.Index(out, "\nFindings ("), strings.Index(out, "\nScanned"); f < 0 || s < f {
		t.Errorf("the findings (at %d) do not come before what was scanned (at %d):\n%s", f, s, out)
	}
	if strings.Contains(out, "firstEntryIndex coverage") {
		t.Errorf("the coverage table printed without --coverage")
	}
	for _, l := range lines {
		if w := runewidth.StringWidth(l); w > pipedWidth && !strings.HasPrefix(wholeCommand(l), "ledgermedic ") {
			t.Errorf("piped line is %d columns (want at most %d): %q", w, pipedWidth, l)
		}
	}
	// Worst first: the severity words of the findings never get less serious... then more.
	rank := map[string]int{"ERROR": 0, "WARNING": 1, "INFO": 2}
	last := 0
	for _, l := range lines {
		word, _, _ := strings.Cut(l, " ")
		if r, ok := rank[word]; ok {
			if r < last {
				t.Errorf("finding %q after a less serious one", l)
			}
			last = r
		}
	}
	checkCommandsWhole(t, all, lines)
	for _, args := range [][]string{{"check", "--coverage"}, {"check", "-o", "wide"}} {
		out, _, _ := runApp(t, append([]string{"-d", dir}, args...)...)
		if !strings.Contains(out, "firstEntryIndex coverage") {
			t.Errorf("%v: no coverage table", args)
		}
	}
}

// TestCheckHintsDoNotWrapAt80: at 80 columns every hint is one whole line.
func TestCheckHintsDoNotWrapAt80(t *testing.T) {
	dir := faultyFixture(t)
	all := checkFindingsJSON(t, dir)
	out, _, _ := runAppColumns(t, "80", "-d", dir, "check")
	if checkCommandsWhole(t, all, strings.Split(out, "\n")) == 0 {
		t.Fatal("the fixture's check suggested no command")
	}
}

// wholeCommand is a printed line without its indent and "hint:".
func wholeCommand(line string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "hint:"))
}

// checkCommandsWhole: every command a hint suggests (from "ledgermedic " to a
// parenthesis) is one printed line of its own; it returns how many there are.
func checkCommandsWhole(t *testing.T, fs []report.Finding, lines []string) int {
	t.Helper()
	printed := map[string]bool{}
	for _, l := range lines {
		printed[wholeCommand(l)] = true
	}
	n := 0
	for _, f := range fs {
		i := strings.Index(f.Hint, "ledgermedic ")
		if i < 0 {
			continue
		}
		cmd := f.Hint[i:]
		if j := strings.Index(cmd, " ("); j >= 0 {
			cmd = cmd[:j]
		}
		n++
		if !printed[cmd] && !printed[f.Hint] {
			t.Errorf("the command of hint %q is not printed whole on a line of its own", f.Hint)
		}
	}
	return n
}

// TestCheckSeverityFilters: --severity hides less serious findings from the
// output (text and JSON) and not from the exit code.
func TestCheckSeverityFilters(t *testing.T) {
	// Only warnings: an orphan ledger pair.
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 3, OrphanLedger: true})
	all := checkFindingsJSON(t, dir)
	sev := map[report.Severity]int{}
	for _, f := range all {
		sev[f.Severity]++
	}
	if sev[report.SeverityError] != 0 || sev[report.SeverityWarning] == 0 {
		t.Fatalf("fixture findings by severity: %v, want warnings and no errors", sev)
	}
	out, errOut, code := runApp(t, "-d", dir, "check", "--severity", "error")
	if code != 1 {
		t.Errorf("check --severity error with warnings: exit %d, want 1 (the exit code counts every finding)\n%s", code, errOut)
	}
	if strings.Contains(out, "WARNING") || strings.Contains(out, "INFO ") || !strings.Contains(out, "Findings (0)") {
		t.Errorf("check --severity error printed less serious findings:\n%s", out)
	}
	if !strings.Contains(out, "not shown (--severity error)") {
		t.Errorf("check --severity error does not say what it hid:\n%s", out)
	}
	jout, _, code := runApp(t, "-d", dir, "check", "--severity", "warning", "-o", "json")
	var doc struct {
		Findings []report.Finding `json:"findings"`
		ExitCode int              `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(jout), &doc); err != nil {
		t.Fatal(err)
	}
	if code != 1 || doc.ExitCode != 1 || len(doc.Findings) != sev[report.SeverityWarning] {
		t.Errorf("--severity warning -o json: exit %d, exit_code %d, %d findings; want 1, 1, %d",
			code, doc.ExitCode, len(doc.Findings), sev[report.SeverityWarning])
	}
	for _, f := range doc.Findings {
		if f.Severity == report.SeverityInfo {
			t.Errorf("--severity warning kept %s", f.Kind)
		}
	}
	if _, errOut, code := runApp(t, "-d", dir, "check", "--severity", "fatal"); code != 2 || !strings.Contains(errOut, "want error, warning or info") {
		t.Errorf("--severity fatal: exit %d, %s", code, errOut)
	}
}

// TestCheckLimitListsTheFirstOfEachKind: the table lists at most --limit
// findings of each kind (default 20) and says how many it left out; the summary
// and the exit code count them all; -o json lists all unless --limit is given.
func TestCheckLimitListsTheFirstOfEachKind(t *testing.T) {
	dir, _ := testutil.Fixture(t, everyFaultFixture)
	all := checkFindingsJSON(t, dir)
	perKind := map[string]int{}
	for _, f := range all {
		perKind[f.Kind]++
	}
	if perKind[inspect.KindFirstEntryIndexMissing] <= defaultLimit {
		t.Fatalf("the fixture has %d %s findings, want more than %d", perKind[inspect.KindFirstEntryIndexMissing],
			inspect.KindFirstEntryIndexMissing, defaultLimit)
	}
	for _, limit := range []int{defaultLimit, 2} {
		args := []string{"-d", dir, "check", "-o", "wide"}
		if limit != defaultLimit {
			args = append(args, "--limit", strconv.Itoa(limit))
		}
		out, errOut, code := runApp(t, args...)
		if code != 1 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		listed, left := 0, 0
		for kind, n := range perKind {
			got := strings.Count(out, "| "+kind+" ") - 1 // once in the summary
			if want := min(n, limit); got != want {
				t.Errorf("--limit %d: %d %s findings listed, want %d", limit, got, kind, want)
			}
			listed += min(n, limit)
			left += n - min(n, limit)
			if !strings.Contains(out, "| "+kind+" ") || !strings.Contains(out, "| "+strconv.Itoa(n)+" ") {
				t.Errorf("--limit %d: the summary does not count %d %s", limit, n, kind)
			}
		}
		if want := fmt.Sprintf("%d findings not listed: at most %d of each kind", left, limit); !strings.Contains(out, want) {
			t.Errorf("--limit %d: no note %q:\n%s", limit, want, out)
		}
		if want := fmt.Sprintf("Findings (%d)", listed); !strings.Contains(out, want) {
			t.Errorf("--limit %d: no %q", limit, want)
		}
	}
	var doc struct {
		Findings  []report.Finding `json:"findings"`
		NotListed map[string]int   `json:"findings_not_listed"`
	}
	out, _, _ := runApp(t, "-d", dir, "check", "-o", "json", "--limit", "1")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings) != len(perKind) || doc.NotListed[inspect.KindFirstEntryIndexMissing] != perKind[inspect.KindFirstEntryIndexMissing]-1 {
		t.Errorf("-o json --limit 1: %d findings, not listed %v; want %d, one of each kind", len(doc.Findings), doc.NotListed, len(perKind))
	}
	if n := len(checkFindingsJSON(t, dir)); n != len(all) {
		t.Errorf("-o json without --limit lists %d of %d findings", n, len(all))
	}
}
