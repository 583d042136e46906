package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// propRow is a typed row with every kind of field a feature's row has.
type propRow struct {
	Name   string                 `json:"name" table:"NAME"`
	Count  int                    `json:"count" table:"COUNT"`
	OK     bool                   `json:"ok" table:"OK"`
	First  *int64                 `json:"first,omitempty" table:"FIRST"`
	At     Time                   `json:"at,omitzero" table:"AT"`
	Props  KVs                    `json:"props,omitempty" table:"PROPS"`
	Hash   []byte                 `json:"hash,omitempty" table:"HASH"`
	Ratio  float64                `json:"ratio"`
	Tags   []string               `json:"tags,omitempty" table:"TAGS"`
	ByKind map[string]int         `json:"by_kind,omitempty"`
	Nested *struct{ A, B string } `json:"nested,omitempty"`
	Shown  string                 `json:"-" table:"SHOWN"`
	Error  string                 `json:"error,omitempty" table:"ERROR"`
}

// pieces of the random strings: HTML characters the JSON escapes, quotes,
// backslashes, newlines, control characters, wide and invalid UTF-8, U+2028.
var pieces = []string{"a", "topic", "persistent://t/n/x", "<", ">", "&", `"`, `\`, "\n", "\t", "\x01", "é", "中文",
	"\u2028", "\xff", "🙂", " ", "ledgermedic -d /x check", "-", "/", "=", ","}

func randString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(5) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randRow(r *rand.Rand) propRow {
	p := propRow{Name: randString(r), Count: r.IntN(1000) - 10, OK: r.IntN(2) == 0, Ratio: float64(r.IntN(1000)) / 7,
		Shown: randString(r), Error: randString(r)}
	if r.IntN(2) == 0 {
		p.First = Ptr(r.Int64N(1 << 40))
	}
	if r.IntN(2) == 0 {
		p.At = Millis(1718000000000 + r.Int64N(1e9))
	}
	for range r.IntN(3) {
		p.Props = append(p.Props, KV{randString(r), randString(r)})
	}
	if r.IntN(3) == 0 {
		p.Hash = []byte(randString(r))
	}
	for range r.IntN(3) {
		p.Tags = append(p.Tags, randString(r))
	}
	if r.IntN(3) == 0 {
		p.ByKind = map[string]int{randString(r): 1, randString(r): 2}
	}
	if r.IntN(3) == 0 {
		p.Nested = &struct{ A, B string }{randString(r), randString(r)}
	}
	return p
}

func randCell(r *rand.Rand) any {
	switch r.IntN(10) {
	case 0:
		return nil
	case 1:
		return ""
	case 2:
		return r.IntN(100)
	case 3:
		return r.Int64N(1 << 50)
	case 4:
		return r.IntN(2) == 0
	case 5:
		return []byte(randString(r))
	case 6:
		return stringer{}
	case 7:
		return float64(r.IntN(100)) / 3
	case 8:
		return errors.New(randString(r))
	}
	return randString(r)
}

func randFinding(r *rand.Rand) Finding {
	sevs := []Severity{SeverityError, SeverityWarning, SeverityInfo}
	f := Finding{Kind: fmt.Sprintf("kind-%d", r.IntN(4)), Severity: sevs[r.IntN(3)], Location: randString(r),
		Message: randString(r), Hint: randString(r), Topic: randString(r)}
	if r.IntN(2) == 0 {
		f.LedgerID = Int64(r.Int64N(1000))
	}
	return f
}

// randRows is how many rows a random table has: mostly a few, some none, some
// more than a page.
func randRows(r *rand.Rand) int {
	switch r.IntN(10) {
	case 0:
		return 0
	case 1:
		return pageRows + 1 + r.IntN(pageRows/2)
	}
	return 1 + r.IntN(6)
}

// docPair is one random document twice: every row in memory, and the same
// rows streamed (tables by Stream and StreamCells, findings by a FindingStream).
type docPair struct {
	mem, stream *Document
	big         bool // a streamed table or the findings have more than a page
}

func randDocPair(r *rand.Rand) docPair {
	var p docPair
	p.mem, p.stream = &Document{}, &Document{}
	for i := range r.IntN(4) {
		name, title := fmt.Sprintf("t%d%s", i, randString(r)), randString(r)
		n := randRows(r)
		p.big = p.big || n > pageRows
		switch r.IntN(3) {
		case 0: // typed rows
			rows := make([]propRow, n)
			for j := range rows {
				rows[j] = randRow(r)
			}
			mem := Rows(name, title, rows)
			st := Stream(name, title, func(yield func(propRow) error) error {
				for _, row := range rows {
					if err := yield(row); err != nil {
						return err
					}
				}
				return nil
			})
			if r.IntN(3) == 0 {
				mem.DropColumn("HASH")
				st.DropColumn("HASH")
			}
			p.mem.Add(mem)
			p.stream.Add(st)
		case 1: // cells
			var cols []string
			for c := range 1 + r.IntN(4) {
				cols = append(cols, fmt.Sprintf("COL %d%s", c, randString(r)), fmt.Sprintf("col%d%s", c, randString(r)))
			}
			rows := make([][]any, n)
			for j := range rows {
				for range len(cols) / 2 {
					rows[j] = append(rows[j], randCell(r))
				}
			}
			mem := NewTable(name, title, cols...)
			for _, row := range rows {
				mem.Add(row...)
			}
			st := NewTable(name, title, cols...).StreamCells(func(yield func(...any) error) error {
				for _, row := range rows {
					if err := yield(row...); err != nil {
						return err
					}
				}
				return nil
			})
			if len(cols) > 2 && r.IntN(2) == 0 {
				mem.DropColumn(cols[0])
				st.DropColumn(cols[0])
			}
			p.mem.Add(mem)
			p.stream.Add(st)
		default: // a Fields table: one object, in memory either way
			row := randRow(r)
			f := Fields(name, title, &row)
			p.mem.Add(f)
			p.stream.Add(f)
		}
	}
	switch r.IntN(4) {
	case 0: // no findings
	case 1:
		p.mem.Findings = []Finding{}
		p.stream.FindingStream = &FindingStream{}
	default:
		fs := make([]Finding, randRows(r))
		p.big = p.big || len(fs) > pageRows
		for i := range fs {
			fs[i] = randFinding(r)
		}
		SortFindings(fs)
		p.mem.Findings = fs
		s := StreamOf(fs)
		p.stream.FindingStream = &s
	}
	if r.IntN(2) == 0 {
		extra := map[string]any{"exit_code": r.IntN(3), randString(r): randString(r),
			"not_listed": map[string]int{randString(r): r.IntN(9)}}
		if r.IntN(2) == 0 {
			extra["none"] = nil
		}
		p.mem.Extra, p.stream.Extra = extra, extra
	}
	if r.IntN(3) > 0 {
		for range r.IntN(3) {
			p.mem.Notes = append(p.mem.Notes, randString(r))
		}
		p.stream.Notes = p.mem.Notes
	}
	p.mem.FindingsFirst = r.IntN(2) == 0
	p.mem.FindingsAfter = r.IntN(3)
	p.stream.FindingsFirst, p.stream.FindingsAfter = p.mem.FindingsFirst, p.mem.FindingsAfter
	return p
}

// wholeJSON is how printJSON wrote a document before streaming, kept as the
// reference the streamed writer must match byte for byte: one ordered object
// of every table's rows, encoded at once by a json.Encoder.
func wholeJSON(d *Document) ([]byte, error) {
	var doc orderedObject
	for _, t := range d.Tables {
		switch {
		case t.object != nil:
			doc.set(t.Name, t.object)
		case t.items != nil:
			doc.set(t.Name, t.items)
		default:
			rows := make([]any, 0, len(t.Rows))
			for _, r := range t.Rows {
				rows = append(rows, rowObject(t, r))
			}
			doc.set(t.Name, rows)
		}
	}
	if d.Findings != nil {
		doc.set("findings", d.Findings)
	}
	for _, k := range sortedKeys(d.Extra) {
		doc.set(k, d.Extra[k])
	}
	notes := d.Notes
	if notes == nil {
		notes = []string{}
	}
	doc.set("notes", notes)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	err := enc.Encode(doc)
	return buf.Bytes(), err
}

func printed(t *testing.T, d *Document, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := PrintWith(&buf, d, o); err != nil {
		t.Fatalf("%s: %v", o.Format, err)
	}
	return buf.Bytes()
}

// A streamed document prints the bytes its in-memory twin prints: -o json
// byte for byte what one json.Encoder writes for the whole document, -o jsonl
// line for line, and tables alike while no stream has more than a page.
func TestStreamPrintsAsInMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for i := range 250 {
		p := randDocPair(r)
		want, err := wholeJSON(p.mem)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(want) {
			t.Fatalf("doc %d: the reference is not JSON", i)
		}
		for name, d := range map[string]*Document{"in memory": p.mem, "streamed": p.stream} {
			if got := printed(t, d, Options{Format: FormatJSON}); !bytes.Equal(got, want) {
				t.Fatalf("doc %d %s: -o json differs from one Encoder's output at byte %d:\n%s\nwant\n%s",
					i, name, firstDiff(got, want), got, want)
			}
		}
		if got, want := printed(t, p.stream, Options{Format: FormatJSONL}), printed(t, p.mem, Options{Format: FormatJSONL}); !bytes.Equal(got, want) {
			t.Fatalf("doc %d: -o jsonl differs at byte %d:\n%s\nwant\n%s", i, firstDiff(got, want), got, want)
		}
		if p.big {
			continue
		}
		for _, o := range []Options{{Format: FormatTable}, {Format: FormatTable, Width: 40}, {Format: FormatTable, Width: 100}, {Format: FormatWide}} {
			if got, want := printed(t, p.stream, o), printed(t, p.mem, o); !bytes.Equal(got, want) {
				t.Fatalf("doc %d: %s width %d differs at byte %d:\n%s\nwant\n%s", i, o.Format, o.Width, firstDiff(got, want), got, want)
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

type numRow struct {
	N int    `json:"n" table:"N"`
	S string `json:"s" table:"S"`
}

// numbered yields rows 0..n-1.
func numbered(n int) func(yield func(numRow) error) error {
	return func(yield func(numRow) error) error {
		for i := range n {
			if err := yield(numRow{N: i, S: strings.Repeat("x", i%7)}); err != nil {
				return err
			}
		}
		return nil
	}
}

// A streamed table of more than a page prints its title once and a table
// with its header per page, every row once, in order; the findings likewise.
func TestStreamTablePages(t *testing.T) {
	const n = 2*pageRows + 17
	fs := make([]Finding, n)
	for i := range fs {
		fs[i] = Finding{Kind: "k", Severity: SeverityWarning, Location: fmt.Sprintf("loc %d", i), Message: "m"}
	}
	s := StreamOf(fs)
	for _, width := range []int{0, 30} { // 30: the findings print as blocks
		d := &Document{FindingStream: &s}
		d.Add(Stream("rows", "Rows", numbered(n)))
		out := string(printed(t, d, Options{Format: FormatTable, Width: width}))
		if c := strings.Count(out, "\nRows\n"); !strings.HasPrefix(out, "Rows\n") || c != 0 {
			t.Errorf("width %d: title printed %d more times", width, c)
		}
		if c := strings.Count(out, "| N "); c != 3 {
			t.Errorf("width %d: %d headers, want one per page (3)", width, c)
		}
		if c := strings.Count(out, fmt.Sprintf("Findings (%d)", n)); c != 1 {
			t.Errorf("width %d: findings title printed %d times", width, c)
		}
		rows := regexpRows(out)
		if len(rows) != n {
			t.Fatalf("width %d: %d rows printed, want %d", width, len(rows), n)
		}
		for i, v := range rows {
			if v != i {
				t.Fatalf("width %d: row %d printed as %d", width, i, v)
			}
		}
		last := -1
		for i := range n {
			j := strings.Index(out, fmt.Sprintf("loc %d ", i))
			if j < 0 {
				j = strings.Index(out, fmt.Sprintf("loc %d\n", i))
			}
			if j <= last {
				t.Fatalf("width %d: finding %d missing or out of order", width, i)
			}
			last = j
		}
		if width == 0 && strings.Count(out, "| SEVERITY ") != 3 {
			t.Errorf("findings: %d table headers, want one per page (3)", strings.Count(out, "| SEVERITY "))
		}
		if width == 30 && (strings.Contains(out, "| SEVERITY ") || !strings.Contains(out, "WARNING k  loc 0")) {
			t.Errorf("findings at width 30 must print as blocks")
		}
	}
	empty := &Document{FindingStream: &FindingStream{}}
	empty.Add(Stream("rows", "Rows", numbered(0)))
	if got := string(printed(t, empty, Options{Format: FormatTable})); got != "Rows\n(none)\n\nFindings (0)\n(none)\n" {
		t.Errorf("empty streams print %q", got)
	}
}

// regexpRows reads the N column of the rows table: "| 12 | xxx |" lines.
func regexpRows(out string) []int {
	var rows []int
	for _, line := range strings.Split(out, "\n") {
		var n int
		if _, err := fmt.Sscanf(line, "| %d |", &n); err == nil {
			rows = append(rows, n)
		}
	}
	return rows
}

// The stream filters give what the slice functions give, and their counts
// (from Counts, without a pass) are what they yield.
func TestFindingStreamFilters(t *testing.T) {
	r := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	for i := range 300 {
		fs := make([]Finding, r.IntN(60))
		for j := range fs {
			fs[j] = randFinding(r)
		}
		SortFindings(fs)
		c := CountFindings(fs)
		if c.Total() != len(fs) || c.Actionable() != Actionable(fs) {
			t.Fatalf("case %d: counts total %d actionable %v, want %d %v", i, c.Total(), c.Actionable(), len(fs), Actionable(fs))
		}
		if got, want := c.SummaryTable(), SummaryTable(fs); !reflect.DeepEqual(got.Rows, want.Rows) || (len(got.Rows) == 0) != (len(fs) == 0) {
			t.Fatalf("case %d: summary %v, want %v", i, got.Rows, want.Rows)
		}
		least := []Severity{SeverityError, SeverityWarning, SeverityInfo}[r.IntN(3)]
		limit := r.IntN(5)
		shown := AtLeast(fs, least)
		listed, left := FirstOfEachKind(shown, limit)
		sShown := StreamOf(fs).AtLeast(least, c)
		sListed, sLeft := sShown.FirstOfEachKind(limit, c.AtLeast(least))
		if sShown.Count != len(shown) || sListed.Count != len(listed) {
			t.Fatalf("case %d: counts %d %d, want %d %d", i, sShown.Count, sListed.Count, len(shown), len(listed))
		}
		if !reflect.DeepEqual(sLeft, left) {
			t.Fatalf("case %d: left out %v, want %v", i, sLeft, left)
		}
		var got []Finding
		if err := sListed.each(func(f Finding) error { got = append(got, f); return nil }); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(got) != len(listed) || len(got) > 0 && !reflect.DeepEqual(got, listed) {
			t.Fatalf("case %d: streamed %v, want %v", i, got, listed)
		}
		// Each pass starts afresh: a second print lists the same.
		n := 0
		if err := sListed.each(func(Finding) error { n++; return nil }); err != nil || n != len(listed) {
			t.Fatalf("case %d: second pass %d findings (%v), want %d", i, n, err, len(listed))
		}
	}
	up := StreamOf([]Finding{{Kind: "k", Hint: "h"}}).Map(func(f Finding) Finding { f.Hint += "!"; return f })
	if err := up.each(func(f Finding) error {
		if f.Hint != "h!" {
			t.Errorf("Map: hint %q", f.Hint)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A stream that fails, yields another number of findings than its count, or
// a row of the wrong arity fails the print, in every format, and what was
// printed before reaches the writer.
func TestStreamErrors(t *testing.T) {
	boom := errors.New("spill file unreadable")
	failing := func(yield func(numRow) error) error {
		if err := yield(numRow{N: 1}); err != nil {
			return err
		}
		return boom
	}
	short := FindingStream{Count: 3, Each: StreamOf([]Finding{{Kind: "a"}}).Each}
	long := FindingStream{Count: 0, Each: StreamOf([]Finding{{Kind: "a"}}).Each}
	docs := map[string]*Document{
		"table stream fails": {Tables: []*Table{Stream("rows", "Rows", failing)}},
		"short findings":     {FindingStream: &short},
		"long findings":      {FindingStream: &long},
		"arity":              {Tables: []*Table{NewTable("c", "C", "A", "a").StreamCells(func(y func(...any) error) error { return y(1, 2) })}},
		"both":               {Findings: []Finding{{Kind: "a"}}, FindingStream: &FindingStream{}},
	}
	for name, d := range docs {
		for _, f := range Formats {
			var buf bytes.Buffer
			err := PrintWith(&buf, d, Options{Format: f})
			if err == nil {
				t.Errorf("%s -o %s: no error", name, f)
				continue
			}
			if name == "table stream fails" {
				if !errors.Is(err, boom) {
					t.Errorf("%s -o %s: %v, want the stream's error", name, f, err)
				}
				if f != FormatTable && f != FormatWide && !strings.Contains(buf.String(), `"n": 1`) && !strings.Contains(buf.String(), `"n":1`) {
					t.Errorf("%s -o %s: the row before the failure was not flushed: %q", name, f, buf.String())
				}
			}
		}
	}
}

// countingWriter fails every write after the first fail bytes.
type countingWriter struct{ n, fail int }

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.n+len(p) > c.fail {
		return 0, errors.New("disk full")
	}
	c.n += len(p)
	return len(p), nil
}

// A writer that fails stops the stream: the printer does not read a million
// rows into a closed pipe.
func TestStreamStopsOnWriteError(t *testing.T) {
	const n = 1_000_000
	for _, f := range Formats {
		pulled := 0
		d := &Document{}
		d.Add(Stream("rows", "Rows", func(yield func(numRow) error) error {
			return numbered(n)(func(r numRow) error { pulled++; return yield(r) })
		}))
		err := PrintWith(&countingWriter{fail: 100 << 10}, d, Options{Format: f})
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("-o %s: %v, want the write error", f, err)
		}
		if pulled > 20*pageRows {
			t.Errorf("-o %s: %d rows pulled after the writer failed", f, pulled)
		}
	}
}
