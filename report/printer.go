package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Document is everything one command prints: tables in order, findings, and notes.
type Document struct {
	Tables   []*Table
	Findings []Finding // nil when the command does not produce findings
	// FindingStream, when set, is the findings instead of Findings (which then
	// stays empty): produced at print time, for more findings than a command
	// should hold.
	FindingStream *FindingStream
	Notes         []string // short lines the user must read (sandbox copies, dry-run, ...)
	// Extra holds command-specific top-level JSON values (e.g. "exit_code"); not printed as a table.
	Extra map[string]any
	// FindingsFirst prints the findings before the tables (check: what is wrong
	// comes before what was counted), after the first FindingsAfter of them
	// (check: its summary). JSON keeps its order.
	FindingsFirst bool
	FindingsAfter int
}

// Add appends tables to the document.
func (d *Document) Add(ts ...*Table) { d.Tables = append(d.Tables, ts...) }

// Note appends a formatted note.
func (d *Document) Note(format string, args ...any) {
	d.Notes = append(d.Notes, fmt.Sprintf(format, args...))
}

// Format is how a document is printed (-o).
type Format string

// The output formats.
const (
	FormatTable Format = "table" // ASCII tables, cells wrapped to fit Options.Width
	FormatWide  Format = "wide"  // ASCII tables, every cell on one line
	FormatJSON  Format = "json"  // one JSON document
	FormatJSONL Format = "jsonl" // one JSON object per row, finding and note
)

// Formats lists the formats in help order.
var Formats = []Format{FormatTable, FormatWide, FormatJSON, FormatJSONL}

// ParseFormat checks a -o value.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("output format %q: want table, wide, json or jsonl", s)
}

// Options say how Print renders a document.
type Options struct {
	Format Format
	// Width is the terminal width tables, titles and notes must fit in
	// (FormatTable); 0 means no limit.
	Width int
}

// Print renders the document as JSON (one object) or as ASCII tables.
func Print(w io.Writer, d *Document, asJSON bool) error {
	if asJSON {
		return PrintWith(w, d, Options{Format: FormatJSON})
	}
	return PrintWith(w, d, Options{Format: FormatTable})
}

// outputBuffer is how much output PrintWith gathers before it writes: a
// million rows are not a million writes.
const outputBuffer = 64 << 10

// SourceError is a failure of what a streamed document reads as it prints
// (a store, a file on disk), not of the output: PrintWith returns it when the
// writer did not fail.
type SourceError struct{ Err error }

