package report

import (
	"fmt"
)

// A streamed table or finding list is produced at print time, one row at a
// time, so a command over a million topics prints in memory that does not grow
// with them: JSON and JSON lines are written row by row, and a human table in
// pages of pageRows rows, each page a table of its own under the one title.

// pageRows is the most rows of a streamed table (or findings of a stream) the
// printer holds at a time: one page of the human table.
const pageRows = 1000

// rowStream is where the rows of a streamed table come from.
type rowStream struct {
	// each calls yield once per row, in order, and returns the first error
	// yield returns (or its own).
	each  func(yield func(row any) error) error
	cells func(row any) ([]any, error) // the human table's cells of a row, every column before DropColumn
	typed bool                         // a row's JSON is the row itself (Stream); else its cells keyed by column (StreamCells)
	keep  []int                        // the cells the Columns show, after DropColumn; nil: all
}

// Stream makes a table of typed rows, as Rows does, whose rows each produces
// when the table is printed: it calls yield once per row, in order, and stops
// with the first error yield returns (the output failed), returning it. The
// table's columns and JSON follow Rows' rules. each is called once per print.
func Stream[T any](name, title string, each func(yield func(T) error) error) *Table {
	cols, fields := typedColumns[T](name)
	return &Table{Name: name, Title: title, Columns: cols, stream: &rowStream{
		each:  func(yield func(any) error) error { return each(func(r T) error { return yield(r) }) },
		cells: func(r any) ([]any, error) { return typedCells(r, fields), nil },
		typed: true,
	}}
}

// StreamCells makes t, a table of cells made by NewTable and still without
// rows, a streamed one: each yields its rows when the table is printed, one
// value per column, as Add takes them. It returns t.
func (t *Table) StreamCells(each func(yield func(values ...any) error) error) *Table {
	if len(t.Rows) > 0 || t.items != nil || t.object != nil || t.stream != nil {
		panic(fmt.Sprintf("report: table %q: StreamCells on a table that has rows", t.Name))
	}
	n := len(t.Columns)
	t.stream = &rowStream{
		each: func(yield func(any) error) error {
			return each(func(values ...any) error { return yield(values) })
		},
		cells: func(r any) ([]any, error) {
			values := r.([]any)
			if len(values) != n {
				return nil, fmt.Errorf("report: table %q: row has %d values for %d columns", t.Name, len(values), n)
			}
			return values, nil
		},
	}
	return t
}

// dropStreamed removes column i of a streamed table: its rows lose the cell
// when they come.
func (t *Table) dropStreamed(i int) {
	s := t.stream
	if s.keep == nil {
		s.keep = make([]int, len(t.Columns))
		for j := range s.keep {
			s.keep[j] = j
		}
	}
	s.keep = append(s.keep[:i:i], s.keep[i+1:]...)
}

// eachCells calls yield with the cells of each row of the table, in order
// (the human table).
func (t *Table) eachCells(yield func(cells []any) error) error {
	s := t.stream
	if s == nil {
		for _, r := range t.Rows {
			if err := yield(r); err != nil {
				return err
			}
		}
		return nil
	}
	return s.each(func(r any) error {
		cells, err := t.streamedCells(r)
		if err != nil {
			return err
		}
		return yield(cells)
	})
}

// streamedCells are the cells of one row of a streamed table, the dropped
// columns left out.
func (t *Table) streamedCells(r any) ([]any, error) {
	s := t.stream
	cells, err := s.cells(r)
	if err != nil || s.keep == nil {
		return cells, err
	}
	kept := make([]any, len(s.keep))
	for j, i := range s.keep {
		kept[j] = cells[i]
	}
	return kept, nil
}

// eachJSON calls yield with the JSON value of each row of the table, in order:
// its typed rows, the one object of a Fields table, or one object per row of
// cells keyed by column.
func (t *Table) eachJSON(yield func(v any) error) error {
	switch {
	case t.object != nil:
		return yield(t.object)
	case t.items != nil:
		for _, it := range t.items {
			if err := yield(it); err != nil {
				return err
			}
		}
		return nil
	case t.stream != nil && t.stream.typed:
		return t.stream.each(yield)
	}
	return t.eachCells(func(cells []any) error { return yield(rowObject(t, cells)) })
}

