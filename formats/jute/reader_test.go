package jute

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// cat joins byte pieces, for building inputs by hand.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func i32(v int32) []byte { return AppendInt32(nil, v) }

// TestReaderValues: what the writer appends, the reader reads back, in order,
// with the offset after each value.
func TestReaderValues(t *testing.T) {
	b := AppendInt32(nil, -7)
	b = AppendInt64(b, 1<<40+3)
	b = AppendBool(b, true)
	b = append(b, 2) // any non-zero byte is true
	b = AppendBool(b, false)
	b = AppendBuffer(b, []byte("data"))
	b = AppendBuffer(b, nil)
	b = AppendString(b, "/path")
	b = AppendInt32(b, 2)
	b = AppendString(b, "x")
	b = AppendString(b, "")
	b = AppendInt32(b, -1) // null vector

	r := NewReader(b)
	check := func(name string, got, want any, err error, off int) {
		t.Helper()
		if err != nil || !reflect.DeepEqual(got, want) || r.Offset() != off {
			t.Fatalf("%s: %#v at %d (%v), want %#v at %d", name, got, r.Offset(), err, want, off)
		}
	}
	v32, err := r.Int32("i32")
	check("Int32", v32, int32(-7), err, 4)
	v64, err := r.Int64("i64")
	check("Int64", v64, int64(1<<40+3), err, 12)
	for i, want := range []bool{true, true, false} {
		v, err := r.Bool("bool")
		check("Bool", v, want, err, 13+i)
	}
	buf, err := r.Buffer("buf")
	check("Buffer", buf, []byte("data"), err, 23)
	if cap(buf) != len(buf) {
		t.Fatalf("Buffer capacity %d, want %d (appending must not overwrite what follows)", cap(buf), len(buf))
	}
	null, err := r.Buffer("null")
	check("null Buffer", null, []byte(nil), err, 27)
	s, err := r.String("str")
	check("String", s, "/path", err, 36)
	ss, err := r.Strings("strs")
	check("Strings", ss, []string{"x", ""}, err, 49)
	ns, err := r.Strings("null strs")
	check("null Strings", ns, []string(nil), err, 53)
	if r.Left() != 0 || r.Err() != nil {
		t.Fatalf("%d bytes left, err %v", r.Left(), r.Err())
	}
}

// TestReaderErrors: every short or invalid input is an *Error naming the field,
// the offset and the kind, and the first failure sticks.
func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		read func(r *Reader) error
		kind error
		msg  string
	}{
		{"empty int32", nil, func(r *Reader) error { _, err := r.Int32("xid"); return err },
			ErrTruncated, "offset 0: xid: jute record ends early: need 4 bytes, 0 left"},
		{"short int64", []byte{1, 2, 3}, func(r *Reader) error { _, err := r.Int64("zxid"); return err },
			ErrTruncated, "offset 0: zxid: jute record ends early: need 8 bytes, 3 left"},
		{"empty bool", nil, func(r *Reader) error { _, err := r.Bool("done"); return err },
			ErrTruncated, "offset 0: done: jute record ends early: need 1 bytes, 0 left"},
		{"short buffer length", []byte{0, 0}, func(r *Reader) error { _, err := r.Buffer("data"); return err },
			ErrTruncated, "offset 0: data length: jute record ends early: need 4 bytes, 2 left"},
		{"buffer beyond the input", cat(i32(10), []byte("abc")), func(r *Reader) error { _, err := r.Buffer("data"); return err },
			ErrTruncated, "offset 4: data: jute record ends early: need 10 bytes, 3 left"},
		{"huge buffer length", i32(0x7fffffff), func(r *Reader) error { _, err := r.Buffer("data"); return err },
			ErrTruncated, "offset 4: data: jute record ends early: need 2147483647 bytes, 0 left"},
		{"negative buffer length", i32(-2), func(r *Reader) error { _, err := r.String("path"); return err },
			ErrMalformed, "offset 4: path: malformed jute record: negative length -2"},
		{"count beyond the input", cat(i32(3), i32(0)), func(r *Reader) error { _, err := r.Count("acl", 4); return err },
			ErrMalformed, "offset 4: acl: malformed jute record: count 3 with 4 bytes left"},
		{"negative count", i32(-5), func(r *Reader) error { _, err := r.Strings("children"); return err },
			ErrMalformed, "offset 4: children: malformed jute record: count -5 with 0 bytes left"},
		{"huge count", cat(i32(0x40000000), i32(0)), func(r *Reader) error { _, err := r.Strings("children"); return err },
			ErrMalformed, "offset 4: children: malformed jute record: count 1073741824 with 4 bytes left"},
		{"string cut in a vector", cat(i32(2), AppendString(nil, "a"), i32(5)), func(r *Reader) error { _, err := r.Strings("children"); return err },
			ErrTruncated, "offset 13: children: jute record ends early: need 5 bytes, 0 left"},
		{"caller's check", i32(1), func(r *Reader) error { r.Int32("n"); return r.Malformed("n", "want 2") },
			ErrMalformed, "offset 4: n: malformed jute record: want 2"},
		{"first failure sticks", []byte{9}, func(r *Reader) error {
			r.Int32("first")
			r.Bool("second") // a byte is there, but the record is already broken
			return r.Malformed("third", "ignored")
		}, ErrTruncated, "offset 0: first: jute record ends early: need 4 bytes, 1 left"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.in)
			err := tc.read(r)
			var je *Error
			if !errors.As(err, &je) || !errors.Is(err, tc.kind) {
				t.Fatalf("error %v (%T), want an *Error of %v", err, err, tc.kind)
			}
			if err.Error() != tc.msg {
				t.Fatalf("error\n%s\nwant\n%s", err, tc.msg)
			}
			if r.Err() == nil {
				t.Fatal("Err() is nil after a failure")
			}
			if _, again := r.Int32("later"); again != r.Err() {
				t.Fatalf("a later read returned %v, want the first failure %v", again, r.Err())
			}
		})
	}
}