func (e *SourceError) Error() string { return e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// PrintWith renders the document in the format o names. Streamed tables and
// findings are produced as they print, so the output of a failing stream or
// writer may stop short; the error says why (a *SourceError when the stream
// failed).
func PrintWith(w io.Writer, d *Document, o Options) (err error) {
	fs, hasFindings, err := d.findings()
	if err != nil {
		return err
	}
	out := &stickyWriter{w: w}
	defer func() {
		if err != nil && out.err == nil && !errors.As(err, new(*SourceError)) {
			err = &SourceError{Err: err}
		}
	}()
	bw := bufio.NewWriterSize(out, outputBuffer)
	switch o.Format {
	case FormatJSON:
		err = printJSON(bw, d, fs, hasFindings)
	case FormatJSONL:
		err = printJSONL(bw, d, fs, hasFindings)
	case FormatWide:
		err = printText(bw, d, fs, hasFindings, 0)
	default:
		err = printText(bw, d, fs, hasFindings, o.Width)
	}
	// Flushed on an error too: what was printed before it is the user's.
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// findings is the document's findings as one stream, and whether it has a
// list of findings at all.
func (d *Document) findings() (FindingStream, bool, error) {
	switch {
	case d.FindingStream != nil && len(d.Findings) > 0:
		return FindingStream{}, false, fmt.Errorf("report: a document with both Findings (%d) and a FindingStream", len(d.Findings))
	case d.FindingStream != nil:
		return *d.FindingStream, true, nil
	case d.Findings != nil:
		return StreamOf(d.Findings), true, nil
	}
	return FindingStream{}, false, nil
}

// findingsPage is how many findings the human output lays out at a time: all
// of a slice (one table, as wide as its widest cell), pageRows of a stream.
func (d *Document) findingsPage() int {
	if d.FindingStream != nil {
		return pageRows
	}
	return max(len(d.Findings), 1)
}

// stickyWriter remembers the first write error, so the many small writes of
// a text document need no check each and none is lost.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

func printText(out io.Writer, d *Document, fs FindingStream, hasFindings bool, width int) error {
	w := &stickyWriter{w: out}
	printed := false
	section := func(render func() error) error {
		if printed {
			fmt.Fprintln(w)
		}
		printed = true
		return render()
	}
	findings := func() error { return renderFindings(w, fs, d.findingsPage(), width) }
	for i, t := range d.Tables {
		if hasFindings && d.FindingsFirst && i == d.FindingsAfter {
			if err := section(findings); err != nil {
				return err
			}
		}
		if err := section(func() error { return RenderTableWidth(w, t, width) }); err != nil {
			return err
		}
	}
	if hasFindings && d.FindingsFirst && d.FindingsAfter >= len(d.Tables) {
		if err := section(findings); err != nil {
			return err
		}
	}
	if hasFindings && !d.FindingsFirst {
		if err := section(findings); err != nil {
			return err
		}
	}
	for _, n := range d.Notes {
		for _, line := range wrapWords("note: "+n, width, "      ") {
			fmt.Fprintln(w, line)
		}
	}
	return w.err
}

// renderFindings prints the title and the findings in pages of size: each
// page a findings table, or a list of blocks when its table would have to wrap
// at this width.
func renderFindings(w *stickyWriter, fs FindingStream, size, width int) error {
	if err := renderTitle(w, fmt.Sprintf("Findings (%d)", fs.Count), width); err != nil {
		return err
	}
	n, err := paged(fs.each, size, func(page []Finding) error {
		t := FindingsTable(page)
		headers, cells := headersOf(t), cellsOf(t)
		if fitsTable(headers, cells, width) {
			return renderGrid(w, t.Name, headers, cells, width)
		}
		renderFindingsList(w, page, width)
		return w.err
	})
	if err == nil && n == 0 {
		_, err = fmt.Fprintln(w, "(none)")
	}
	return err
}

func headersOf(t *Table) []string {
	hs := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		hs[i] = c.Header
	}
	return hs
}

// cellsOf is the human table's cells of a table's Rows.
func cellsOf(t *Table) [][]string { return cellStrings(t.Rows) }

// cellStrings formats rows of values as the human table shows them; newlines
// in a value would read as wrapped cells, so they are escaped.
func cellStrings(rows [][]any) [][]string {
	out := make([][]string, len(rows))
	for j, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = strings.ReplaceAll(Cell(v), "\n", `\n`)
		}
		out[j] = cells
	}
	return out
}

// RenderTable writes one table in the stable ASCII style used by golden files.
func RenderTable(w io.Writer, t *Table) error { return RenderTableWidth(w, t, 0) }

// RenderTableWidth is RenderTable fitted into width columns (0: no limit): the
// widest columns are narrowed and their cells wrapped over several lines, so
// nothing is cut off and no line is wider than the terminal. A streamed table
// prints in pages of pageRows rows, each fitted on its own, under one title.
func RenderTableWidth(w io.Writer, t *Table, width int) error {
	if err := renderTitle(w, t.Title, width); err != nil {
		return err
	}
	size := pageRows
	if t.stream == nil {
		size = max(len(t.Rows), 1) // in memory: one table, as wide as its widest cell
	}
	headers := headersOf(t)
	n, err := paged(t.eachCells, size, func(rows [][]any) error {
		return renderGrid(w, t.Name, headers, cellStrings(rows), width)
	})
	if err == nil && n == 0 {
		_, err = fmt.Fprintln(w, "(none)")
	}
	return err
}

