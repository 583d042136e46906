package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

type stringer struct{}

func (stringer) String() string { return "str" }

func sampleDoc() *Document {
	tb := NewTable("topics", "Topics", "TOPIC", "topic", "LEDGERS", "ledgers", "SIZE", "size",
		"INDEXED", "indexed", "HASH", "hash", "NOTE", "note")
	tb.Add("persistent://public/default/orders", 3, int64(1024), true, []byte{0xde, 0xad}, nil)
	tb.Add("persistent://acme/billing/inv", int32(0), uint64(7), false, []byte(nil), stringer{})
	tb.Add("multi", 1, 2, true, []byte{1}, "line1\nline2")
	doc := &Document{}
	doc.Add(tb)
	doc.Findings = []Finding{
		{Kind: "ledger-missing", Severity: SeverityError, Location: "/managed-ledgers/a ledger 5", Message: "gone", Hint: "restore", LedgerID: Int64(5)},
		{Kind: "no-first-entry-index", Severity: SeverityInfo, Location: "topic x", Message: "3 ledgers"},
	}
	doc.Note("opened read-only")
	return doc
}

func TestPrintTextGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Print(&buf, sampleDoc(), false); err != nil {
		t.Fatal(err)
	}
	golden(t, "doc.txt", buf.Bytes())
	if strings.Contains(buf.String(), "line1\nline2") {
		t.Error("a newline inside a cell must not break the row")
	}
}

func TestPrintJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Print(&buf, sampleDoc(), true); err != nil {
		t.Fatal(err)
	}
	golden(t, "doc.json", buf.Bytes())
	var parsed map[string]any
	if err := json.Unmarshal(buf.Bytes(), &parsed); err != nil {
		t.Fatalf("output is not one JSON document: %v", err)
	}
	rows := parsed["topics"].([]any)
	first := rows[0].(map[string]any)
	if first["hash"] != "dead" || first["ledgers"] != float64(3) || first["note"] != nil {
		t.Errorf("row 0 = %v", first)
	}
	// Key order follows the columns, so diffs of JSON output stay readable.
	if i, j := strings.Index(buf.String(), `"topic"`), strings.Index(buf.String(), `"ledgers"`); i < 0 || j < i {
		t.Errorf("column order not kept: topic at %d, ledgers at %d", i, j)
	}
}

func TestEmptyTableSaysNone(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderTable(&buf, NewTable("x", "Title", "A", "a")); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "Title\n(none)\n" {
		t.Errorf("got %q", buf.String())
	}
}

func TestAddWrongArityPanicsAtDevelopmentTime(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a row with the wrong number of values must be caught")
		}
	}()
	NewTable("x", "", "A", "a").Add(1, 2)
}

func TestActionableAndSort(t *testing.T) {
	info := Finding{Kind: "b", Severity: SeverityInfo, Location: "1"}
	warn := Finding{Kind: "c", Severity: SeverityWarning, Location: "1"}
	errA := Finding{Kind: "a", Severity: SeverityError, Location: "2"}
	errB := Finding{Kind: "a", Severity: SeverityError, Location: "1"}
	if Actionable([]Finding{info}) {
		t.Error("info alone is not actionable")
	}
	if !Actionable([]Finding{info, warn}) {
		t.Error("a warning is actionable")
	}
	fs := []Finding{info, warn, errA, errB}
	SortFindings(fs)
	want := []Finding{errB, errA, warn, info}
	for i := range want {
		if fs[i].Location != want[i].Location || fs[i].Kind != want[i].Kind {
			t.Fatalf("sorted[%d] = %+v, want %+v", i, fs[i], want[i])
		}
	}
	sum := SummaryTable(fs)
	if len(sum.Rows) != 3 || sum.Rows[0][0] != "a" || sum.Rows[0][2] != 2 || sum.Rows[1][1] != "warning" || sum.Rows[2][1] != "info" {
		t.Errorf("summary rows = %v, want error, warning, info in that order", sum.Rows)
	}
}

func TestCodeOf(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitClean},
		{BadInputf("x %d", 1), ExitBadInput},
		{fmt.Errorf("wrapped: %w", CannotOpen(errors.New("disk"))), ExitCannotOpen},
		{ErrFindings, ExitFindings},
		{errors.New("plain"), 7},
	}
	for _, c := range cases {
		if got := CodeOf(c.err, 7); got != c.want {
			t.Errorf("CodeOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if BadInputf("bad %s", "thing").Error() != "bad thing" {
		t.Error("BadInput must keep the message")
	}
}

func TestProgressBarOnlyWhenEnabled(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false)
	p.Start("scan", 10)
	p.Add(5)
	p.Done()
	if buf.Len() != 0 {
		t.Errorf("disabled progress wrote %q", buf.String())
	}
	clock := time.Unix(0, 0)
	b := &bar{w: &buf, now: func() time.Time { return clock }}
	b.Start("scan", 10)
	clock = clock.Add(time.Second)
	b.Add(5)
	b.Done()
	out := buf.String()
	for _, want := range []string{"scan 5/10", "50.0%", "5/s", "ETA 1s"} {
		if !strings.Contains(out, want) {
			t.Errorf("bar output %q lacks %q", out, want)
		}
	}
}

// failWriter fails every write, like stdout on a closed pipe or a full disk.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("write failed") }

// Every line Print writes can fail, titles and notes included: the failure
// must reach the caller instead of being dropped.
func TestPrintReportsWriteErrors(t *testing.T) {
	docs := map[string]*Document{
		"notes only":  {Notes: []string{"opened read-only"}},
		"empty table": {Tables: []*Table{NewTable("x", "Title", "A", "a")}},
		"full":        sampleDoc(),
		"no findings": {Findings: []Finding{}},
	}
	for name, d := range docs {
		for _, asJSON := range []bool{false, true} {
			if err := Print(failWriter{}, d, asJSON); err == nil {
				t.Errorf("%s (json %v): Print to a failing writer returned nil", name, asJSON)
			}
		}
	}
}

// The ETA keeps fractions of a second until it is rounded: 3 left at 2/s is
// 1.5s, shown as 2s (truncating first would show 1s).
func TestProgressETARounds(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	b := &bar{w: &buf, now: func() time.Time { return clock }}
	b.Start("scan", 5)
	clock = clock.Add(time.Second)
	b.Add(2)
	if out := buf.String(); !strings.Contains(out, "ETA 2s") {
		t.Errorf("bar output %q, want ETA 2s", out)
	}
}