// TestReaderRecord: a nested record is read on its own, its offsets counting
// from the start of the outer bytes, and the outer reader goes on after it.
func TestReaderRecord(t *testing.T) {
	r := NewReader(cat(i32(7), i32(2), []byte{0, 1}, i32(9)))
	r.Int32("type")
	sub, err := r.Record("sub")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sub.Int32("inner")
	const want = "offset 8: inner: jute record ends early: need 4 bytes, 2 left"
	if !errors.Is(err, ErrTruncated) || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if v, err := r.Int32("after"); v != 9 || err != nil {
		t.Fatalf("after the record: %d, %v; want 9", v, err)
	}
	if sub, err := NewReader(i32(-1)).Record("null"); err != nil || sub.Left() != 0 {
		t.Fatalf("null record: %v, %v", sub, err)
	}
}

// FuzzReader: arbitrary bytes read as any sequence of values never panic, never
// read past the input, and fail only with an *Error at an offset inside it.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, cat(i32(2), AppendString(nil, "ab"), AppendString(nil, "c")))
	f.Add([]byte{6, 6, 4}, cat(i32(0x7fffffff), []byte("x")))
	f.Add([]byte{5, 3}, i32(-1))
	f.Fuzz(func(t *testing.T, ops, in []byte) {
		r := NewReader(in)
		for _, op := range ops {
			var err error
			switch op % 8 {
			case 0:
				_, err = r.Int32("int32")
			case 1:
				_, err = r.Int64("int64")
			case 2:
				_, err = r.Bool("bool")
			case 3:
				_, err = r.Buffer("buffer")
			case 4:
				_, err = r.String("string")
			case 5:
				_, err = r.Strings("strings")
			case 6:
				var sub *Reader
				if sub, err = r.Record("record"); err == nil {
					_, _ = sub.Strings("inner")
					_, err = sub.Int64("inner")
				}
			case 7:
				_, err = r.Count("count", 1)
			}
			if r.Offset() < 0 || r.Offset() > len(in) || r.Left() != len(in)-r.Offset() {
				t.Fatalf("offset %d, %d left of %d", r.Offset(), r.Left(), len(in))
			}
			if err == nil {
				continue
			}
			var je *Error
			if !errors.As(err, &je) || je.Offset < 0 || je.Offset > len(in) {
				t.Fatalf("error %v (%T) not an *Error inside the input", err, err)
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v of no kind", err)
			}
		}
	})
}