// FindingStream is a list of findings produced at print time (Document's
// FindingStream), for a command with more findings than it should hold: Each
// calls yield once per finding, in the order they print (SortFindings'), and
// stops with the first error yield returns, returning it. Count is how many
// it yields: the title says it before the first one comes, and printing fails
// when Each yields another number. Each is called once per print.
type FindingStream struct {
	Count int
	Each  func(yield func(Finding) error) error
}

// StreamOf is a stream of the findings of a slice.
func StreamOf(fs []Finding) FindingStream {
	return FindingStream{Count: len(fs), Each: func(yield func(Finding) error) error {
		for _, f := range fs {
			if err := yield(f); err != nil {
				return err
			}
		}
		return nil
	}}
}

// AtLeast is AtLeast of a stream whose findings c counts: the findings as
// serious as least or more.
func (s FindingStream) AtLeast(least Severity, c Counts) FindingStream {
	return FindingStream{Count: c.AtLeast(least).Total(), Each: func(yield func(Finding) error) error {
		return s.Each(func(f Finding) error {
			if !f.Severity.atLeast(least) {
				return nil
			}
			return yield(f)
		})
	}}
}

// FirstOfEachKind is FirstOfEachKind of a stream whose findings c counts: the
// first limit findings of each kind (limit 0: all), and how many of each kind
// it leaves out (nil: none), known before the stream runs.
func (s FindingStream) FirstOfEachKind(limit int, c Counts) (FindingStream, map[string]int) {
	if limit <= 0 {
		return s, nil
	}
	listed, left := c.firstOfEachKind(limit)
	return FindingStream{Count: listed, Each: func(yield func(Finding) error) error {
		seen := map[string]int{} // one entry per kind: a few dozen
		return s.Each(func(f Finding) error {
			if seen[f.Kind]++; seen[f.Kind] > limit {
				return nil
			}
			return yield(f)
		})
	}}, left
}

// Map is the stream with f applied to each finding (hints made runnable).
func (s FindingStream) Map(f func(Finding) Finding) FindingStream {
	return FindingStream{Count: s.Count, Each: func(yield func(Finding) error) error {
		return s.Each(func(x Finding) error { return yield(f(x)) })
	}}
}

// each is Each, checked against Count: printing fails when they disagree.
func (s FindingStream) each(yield func(Finding) error) error {
	if s.Each == nil {
		if s.Count != 0 {
			return fmt.Errorf("report: finding stream of %d findings without Each", s.Count)
		}
		return nil
	}
	n := 0
	err := s.Each(func(f Finding) error {
		if n++; n > s.Count {
			return fmt.Errorf("report: finding stream yields more findings than its count, %d", s.Count)
		}
		return yield(f)
	})
	if err == nil && n != s.Count {
		err = fmt.Errorf("report: finding stream yields %d findings, its count is %d", n, s.Count)
	}
	return err
}

// paged calls each and hands its items to page in slices of at most size,
// reusing one slice; it returns how many items there were.
func paged[T any](each func(yield func(T) error) error, size int, page func([]T) error) (int, error) {
	buf := make([]T, 0, size)
	n := 0
	err := each(func(x T) error {
		buf = append(buf, x)
		n++
		if len(buf) < size {
			return nil
		}
		err := page(buf)
		clear(buf) // let the page's values go
		buf = buf[:0]
		return err
	})
	if err == nil && len(buf) > 0 {
		err = page(buf)
	}
	return n, err
}

// StreamedTables are the tables of ts whose rows are produced as they print.
func StreamedTables(ts []*Table) []*Table {
	var out []*Table
	for _, t := range ts {
		if t.stream != nil {
			out = append(out, t)
		}
	}
	return out
}
