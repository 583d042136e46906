// Package report is how results reach the user: tables of typed rows rendered as
// ASCII tables or JSON from the same rows, findings, progress, and exit codes.
// Features build rows; only this package decides how they look.
package report

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Column names one column: a human header and a JSON key.
type Column struct {
	Header string
	Key    string
}

// Table is one view: columns plus rows of typed values (string, integers, bool,
// []byte, fmt.Stringer, nil). The same rows feed the table and the JSON output.
// A streamed table (Stream, StreamCells) has no Rows: they come at print time.
type Table struct {
	Name    string // JSON key of the table in a document
	Title   string // printed above the table; empty for none
	Columns []Column
	Rows    [][]any    // the cells of the human table
	items   []any      // the typed rows of a table made by Rows: its JSON
	object  any        // the value of a table made by Fields: its JSON
	stream  *rowStream // the rows of a table made by Stream or StreamCells, produced at print time
}

// NewTable starts a table; cols alternate header, key: NewTable("topics", "", "TOPIC", "topic", ...).
func NewTable(name, title string, cols ...string) *Table {
	t := &Table{Name: name, Title: title}
	for i := 0; i+1 < len(cols); i += 2 {
		t.Columns = append(t.Columns, Column{Header: cols[i], Key: cols[i+1]})
	}
	return t
}

// Add appends one row; it must have one value per column.
func (t *Table) Add(values ...any) {
	if t.items != nil || t.object != nil || t.stream != nil {
		panic(fmt.Sprintf("report: table %q: Add on a table of typed or streamed rows", t.Name))
	}
	if len(values) != len(t.Columns) {
		panic(fmt.Sprintf("report: table %q: row has %d values for %d columns", t.Name, len(values), len(t.Columns)))
	}
	t.Rows = append(t.Rows, values)
}

// Cell formats one value for the human table.
func Cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return x
	case []byte:
		if len(x) == 0 {
			return "-"
		}
		return hex.EncodeToString(x)
	case []string:
		if len(x) == 0 {
			return "-"
		}
		return strings.Join(x, ",")
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case int:
		return strconv.Itoa(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case fmt.Stringer:
		return Cell(x.String())
	case error:
		return x.Error()
	default:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.String && rv.Len() == 0 {
			return "-" // an empty named string (a state, a kind)
		}
		return fmt.Sprint(x)
	}
}

// absent reports whether a cell is empty: its JSON member is left out.
func absent(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []byte:
		return x == nil
	}
	return false
}

// jsonValue turns a cell into what encoding/json should print: bytes as hex,
// Stringers as strings.
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		if x == nil {
			return nil
		}
		return hex.EncodeToString(x)
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	default:
		return v
	}
}
