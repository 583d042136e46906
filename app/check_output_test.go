package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"

	"github.com/ledgermedic/ledgermedic/fixtures"
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

// TestCheckOutputPutsFindingsFirst: piped (no terminal, no $COLUMNS) check
// prints the findings first, worst first, fitted to 100 columns, hints whole
// on their own lines, and no coverage table unless asked.
func TestCheckOutputPutsFindingsFirst(t *testing.T) {
	dir := faultyFixture(t)
	all := checkFindingsJSON(t, dir)
	out, errOut, code := runApp(t, "-d", dir, "check")
	if code != 1 {
		t.Fatalf("check: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "Findings (") {
		t.Errorf("check's first line is %q, want the findings", lines[0])
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
