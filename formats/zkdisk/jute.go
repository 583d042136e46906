// Package zkdisk reads ZooKeeper's on-disk files (docs/formats.md §8): snapshots
// (version-2/snapshot.<zxid>) and transaction logs (version-2/log.<zxid>), both in
// jute's big-endian binary encoding, and replays them into a tree of nodes.
//
// Every decoder streams: a snapshot of millions of nodes is read node by node, and
// no length read from a file allocates more than the bytes that are really there.
// Errors are *DecodeError, naming the file and the byte offset.
package zkdisk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"

	"github.com/ledgermedic/ledgermedic/formats/jute"
)

// Sentinel errors, matched with errors.Is on a *DecodeError.
var (
	ErrTruncated   = errors.New("file ends inside a record")
	ErrChecksum    = errors.New("Adler-32 checksum mismatch")
	ErrBadMagic    = errors.New("not a ZooKeeper file (bad magic)")
	ErrMalformed   = errors.New("malformed record")
	ErrUnsupported = errors.New("unsupported file")
)

// DecodeError is a decode failure at a byte offset of a file.
type DecodeError struct {
	File   string
	Offset int64
	What   string // what was being read
	Err    error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s: offset %d: %s: %v", e.File, e.Offset, e.What, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// stream is a buffered reader over a file that knows its offset and keeps a
// running Adler-32 of every byte consumed (the snapshot seals cover everything
// before them). It reads only what it is asked for, so a length field cannot make
// it allocate more than the file holds.
type stream struct {
	src    io.Reader
	file   string
	buf    []byte
	pos    int
	end    int
	base   int64 // file offset of buf[0]
	sum    hash.Hash32
	summed int // buf[:summed] has been added to sum
	slab   []byte
}

const streamBuf = 256 << 10

func newStream(r io.Reader, file string) *stream {
	return &stream{src: r, file: file, buf: make([]byte, streamBuf), sum: adler32.New()}
}

func (s *stream) offset() int64 { return s.base + int64(s.pos) }

func (s *stream) errAt(off int64, what string, err error) error {
	return &DecodeError{File: s.file, Offset: off, What: what, Err: err}
}

// fill makes at least n (<= len(buf)) unread bytes available. It returns io.EOF
// when no byte at all is left and ErrTruncated when some but fewer than n are.
func (s *stream) fill(n int) error {
	if s.end-s.pos >= n {
		return nil
	}
	s.sum.Write(s.buf[s.summed:s.pos])
	copy(s.buf, s.buf[s.pos:s.end])
	s.base += int64(s.pos)
	s.end -= s.pos
	s.pos, s.summed = 0, 0
	for s.end < n {
		k, err := s.src.Read(s.buf[s.end:])
		s.end += k
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	switch {
	case s.end >= n:
		return nil
	case s.end == 0:
		return io.EOF
	}
	return ErrTruncated
}

// next returns a view of the next n bytes (valid until the next call).
func (s *stream) next(n int, what string) ([]byte, error) {
	off := s.offset()
	if err := s.fill(n); err != nil {
		if err == io.EOF {
			err = ErrTruncated
		}
		return nil, s.errAt(off, what, err)
	}
	b := s.buf[s.pos : s.pos+n]
	s.pos += n
	return b, nil
}

func (s *stream) int32(what string) (int32, error) {
	b, err := s.next(4, what)
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

func (s *stream) int64(what string) (int64, error) {
	b, err := s.next(8, what)
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// atEOF reports whether the file ends exactly here (used for optional trailers).
func (s *stream) atEOF() (bool, error) {
	err := s.fill(1)
	if err == io.EOF {
		return true, nil
	}
	if err != nil && err != ErrTruncated {
		return false, s.errAt(s.offset(), "read", err)
	}
	return false, nil
}

// owned reads n bytes into memory the caller keeps. Small values are cut from a
// shared slab (one allocation per many nodes); large ones are read in chunks so a
// bogus length fails at EOF before allocating its full size.
func (s *stream) owned(n int, what string) ([]byte, error) {
	off := s.offset()
	if n < 0 {
		return nil, s.errAt(off, what, fmt.Errorf("%w: negative length %d", ErrMalformed, n))
	}
	if n == 0 {
		return []byte{}, nil
	}
	if n <= 4<<10 {
		b, err := s.next(n, what)
		if err != nil {
			return nil, err
		}
		if len(s.slab) < n {
			s.slab = make([]byte, 64<<10)
		}
		out := s.slab[:n:n]
		s.slab = s.slab[n:]
		copy(out, b)
		return out, nil
	}
	var out []byte
	for len(out) < n {
		chunk := min(n-len(out), streamBuf/2)
		b, err := s.next(chunk, what)
		if err != nil {
			return nil, s.errAt(off, what, fmt.Errorf("%w: length %d, only %d bytes left", ErrTruncated, n, len(out)+s.end-s.pos))
		}
		if out == nil {
			out = make([]byte, 0, min(n, 1<<20))
		}
		out = append(out, b...)
	}
	return out, nil
}

// buffer reads a jute buffer: int32 length (-1 = null) then the bytes.
func (s *stream) buffer(what string) ([]byte, error) {
	n, err := s.int32(what)
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	return s.owned(int(n), what)
}

// ustring reads a jute string; null reads as "".
func (s *stream) ustring(what string) (string, error) {
	off := s.offset()
	n, err := s.int32(what)
	if err != nil || n == -1 {
		return "", err
	}
	if n < 0 {
		return "", s.errAt(off, what, fmt.Errorf("%w: negative length %d", ErrMalformed, n))
	}
	if int(n) <= streamBuf/2 {
		b, err := s.next(int(n), what)
		return string(b), err
	}
	b, err := s.owned(int(n), what)
	return string(b), err
}

// checksum is the Adler-32 of every byte consumed so far.
func (s *stream) checksum() uint32 {
	s.sum.Write(s.buf[s.summed:s.pos])
	s.summed = s.pos
	return s.sum.Sum32()
}

// txnErr turns a failure of the jute reader over one txn's bytes into a
// *DecodeError of the file, at base plus the reader's offset.
func txnErr(err error, file string, base int64) error {
	var je *jute.Error
	if !errors.As(err, &je) {
		return err
	}
	kind := ErrMalformed
	if errors.Is(je, jute.ErrTruncated) {
		kind = ErrTruncated
	}
	return &DecodeError{File: file, Offset: base + int64(je.Offset), What: je.Field, Err: fmt.Errorf("%w: %s", kind, je.Detail)}
}

func readACLs(r *jute.Reader, what string) ([]ACL, error) {
	n, err := r.Count(what, 12)
	if err != nil {
		return nil, err
	}
	out := make([]ACL, 0, n)
	for range n {
		var a ACL
		if a.Perms, err = r.Int32(what + " perms"); err != nil {
			return nil, err
		}
		if a.Scheme, err = r.String(what + " scheme"); err != nil {
			return nil, err
		}
		if a.ID, err = r.String(what + " id"); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
