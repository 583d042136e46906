package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Document is everything one command prints: tables in order, findings, and notes.
type Document struct {
	Tables   []*Table
	Findings []Finding // nil when the command does not produce findings
	Notes    []string  // short lines the user must read (sandbox copies, dry-run, ...)
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

// PrintWith renders the document in the format o names.
func PrintWith(w io.Writer, d *Document, o Options) error {
	switch o.Format {
	case FormatJSON:
		return printJSON(w, d)
	case FormatJSONL:
		return printJSONL(w, d)
	case FormatWide:
		return printText(w, d, 0)
	default:
		return printText(w, d, o.Width)
	}
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

func printText(out io.Writer, d *Document, width int) error {
	w := &stickyWriter{w: out}
	printed := false
	section := func(render func() error) error {
		if printed {
			fmt.Fprintln(w)
		}
		printed = true
		return render()
	}
	findings := func() error { return renderFindings(w, d.Findings, width) }
	for i, t := range d.Tables {
		if d.Findings != nil && d.FindingsFirst && i == d.FindingsAfter {
			if err := section(findings); err != nil {
				return err
			}
		}
		if err := section(func() error { return RenderTableWidth(w, t, width) }); err != nil {
			return err
		}
	}
	if d.Findings != nil && d.FindingsFirst && d.FindingsAfter >= len(d.Tables) {
		if err := section(findings); err != nil {
			return err
		}
	}
	if d.Findings != nil && !d.FindingsFirst {
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

// renderFindings prints the findings table, or a list of blocks when the table
// would have to wrap at this width.
func renderFindings(w io.Writer, fs []Finding, width int) error {
	t := FindingsTable(fs)
	if len(fs) == 0 || fitsTable(headersOf(t), cellsOf(t), width) {
		return RenderTableWidth(w, t, width)
	}
	renderFindingsList(w, fs, width)
	return nil
}

func headersOf(t *Table) []string {
	hs := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		hs[i] = c.Header
	}
	return hs
}

func cellsOf(t *Table) [][]string {
	rows := make([][]string, len(t.Rows))
	for j, r := range t.Rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = strings.ReplaceAll(Cell(v), "\n", `\n`)
		}
		rows[j] = cells
	}
	return rows
}

// RenderTable writes one table in the stable ASCII style used by golden files.
func RenderTable(w io.Writer, t *Table) error { return RenderTableWidth(w, t, 0) }

// RenderTableWidth is RenderTable fitted into width columns (0: no limit): the
// widest columns are narrowed and their cells wrapped over several lines, so
// nothing is cut off and no line is wider than the terminal.
func RenderTableWidth(w io.Writer, t *Table, width int) error {
	if t.Title != "" {
		for _, line := range wrapWords(t.Title, width, "") {
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	if len(t.Rows) == 0 {
		_, err := fmt.Fprintln(w, "(none)")
		return err
	}
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
	// Newlines in a value would read as wrapped cells: cellsOf escapes them.
	headers, rows := headersOf(t), cellsOf(t)
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
			return fmt.Errorf("render table %s: %w", t.Name, err)
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("render table %s: %w", t.Name, err)
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

// jsonValueOf is what a table is in JSON: the object of a Fields table, else
// its rows (jsonRows).
func jsonValueOf(t *Table) any {
	if t.object != nil {
		return t.object
	}
	return jsonRows(t)
}

// jsonRows is a table's rows in JSON: its typed rows (a table made by Rows),
// the one object of a Fields table, or one object per row of cells; [] when empty.
func jsonRows(t *Table) []any {
	if t.object != nil {
		return []any{t.object}
	}
	if t.items != nil {
		return t.items
	}
	out := make([]any, 0, len(t.Rows))
	for _, r := range t.Rows {
		out = append(out, rowObject(t, r))
	}
	return out
}

func printJSON(w io.Writer, d *Document) error {
	var doc orderedObject
	for _, t := range d.Tables {
		doc.set(t.Name, jsonValueOf(t))
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
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
