package spill

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// indexEvery is how many bytes of records lie between two entries of a File's
// index: a Scan from a key reads at most this much before it.
const indexEvery = 32 << 10

// File is records in key order (equal keys allowed), appended from first to
// last and then read from any key: a sorted run that a reader can enter in the
// middle. Its index, a key every indexEvery bytes, is all it holds in memory.
// Append is for one goroutine; once Finish is called, any number of Scans may
// run at once.
type File struct {
	f        *os.File
	w        *bufio.Writer
	size     int64
	n        int64
	last     []byte
	index    []indexEntry
	finished bool
	buf      []byte
}

type indexEntry struct {
	key []byte // the first key at off
	off int64
}

// NewFile starts a File named after what.
func (d *Dir) NewFile(what string) (*File, error) {
	f, err := d.create(what)
	if err != nil {
		return nil, err
	}
	return &File{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Len is the number of records appended.
func (f *File) Len() int64 { return f.n }

// Append adds a record after the last one; its key must not sort before the
// last one's.
func (f *File) Append(key, value []byte) error {
	if f.finished {
		return fmt.Errorf("spill: %s: append after Finish", f.f.Name())
	}
	if f.n > 0 && bytes.Compare(key, f.last) < 0 {
		return fmt.Errorf("spill: %s: key %x appended after %x", f.f.Name(), key, f.last)
	}
	if len(key) > maxRecord || len(value) > maxRecord {
		return fmt.Errorf("spill: %s: record of %d+%d bytes", f.f.Name(), len(key), len(value))
	}
	if len(f.index) == 0 || f.size-f.index[len(f.index)-1].off >= indexEvery {
		f.index = append(f.index, indexEntry{key: bytes.Clone(key), off: f.size})
	}
	f.buf = appendRecord(f.buf[:0], key, value)
	if _, err := f.w.Write(f.buf); err != nil {
		return fmt.Errorf("spill: write %s: %w", f.f.Name(), err)
	}
	f.size += int64(len(f.buf))
	f.n++
	f.last = append(f.last[:0], key...)
	return nil
}

// Finish ends the appends; Scan may be called from then on.
func (f *File) Finish() error {
	if f.finished {
		return nil
	}
	f.finished = true
	if err := f.w.Flush(); err != nil {
		return fmt.Errorf("spill: write %s: %w", f.f.Name(), err)
	}
	return nil
}

// Scan calls fn with every record whose key does not sort before from (nil:
// all), in order. key and value are valid only during fn. It stops at fn's
// first error or when ctx is done.
func (f *File) Scan(ctx context.Context, from []byte, fn func(key, value []byte) error) error {
	if !f.finished {
		return fmt.Errorf("spill: %s: scan before Finish", f.f.Name())
	}
	// Start at the last index entry whose key sorts before from: equal keys
	// may begin in the block before the first one whose key is from.
	i := sort.Search(len(f.index), func(i int) bool { return bytes.Compare(f.index[i].key, from) >= 0 })
	off := int64(0)
	if i > 0 {
		off = f.index[i-1].off
	}
	rr := newRecordReader(io.NewSectionReader(f.f, off, f.size-off), f.f.Name(), off)
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		err := rr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if bytes.Compare(rr.key, from) < 0 {
			continue
		}
		if err := fn(rr.key, rr.val); err != nil {
			return err
		}
	}
}

// Get returns a copy of the value of the first record of key; ok is false when
// there is none.
func (f *File) Get(key []byte) (value []byte, ok bool, err error) {
	errFound := errors.New("found")
	err = f.Scan(context.Background(), key, func(k, v []byte) error {
		if bytes.Equal(k, key) {
			value, ok = bytes.Clone(v), true
		}
		return errFound
	})
	if errors.Is(err, errFound) {
		err = nil
	}
	return value, ok, err
}
