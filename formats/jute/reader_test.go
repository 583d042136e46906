package jute

import (
	"bytes"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"reflect"
	"strings"
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

// chunked hands out its bytes a few at a time, as a slow file or pipe might.
type chunked struct {
	b    []byte
	size int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.size)], c.b)
	c.b = c.b[n:]
	return n, nil
}

// FuzzStreamReader: a stream reader over any bytes, however they arrive and
// however small its window, reads the same values as the slice reader and
// fails where it fails (the field, the offset, the kind), and its checksum is
// that of the bytes it consumed. Counts are left out: a stream cannot check
// them against the bytes left.
func FuzzStreamReader(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, cat(i32(2), AppendString(nil, "ab"), AppendString(nil, "c")), uint8(3), uint8(1))
	f.Add([]byte{3, 3, 4}, cat(i32(0x7fffffff), []byte("x")), uint8(1), uint8(0))
	f.Add([]byte{4, 1, 0}, cat(AppendString(nil, strings.Repeat("long value ", 20)), AppendInt64(nil, 9), []byte{1}), uint8(7), uint8(2))
	f.Fuzz(func(t *testing.T, ops, in []byte, chunk, window uint8) {
		whole := NewReader(in)
		stream := NewStreamReader(&chunked{b: in, size: int(chunk%16) + 1}, int(window))
		sum := adler32.New()
		stream.SumTo(sum)
		for _, op := range ops {
			var a, b any
			var aerr, berr error
			switch op % 5 {
			case 0:
				a, aerr = whole.Int32("int32")
				b, berr = stream.Int32("int32")
			case 1:
				a, aerr = whole.Int64("int64")
				b, berr = stream.Int64("int64")
			case 2:
				a, aerr = whole.Bool("bool")
				b, berr = stream.Bool("bool")
			case 3:
				x, err := whole.Buffer("buffer")
				y, err2 := stream.Buffer("buffer")
				a, aerr, b, berr = string(x), err, string(y), err2
			case 4:
				a, aerr = whole.String("string")
				b, berr = stream.String("string")
			}
			if fmt.Sprint(a, aerr) != fmt.Sprint(b, berr) {
				t.Fatalf("op %d: slice %v, %v; stream %v, %v", op%5, a, aerr, b, berr)
			}
			if whole.Offset() != stream.Offset() {
				t.Fatalf("offsets %d and %d", whole.Offset(), stream.Offset())
			}
		}
		if got, want := stream.Sum32(), adler32.Checksum(in[:stream.Offset()]); whole.Err() == nil && got != want {
			t.Fatalf("checksum %#x of %d bytes consumed, want %#x", got, stream.Offset(), want)
		}
		end, err := stream.AtEnd()
		if whole.Err() == nil && (err != nil || end != (whole.Left() == 0)) {
			t.Fatalf("AtEnd %v, %v with %d bytes left", end, err, whole.Left())
		}
	})
}

// errAfter returns its bytes, then err.
type errAfter struct {
	b   []byte
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	if len(e.b) == 0 {
		return 0, e.err
	}
	n := copy(p, e.b)
	e.b = e.b[n:]
	return n, nil
}

// TestStreamReaderLimits: a length past the end of a stream fails having grown
// the window to no more than twice the bytes there; a failed read of the
// source is an *Error naming the field, wrapping the source's error.
func TestStreamReaderLimits(t *testing.T) {
	in := cat(i32(1<<30), bytes.Repeat([]byte("x"), 3000))
	r := NewStreamReader(bytes.NewReader(in), 64)
	if _, err := r.Buffer("data"); !errors.Is(err, ErrTruncated) || err.Error() != "offset 4: data: jute record ends early: need 1073741824 bytes, 3000 left" {
		t.Fatalf("bogus length: %v", err)
	}
	if cap(r.b) > 2*len(in) {
		t.Fatalf("window grew to %d bytes for %d there", cap(r.b), len(in))
	}
	broken := errors.New("disk on fire")
	r = NewStreamReader(&errAfter{b: i32(7), err: broken}, 64)
	if v, err := r.Int32("first"); v != 7 || err != nil {
		t.Fatalf("first value: %d, %v", v, err)
	}
	_, err := r.Int64("second")
	var je *Error
	if !errors.Is(err, broken) || !errors.As(err, &je) || je.Field != "second" || je.Offset != 4 {
		t.Fatalf("read failure: %v", err)
	}
	if end, err := NewStreamReader(&errAfter{err: broken}, 64).AtEnd(); end || !errors.Is(err, broken) {
		t.Fatalf("AtEnd on a failing source: %v, %v", end, err)
	}
}
