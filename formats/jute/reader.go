package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Sentinels of a failed read, matched with errors.Is on an *Error.
var (
	ErrTruncated = errors.New("jute record ends early")
	ErrMalformed = errors.New("malformed jute record")
)

// Error is a failed read: the field being read, the offset in the reader's bytes
// where the check failed, and what was wrong.
type Error struct {
	Offset int
	Field  string
	Err    error  // ErrTruncated or ErrMalformed
	Detail string // e.g. "need 8 bytes, 3 left"
}

func (e *Error) Error() string {
	return fmt.Sprintf("offset %d: %s: %v: %s", e.Offset, e.Field, e.Err, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

// Reader reads jute values (BinaryInputArchive in org.apache.jute) from a byte
// slice: the responses of live ZooKeeper (store/zk) and the txns of ZooKeeper's
// transaction logs (formats/zkdisk). Every read checks the bytes left first, so
// no input panics and no length or count read from the input allocates more than
// the input holds. The first failure is kept: every later read returns it again,
// so a caller may read a whole record and check Err once.
type Reader struct {
	b    []byte
	off  int
	base int // offset of b[0] in the outermost reader's bytes, for errors
	err  *Error
}

// NewReader reads b; values it returns may alias b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Offset is the number of bytes read so far (of this reader's own bytes).
func (r *Reader) Offset() int { return r.off }

// Left is the number of bytes not read yet.
func (r *Reader) Left() int { return len(r.b) - r.off }

// Err is the first failure, or nil.
func (r *Reader) Err() error {
	if r.err == nil {
		return nil
	}
	return r.err
}

func (r *Reader) fail(field string, kind error, format string, args ...any) error {
	if r.err == nil {
		r.err = &Error{Offset: r.base + r.off, Field: field, Err: kind, Detail: fmt.Sprintf(format, args...)}
	}
	return r.err
}

// Malformed records a failure the caller found in the values (ErrMalformed, at
// the current offset) unless one is recorded already, and returns the first.
func (r *Reader) Malformed(field, format string, args ...any) error {
	return r.fail(field, ErrMalformed, format, args...)
}

// Record reads a buffer and returns a reader over its bytes, for a record nested
// in a buffer (a multi txn's sub-txns); offsets in its errors count from the
// start of the outermost reader, as this reader's do. A null buffer reads as
// empty.
func (r *Reader) Record(field string) (*Reader, error) {
	b, err := r.Buffer(field)
	if err != nil {
		return nil, err
	}
	return &Reader{b: b, base: r.base + r.off - len(b)}, nil
}

// Bytes returns the next n bytes, capacity-limited so appending to them cannot
// overwrite what follows.
func (r *Reader) Bytes(n int, field string) ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if n < 0 {
		return nil, r.fail(field, ErrMalformed, "negative length %d", n)
	}
	if r.Left() < n {
		return nil, r.fail(field, ErrTruncated, "need %d bytes, %d left", n, r.Left())
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}

// Int32 reads a big-endian int32.
func (r *Reader) Int32(field string) (int32, error) {
	b, err := r.Bytes(4, field)
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// Int64 reads a big-endian int64.
func (r *Reader) Int64(field string) (int64, error) {
	b, err := r.Bytes(8, field)
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// Bool reads one byte; anything but 0 is true, as readBool does.
func (r *Reader) Bool(field string) (bool, error) {
	b, err := r.Bytes(1, field)
	if err != nil {
		return false, err
	}
	return b[0] != 0, nil
}

// Buffer reads an int32 length (the field "<field> length") and that many bytes;
// length -1 is null and returns nil. The bytes alias the reader's.
func (r *Reader) Buffer(field string) ([]byte, error) {
	n, err := r.Int32(field + " length")
	if err != nil || n == -1 {
		return nil, err
	}
	return r.Bytes(int(n), field)
}

// String reads a buffer as a string; null reads as "".
func (r *Reader) String(field string) (string, error) {
	b, err := r.Buffer(field)
	return string(b), err
}

// Count reads a vector's int32 count (the field "<field> count"); -1 (null) reads
// as 0. Each element takes at least minElem bytes, so a count the bytes left
// cannot hold is malformed before the caller allocates for it.
func (r *Reader) Count(field string, minElem int) (int, error) {
	n, err := r.count(field, minElem)
	return max(n, 0), err
}

// count is Count with null kept as -1.
func (r *Reader) count(field string, minElem int) (int, error) {
	n, err := r.Int32(field + " count")
	if err != nil || n == -1 {
		return int(n), err
	}
	if n < 0 || int64(n)*int64(minElem) > int64(r.Left()) {
		return 0, r.fail(field, ErrMalformed, "count %d with %d bytes left", n, r.Left())
	}
	return int(n), nil
}

// Strings reads a vector of strings; null reads as nil.
func (r *Reader) Strings(field string) ([]string, error) {
	n, err := r.count(field, 4)
	if err != nil || n == -1 {
		return nil, err
	}
	out := make([]string, 0, n)
	for range n {
		s, err := r.String(field)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
