package spill

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A record on disk: uvarint key length, uvarint value length, key, value.

// MaxRecord bounds one record's key or value: a length past it is a damaged
// file, not an allocation to make.
const MaxRecord = 1 << 30

func appendRecord(b, key, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = append(b, key...)
	return append(b, value...)
}

// recordReader reads records one at a time into a buffer it reuses.
type recordReader struct {
	r    byteReader
	name string // the file, for errors
	off  int64  // of the next record
	buf  []byte
	key  []byte // valid until the next call of next
	val  []byte
}

type byteReader interface {
	io.Reader
	io.ByteReader
}

func newRecordReader(r io.Reader, name string, off int64) *recordReader {
	rr := &recordReader{name: name}
	rr.reset(r, off)
	return rr
}

// reset reads on from r, at byte off of the file, through a buffer (the one it
// had, if any), unless r buffers already (an S2 stream, which holds a block).
func (rr *recordReader) reset(r io.Reader, off int64) {
	rr.off = off
	if br, ok := r.(byteReader); ok {
		rr.r = br
		return
	}
	if b, ok := rr.r.(*bufio.Reader); ok {
		b.Reset(r)
		return
	}
	rr.r = bufio.NewReaderSize(r, 64<<10)
}

// next reads the next record; io.EOF at a clean end.
func (rr *recordReader) next() error {
	start := rr.off
	kl, err := binary.ReadUvarint(rr.r)
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	if err != nil {
		return rr.damaged(start, err)
	}
	vl, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return rr.damaged(start, err)
	}
	if kl > MaxRecord || vl > MaxRecord {
		return rr.damaged(start, fmt.Errorf("record of %d+%d bytes", kl, vl))
	}
	n := int(kl + vl)
	if cap(rr.buf) < n {
		rr.buf = make([]byte, n, max(n, 2*cap(rr.buf)))
	}
	rr.buf = rr.buf[:n]
	if _, err := io.ReadFull(rr.r, rr.buf); err != nil {
		return rr.damaged(start, err)
	}
	rr.key, rr.val = rr.buf[:kl], rr.buf[kl:]
	rr.off = start + int64(uvarintLen(kl)+uvarintLen(vl)+n)
	return nil
}

func (rr *recordReader) damaged(off int64, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("spill: %s: record at byte %d: %w", rr.name, off, err)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
