package bkdisk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Sentinel errors, wrapped in a *FormatError that names the file and offset.
var (
	// ErrTruncated: the file ends before a size it declares.
	ErrTruncated = errors.New("truncated")
	// ErrForeignHeader: the file does not begin with this format's magic.
	ErrForeignHeader = errors.New("not this file format")
	// ErrBadSize: a size field that no writer produces (negative, too small).
	ErrBadSize = errors.New("bad size field")
	// ErrUnknownVersion: a header version this reader does not know.
	ErrUnknownVersion = errors.New("unknown format version")
)

// FormatError is bad bytes at one place in one file.
type FormatError struct {
	File   string
	Offset int64
	Detail string
	Err    error // one of the sentinels above
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s: %v", e.File, e.Offset, e.Detail, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(file string, off int64, err error, format string, args ...any) *FormatError {
	return &FormatError{File: file, Offset: off, Detail: fmt.Sprintf(format, args...), Err: err}
}

// reader is a buffered sequential reader that knows its offset and the file size,
// so every size can be checked against the bytes left before anything is allocated.
type reader struct {
	file string
	r    io.Reader
	buf  []byte // buf[start:end] holds unread bytes
	s, e int
	pos  int64 // file offset of buf[s]
	size int64 // declared file size
	eof  bool
}

const readBufSize = 256 << 10

func newReader(file string, r io.Reader, size int64) *reader {
	return &reader{file: file, r: r, buf: make([]byte, readBufSize), size: size}
}

// left is the number of bytes between the offset and the declared end.
func (r *reader) left() int64 { return r.size - r.pos }

// fill makes at least n bytes available (n <= len(buf)) unless the input ends.
func (r *reader) fill(n int) error {
	for r.e-r.s < n && !r.eof {
		if r.s > 0 {
			copy(r.buf, r.buf[r.s:r.e])
			r.e -= r.s
			r.s = 0
		}
		m, err := r.r.Read(r.buf[r.e:])
		r.e += m
		if err == io.EOF {
			r.eof = true
		} else if err != nil {
			return fmt.Errorf("%s: read at offset %d: %w", r.file, r.pos+int64(r.e-r.s), err)
		}
	}
	if r.e-r.s < n {
		return formatErr(r.file, r.pos, ErrTruncated, "file ends after %d bytes, %d bytes short of its size %d",
			r.pos+int64(r.e-r.s), r.size-r.pos-int64(r.e-r.s), r.size)
	}
	return nil
}

// peek returns the next n buffered bytes without consuming them.
func (r *reader) peek(n int) ([]byte, error) {
	if err := r.fill(n); err != nil {
		return nil, err
	}
	return r.buf[r.s : r.s+n], nil
}

func (r *reader) discard(n int64) error {
	for n > 0 {
		if r.s == r.e {
			if err := r.fill(1); err != nil {
				return err
			}
		}
		k := min(n, int64(r.e-r.s))
		r.s += int(k)
		r.pos += k
		n -= k
	}
	return nil
}

func (r *reader) int32() (int32, error) {
	b, err := r.peek(4)
	if err != nil {
		return 0, err
	}
	r.s += 4
	r.pos += 4
	return int32(binary.BigEndian.Uint32(b)), nil
}

// read returns the next n bytes in dst (grown as needed); the caller has checked
// n against left().
func (r *reader) read(dst []byte, n int) ([]byte, error) {
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	got := 0
	for got < n {
		if r.s == r.e {
			if err := r.fill(1); err != nil {
				return nil, err
			}
		}
		k := copy(dst[got:], r.buf[r.s:r.e])
		r.s += k
		r.pos += int64(k)
		got += k
	}
	return dst, nil
}

// skipZeros consumes zero bytes while at least 4 more zeros follow, the bulk form of
// upstream's one-byte steps over a size of 0: it stops where the next int32 turns
// nonzero, so the scan resumes exactly where one-byte steps would. It looks only at
// buffered bytes, so an entry costs no extra copying.
func (r *reader) skipZeros(limit int64) error {
	for limit-r.pos >= 4 {
		if r.e-r.s < 4 {
			if err := r.fill(4); err != nil {
				return err
			}
		}
		avail := r.buf[r.s:r.e]
		if int64(len(avail)) > limit-r.pos {
			avail = avail[:limit-r.pos]
		}
		if avail[0] != 0 {
			return nil // the usual case: a size field
		}
		k := 1
		for k < len(avail) && avail[k] == 0 {
			k++
		}
		// positions q with q+3 < k read a size of 0.
		skip := k - 3
		if skip <= 0 {
			return nil
		}
		r.s += skip
		r.pos += int64(skip)
		if k < len(avail) {
			return nil
		}
	}
	return nil
}
