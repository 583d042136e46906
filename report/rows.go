package report

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Rows makes a table of typed rows, the one way features hand results to the
// user: the JSON of the table is the rows themselves, marshalled with their
// json tags (numbers stay numbers, absent fields are omitted), and every field
// tagged `table:"HEADER"` is a column of the human table, in field order.
// Fields without a table tag are JSON only; `json:"-"` fields are table only.
// T must be a struct type (or a pointer to one).
func Rows[T any](name, title string, rows []T) *Table {
	cols, fields := typedColumns[T](name)
	t := &Table{Name: name, Title: title, Columns: cols, items: make([]any, 0, len(rows)), Rows: make([][]any, 0, len(rows))}
	for _, r := range rows {
		t.items = append(t.items, r)
		t.Rows = append(t.Rows, typedCells(r, fields))
	}
	return t
}

// typedColumns are the columns of a table of T rows (Rows, Stream) and the
// index of the struct field each shows.
func typedColumns[T any](name string) ([]Column, []int) {
	rt := reflect.TypeFor[T]()
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	if rt.Kind() != reflect.Struct {
		panic(fmt.Sprintf("report: table %q: rows of %s, want a struct", name, rt))
	}
	var cols []Column
	var fields []int
	for i := range rt.NumField() {
		f := rt.Field(i)
		header, ok := f.Tag.Lookup("table")
		if !ok || !f.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" {
			key = ""
		}
		cols = append(cols, Column{Header: header, Key: key})
		fields = append(fields, i)
	}
	return cols, fields
}

// typedCells is the human table's cells of one typed row.
func typedCells(r any, fields []int) []any {
	v := reflect.ValueOf(r)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	cells := make([]any, len(fields))
	for j, i := range fields {
		cells[j] = cellValue(v.Field(i))
	}
	return cells
}

// Fields makes a two-column FIELD/VALUE table of one typed value (a struct, or
// a pointer to one): each field tagged `table:"label"` is a row, absent ones
// (nil, "", zero Time) left out as in JSON. The JSON of the table is v itself,
// one object. AddField appends rows the human table alone shows.
func Fields(name, title string, v any) *Table {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		panic(fmt.Sprintf("report: table %q: fields of %s, want a struct", name, rv.Type()))
	}
	t := &Table{Name: name, Title: title, Columns: []Column{{"FIELD", "field"}, {"VALUE", "value"}}, object: v}
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		label, ok := f.Tag.Lookup("table")
		if !ok || !f.IsExported() {
			continue
		}
		cell := cellValue(rv.Field(i))
		if Cell(cell) == "-" {
			continue
		}
		t.Rows = append(t.Rows, []any{label, cell})
	}
	return t
}

// AddField appends a row to a Fields table that only the human table shows
// (the JSON is the object Fields was given).
func (t *Table) AddField(label string, value any) {
	if t.object == nil {
		panic(fmt.Sprintf("report: table %q: AddField on a table that is not a Fields table", t.Name))
	}
	t.Rows = append(t.Rows, []any{label, value})
}

// DropColumn removes a column from the human table (a column a command shows
// only when asked); the JSON keeps the field.
func (t *Table) DropColumn(header string) *Table {
	for i, c := range t.Columns {
		if c.Header != header {
			continue
		}
		if t.stream != nil {
			t.dropStreamed(i)
		}
		t.Columns = append(t.Columns[:i:i], t.Columns[i+1:]...)
		for j, r := range t.Rows {
			t.Rows[j] = append(r[:i:i], r[i+1:]...)
		}
		break
	}
	return t
}

// Items returns the typed rows of a table made by Rows (nil for a table of
// cells and a streamed table).
func (t *Table) Items() []any { return t.items }

// cellValue is what a field shows in the table: a nil pointer is absent ("-"),
// a pointer shows what it points to.
func cellValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	case reflect.Slice, reflect.Map:
		if v.IsNil() {
			return nil
		}
	}
	return v.Interface()
}

// Time is an instant as ledgermedic prints it everywhere, in tables and JSON:
// RFC 3339 in UTC with milliseconds. The zero Time is absent (omitzero).
type Time struct{ time.Time }

// TimeFormat is the one layout of every time ledgermedic prints.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// At wraps a time.Time.
func At(t time.Time) Time { return Time{t} }

// Millis is the instant of a Pulsar epoch-milliseconds value; 0 (Pulsar's
// "not set") is the zero Time.
func Millis(ms int64) Time {
	if ms == 0 {
		return Time{}
	}
	return Time{time.UnixMilli(ms)}
}

func (t Time) String() string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeFormat)
}

// MarshalJSON writes the RFC 3339 string (null for the zero Time, which
// omitzero fields never reach).
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.String())
}

// KV is one key/value pair of an ordered property list.
type KV struct {
	Key   string
	Value string
}

// KVs is a property list in its stored order: a JSON object (keys in that
// order) and "k=v,k2=v2" in a table.
type KVs []KV

func (p KVs) String() string {
	parts := make([]string, len(p))
	for i, kv := range p {
		parts[i] = kv.Key + "=" + kv.Value
	}
	return strings.Join(parts, ",")
}

// MarshalJSON writes the pairs as one object, in order.
func (p KVs) MarshalJSON() ([]byte, error) {
	var o orderedObject
	for _, kv := range p {
		o.set(kv.Key, kv.Value)
	}
	return o.MarshalJSON()
}

// SortedKVs is a map as a property list in key order (flags, options).
func SortedKVs(m map[string]string) KVs {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(KVs, len(keys))
	for i, k := range keys {
		out[i] = KV{k, m[k]}
	}
	return out
}

// Object is a JSON object whose members keep the order they were set in (a
// decoded protobuf message in field order).
type Object struct{ o orderedObject }

// Set appends a member.
func (x *Object) Set(key string, v any) { x.o.set(key, v) }

// Len is the number of members.
func (x *Object) Len() int { return len(x.o.keys) }

// MarshalJSON writes the members in order.
func (x *Object) MarshalJSON() ([]byte, error) { return x.o.MarshalJSON() }

// Ptr returns a pointer to v, for the optional (absent when nil) fields of rows.
func Ptr[T any](v T) *T { return &v }