// renderTitle writes a table's title, wrapped to width; nothing for none.
func renderTitle(w io.Writer, title string, width int) error {
	if title == "" {
		return nil
	}
	for _, line := range wrapWords(title, width, "") {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// tablewriter memoizes cell widths in one process-wide LRU cache whose memory
// rose by 1.3 MB between 100,000 and 1,000,000 distinct cells printed (its
// map's churn) and whose lock every cell takes; without it a streamed table's
// heap stays flat and printing is no slower (TestStreamMemoryFlat,
// BenchmarkStreamPrint). report is tablewriter's one user.
func init() { twwidth.SetCacheCapacity(0) }

// renderGrid writes the ASCII table of headers and rows (one page of a table).
func renderGrid(w io.Writer, name string, headers []string, rows [][]string, width int) error {
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	if caps := columnCaps(headers, rows, width); caps != nil {
		headers = wrapHeaders(headers, caps)
		for j := range rows {
			rows[j] = wrapRow(rows[j], caps)
		}
	}
	hs := make([]any, len(headers))
	for i, h := range headers {
		hs[i] = h
	}
	tbl.Header(hs...)
	for _, cells := range rows {
		if err := tbl.Append(cells); err != nil {
			return fmt.Errorf("render table %s: %w", name, err)
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("render table %s: %w", name, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// orderedObject marshals keys in insertion order, so JSON output is stable.
type orderedObject struct {
	keys []string
	vals []any
}

func (o *orderedObject) set(k string, v any) { o.keys = append(o.keys, k); o.vals = append(o.vals, v) }

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, fmt.Errorf("json key %s: %w", k, err)
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// rowObject is one row of a table of cells as a JSON object keyed by column
// keys; empty cells are left out.
func rowObject(t *Table, r []any) orderedObject {
	var o orderedObject
	for i, c := range t.Columns {
		if !absent(r[i]) {
			o.set(c.Key, jsonValue(r[i]))
		}
	}
	return o
}

// printJSON writes the document as one JSON object: each table under its
// name (its rows, [] when none; a Fields table's object), the findings, the
// Extra values in key order, and the notes.
func printJSON(w io.Writer, d *Document, fs FindingStream, hasFindings bool) error {
	j := &jsonWriter{w: w}
	for _, t := range d.Tables {
		err := j.member(t.Name, func() error {
			if t.object != nil {
				return j.value(t.object, 1)
			}
			return j.array(1, t.eachJSON)
		})
		if err != nil {
			return err
		}
	}
	if hasFindings {
		err := j.member("findings", func() error {
			return j.array(1, func(yield func(any) error) error {
				return fs.each(func(f Finding) error { return yield(f) })
			})
		})
		if err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(d.Extra) {
		if err := j.member(k, func() error { return j.value(d.Extra[k], 1) }); err != nil {
			return err
		}
	}
	notes := d.Notes
	if notes == nil {
		notes = []string{}
	}
	if err := j.member("notes", func() error { return j.value(notes, 1) }); err != nil {
		return err
	}
	return j.end()
}

// jsonWriter writes one JSON object member by member and arrays element by
// element, byte for byte what a json.Encoder with SetIndent("", "  ") writes
// for the whole object at once: each value is marshalled alone (json.Marshal:
// HTML-escaped, as the Encoder is) and indented at its depth by json.Indent,
// the Encoder's own indenter.
type jsonWriter struct {
	w       io.Writer
	members int
	buf     bytes.Buffer
}

// indent is the indentation at depth.
func indent(depth int) string { return strings.Repeat("  ", depth) }

// member writes the next key of the object, then its value by value.
func (j *jsonWriter) member(key string, value func() error) error {
	sep := ",\n  "
	if j.members == 0 {
		sep = "{\n  "
	}
	j.members++
	kb, err := json.Marshal(key)
	if err == nil {
		_, err = fmt.Fprintf(j.w, "%s%s: ", sep, kb)
	}
	if err == nil {
		err = value()
	}
	if err != nil {
		return fmt.Errorf("json key %s: %w", key, err)
	}
	return nil
}

// value writes v, nested depth deep.
func (j *jsonWriter) value(v any, depth int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	j.buf.Reset()
	if err := json.Indent(&j.buf, b, indent(depth), "  "); err != nil {
		return err
	}
	_, err = j.w.Write(j.buf.Bytes())
	return err
}

// array writes the values each yields as an array nested depth deep ([] when
// none).
func (j *jsonWriter) array(depth int, each func(yield func(any) error) error) error {
	inner := "\n" + indent(depth+1)
	n := 0
	err := each(func(v any) error {
		sep := ","
		if n == 0 {
			sep = "["
		}
		n++
		if _, err := io.WriteString(j.w, sep+inner); err != nil {
			return err
		}
		return j.value(v, depth+1)
	})
	switch {
	case err != nil:
		return err
	case n == 0:
		_, err = io.WriteString(j.w, "[]")
	default:
		_, err = io.WriteString(j.w, "\n"+indent(depth)+"]")
	}
	return err
}

// end closes the object.
func (j *jsonWriter) end() error {
	end := "\n}\n"
	if j.members == 0 {
		end = "{}\n"
	}
	_, err := io.WriteString(j.w, end)
	return err
}
