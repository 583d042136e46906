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
}

// Add appends tables to the document.
func (d *Document) Add(ts ...*Table) { d.Tables = append(d.Tables, ts...) }

// Note appends a formatted note.
func (d *Document) Note(format string, args ...any) {
	d.Notes = append(d.Notes, fmt.Sprintf(format, args...))
}

// Print renders the document as JSON (one object) or as ASCII tables.
func Print(w io.Writer, d *Document, asJSON bool) error {
	if asJSON {
		return printJSON(w, d)
	}
	return printText(w, d)
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

func printText(out io.Writer, d *Document) error {
	w := &stickyWriter{w: out}
	for i, t := range d.Tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := RenderTable(w, t); err != nil {
			return err
		}
	}
	if d.Findings != nil {
		if len(d.Tables) > 0 {
			fmt.Fprintln(w)
		}
		if err := RenderTable(w, FindingsTable(d.Findings)); err != nil {
			return err
		}
	}
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return w.err
}

// RenderTable writes one table in the stable ASCII style used by golden files.
func RenderTable(w io.Writer, t *Table) error {
	if t.Title != "" {
		if _, err := fmt.Fprintln(w, t.Title); err != nil {
			return err
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
	headers := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		headers[i] = c.Header
	}
	tbl.Header(headers...)
	for _, r := range t.Rows {
		cells := make([]string, len(r))
		for i, v := range r {
			// Newlines would break the one-line-per-row promise.
			cells[i] = strings.ReplaceAll(Cell(v), "\n", `\n`)
		}
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

// RowObjects turns a table into JSON-ready objects keyed by column keys.
func RowObjects(t *Table) []orderedObject {
	out := make([]orderedObject, 0, len(t.Rows))
	for _, r := range t.Rows {
		var o orderedObject
		for i, c := range t.Columns {
			o.set(c.Key, jsonValue(r[i]))
		}
		out = append(out, o)
	}
	return out
}

func printJSON(w io.Writer, d *Document) error {
	var doc orderedObject
	for _, t := range d.Tables {
		doc.set(t.Name, RowObjects(t))
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
