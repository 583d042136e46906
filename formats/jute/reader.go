package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
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
	Err    error  // ErrTruncated, ErrMalformed, or a stream's read error
	Detail string // e.g. "need 8 bytes, 3 left"
}

func (e *Error) Error() string {
	return fmt.Sprintf("offset %d: %s: %v: %s", e.Offset, e.Field, e.Err, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

// Reader reads jute values (BinaryInputArchive in org.apache.jute) from a byte
// slice (the responses of live ZooKeeper in store/zk, the txns of ZooKeeper's
// transaction logs in formats/zkdisk) or from a stream (ZooKeeper's snapshots and
// log files, which are too large to hold and, for snapshots, have no framing
// that says how far a record goes). Every read checks the bytes left first, so no
// input panics and no length or count read from the input allocates more than
// the input holds. The first failure is kept: every later read returns it again,
// so a caller may read a whole record and check Err once.
type Reader struct {
	b     []byte // all the bytes, or a stream's window
	off   int    // the next unread byte of b
	base  int    // offset of b[0] in the outermost input, for errors and Offset
	start int    // offset of this reader's own first byte in the outermost input
	err   *Error
	// A stream's source: the window refills from it, its first error (io.EOF
	// at the end) kept in srcErr.
	src    io.Reader
	srcErr error
	// sum, when set, is fed every byte consumed: b[:summed] is in it already.
	sum    hash.Hash32
	summed int
}

// NewReader reads b; values it returns may alias b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// NewStreamReader reads from src through a window of window bytes that grows for
// a value longer than it only as far as src really has bytes. Values it returns
// alias the window: they are valid until the next read.
func NewStreamReader(src io.Reader, window int) *Reader {
	return &Reader{b: make([]byte, 0, max(window, 64)), src: src}
}

// SumTo makes the reader feed every byte it consumes from now on to h, for a
// checksum over a file (a snapshot's seals); Sum32 reads it.
func (r *Reader) SumTo(h hash.Hash32) {
	r.sum, r.summed = h, r.off
}

// Sum32 is the checksum of the bytes consumed since SumTo.
func (r *Reader) Sum32() uint32 {
	r.sum.Write(r.b[r.summed:r.off])
	r.summed = r.off
	return r.sum.Sum32()
}

// Offset is the number of bytes read so far (of this reader's own bytes).
func (r *Reader) Offset() int { return r.base + r.off - r.start }

// Left is the number of bytes not read yet; of a stream, those read ahead.
func (r *Reader) Left() int { return len(r.b) - r.off }

// AtEnd reports whether the input ends here: of a stream, it reads ahead to see.
// A stream's read error is returned as an *Error.
func (r *Reader) AtEnd() (bool, error) {
	if r.err != nil {
		return false, r.err
	}
	if r.Left() > 0 || r.src == nil {
		return r.Left() == 0, nil
	}
	if r.fill(1) {
		return false, nil
	}
	if r.srcErr != io.EOF {
		return false, r.fail("end of input", r.srcErr, "read failed")
	}
	return true, nil
}

// fill makes n bytes available to read in a stream's window: it drops the bytes
// read (feeding them to sum first) and reads from src, growing the window for a
// long value one doubling at a time, so that a bogus length stops at the end of
// the input having allocated at most twice what is there. false when src ends
// (or fails) first.
func (r *Reader) fill(n int) bool {
	if r.sum != nil {
		r.sum.Write(r.b[r.summed:r.off])
	}
	k := copy(r.b[:cap(r.b)], r.b[r.off:])
	r.b, r.base, r.off, r.summed = r.b[:k], r.base+r.off, 0, 0
	for len(r.b) < n && r.srcErr == nil {
		if len(r.b) == cap(r.b) {
			grown := make([]byte, len(r.b), min(n, 2*cap(r.b)))
			copy(grown, r.b)
			r.b = grown
		}
		got, err := r.src.Read(r.b[len(r.b):cap(r.b)])
		r.b = r.b[:len(r.b)+got]
		if err != nil {
			r.srcErr = err
		}
	}
	return len(r.b) >= n
}

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
// empty. Of a stream, the record is read before the next read of r.
func (r *Reader) Record(field string) (*Reader, error) {
	b, err := r.Buffer(field)
	if err != nil {
		return nil, err
	}
	at := r.base + r.off - len(b)
	return &Reader{b: b, base: at, start: at}, nil
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
	if r.Left() < n && (r.src == nil || !r.fill(n)) {
		if r.srcErr != nil && r.srcErr != io.EOF {
			return nil, r.fail(field, r.srcErr, "read failed with %d of %d bytes there", r.Left(), n)
		}
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
// cannot hold is malformed before the caller allocates for it. A stream does not
// know the bytes left: its counts are checked only for sign, and callers append
// the elements as they read them.
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
	if n < 0 || (r.src == nil && int64(n)*int64(minElem) > int64(r.Left())) {
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
	out := make([]string, 0, r.Prealloc(n))
	for range n {
		s, err := r.String(field)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Prealloc is the capacity to make for n elements of a vector whose count was
// read: n itself where Count checked it against the bytes left, at most 1024 of
// a stream's, which cannot be checked.
func (r *Reader) Prealloc(n int) int {
	if r.src == nil {
		return n
	}
	return min(n, 1024)
}
