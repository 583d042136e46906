package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/testutil/golden"
)

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
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
	checkGolden(t, "doc.txt", buf.Bytes())
	if strings.Contains(buf.String(), "line1\nline2") {
		t.Error("a newline inside a cell must not break the row")
	}
}

func TestPrintJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Print(&buf, sampleDoc(), true); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "doc.json", buf.Bytes())
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
	// Stable: findings that compare equal keep their order.
	same := []Finding{
		{Kind: "k", Severity: SeverityWarning, Location: "x", Message: "first"},
		{Kind: "a", Severity: SeverityError, Location: "x", Message: "error"},
		{Kind: "k", Severity: SeverityWarning, Location: "x", Message: "second"},
		{Kind: "k", Severity: SeverityWarning, Location: "x", Message: "third"},
	}
	SortFindings(same)
	for i, m := range []string{"error", "first", "second", "third"} {
		if same[i].Message != m {
			t.Fatalf("stable sort: [%d] = %q, want %q", i, same[i].Message, m)
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

// typedRow is a row of a typed table: table columns from `table` tags, JSON
// from `json` tags.
type typedRow struct {
	Topic   string  `json:"topic" table:"TOPIC"`
	Ledgers int     `json:"ledgers" table:"LEDGERS"`
	Indexed bool    `json:"indexed" table:"INDEXED"`
	First   *int64  `json:"first_index,omitempty" table:"FIRST"`
	Created Time    `json:"created,omitzero" table:"CREATED"`
	MS      int64   `json:"created_ms,omitempty"`
	Props   KVs     `json:"properties,omitempty" table:"PROPS"`
	Error   string  `json:"error,omitempty" table:"ERROR"`
	Shown   string  `json:"-" table:"SHOWN"`
	Ratio   float64 `json:"ratio"`
}

func typedDoc() *Document {
	rows := []typedRow{
		{Topic: "a", Ledgers: 2, Indexed: true, First: Ptr(int64(0)), Created: Millis(1718000000123), MS: 1718000000123,
			Props: KVs{{"z", "1"}, {"a", "2"}}, Shown: "0/2", Ratio: 0.5},
		{Topic: "b", Error: "broken"},
	}
	doc := &Document{Extra: map[string]any{"dry_run": true}}
	doc.Add(Rows("topics", "Topics", rows))
	return doc
}

func TestTypedRowsGolden(t *testing.T) {
	for _, f := range []Format{FormatTable, FormatJSON, FormatJSONL} {
		var buf bytes.Buffer
		if err := PrintWith(&buf, typedDoc(), Options{Format: f}); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "typed."+string(f), buf.Bytes())
	}
}

func TestTypedRowsJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := Print(&buf, typedDoc(), true); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Topics []map[string]any `json:"topics"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	a, b := doc.Topics[0], doc.Topics[1]
	if a["ledgers"] != float64(2) || a["indexed"] != true || a["first_index"] != float64(0) ||
		a["created"] != "2024-06-10T06:13:20.123Z" || a["created_ms"] != float64(1718000000123) {
		t.Errorf("row a = %v", a)
	}
	if _, ok := a["SHOWN"]; ok {
		t.Errorf("a table-only field reached the JSON: %v", a)
	}
	// Absent is absent: no "", no null, no "-".
	for _, k := range []string{"first_index", "created", "created_ms", "properties"} {
		if v, ok := b[k]; ok {
			t.Errorf("row b has %s = %v, want it left out", k, v)
		}
	}
	if !strings.Contains(buf.String(), `"properties": {
        "z": "1",
        "a": "2"
      }`) {
		t.Errorf("properties not an object in stored order:\n%s", buf.String())
	}
}

func TestTypedRowsCells(t *testing.T) {
	tb := typedDoc().Tables[0]
	want := []string{"TOPIC", "LEDGERS", "INDEXED", "FIRST", "CREATED", "PROPS", "ERROR", "SHOWN"}
	if got := headersOf(tb); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("headers %v, want %v", got, want)
	}
	cells := cellsOf(tb)
	if strings.Join(cells[0], "|") != "a|2|yes|0|2024-06-10T06:13:20.123Z|z=1,a=2|-|0/2" {
		t.Errorf("row a cells %q", cells[0])
	}
	if strings.Join(cells[1], "|") != "b|0|no|-|-|-|broken|-" {
		t.Errorf("row b cells %q", cells[1])
	}
	if tb.Rows[0][3] != int64(0) || tb.Rows[1][3] != nil {
		t.Errorf("pointer cells %v %v, want the value and nil", tb.Rows[0][3], tb.Rows[1][3])
	}
	defer func() {
		if recover() == nil {
			t.Error("Add on a typed table must panic")
		}
	}()
	tb.Add("x")
}

func TestTimeFormat(t *testing.T) {
	if s := Millis(0).String(); s != "" {
		t.Errorf("Millis(0) = %q, want the zero Time", s)
	}
	at := At(time.Date(2026, 11, 29, 13, 15, 11, 459774119, time.FixedZone("x", 3600)))
	if s := at.String(); s != "2026-11-29T12:15:11.459Z" {
		t.Errorf("At = %q, want UTC with milliseconds", s)
	}
}

func TestFieldsTable(t *testing.T) {
	type run struct {
		ID      string `json:"run" table:"run"`
		Items   int    `json:"items" table:"items"`
		UndoOf  string `json:"undo_of,omitempty" table:"undo of"`
		Created Time   `json:"created,omitzero" table:"created"`
	}
	tb := Fields("run", "Run", run{ID: "r1", Items: 3})
	tb.AddField("extra", "human only")
	var buf bytes.Buffer
	doc := &Document{Tables: []*Table{tb}}
	if err := Print(&buf, doc, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"run": {
    "run": "r1",
    "items": 3
  }`) {
		t.Errorf("JSON is not the object:\n%s", buf.String())
	}
	cells := cellsOf(tb)
	if len(cells) != 3 || strings.Join(cells[1], "=") != "items=3" || cells[2][0] != "extra" {
		t.Errorf("rows %q, want run, items (absent ones left out) and the extra row", cells)
	}
}
