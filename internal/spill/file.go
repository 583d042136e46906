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
	"sync"
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
	f     *os.File
	w     *bufio.Writer
	size  int64
	n     int64
	last  []byte
	dups  bool // some key was appended twice
	index []indexEntry
	// The index's keys end to end. One growing buffer rather than a copy per
	// key: each copy would live as long as the File among the short-lived
	// objects of its size, keeping their spans of the heap from being freed
	// (at 1M topics, 80–100 MB of such spans at the peak of a check).
	indexKeys []byte
	finished  bool
	buf       []byte
	readers   sync.Pool // *Reader, for Get
}

type indexEntry struct {
	start, end int // the first key at off: indexKeys[start:end]
	off        int64
}

func (f *File) indexKey(i int) []byte { return f.indexKeys[f.index[i].start:f.index[i].end] }

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
	if f.n > 0 {
		switch c := bytes.Compare(key, f.last); {
		case c < 0:
			return fmt.Errorf("spill: %s: key %x appended after %x", f.f.Name(), key, f.last)
		case c == 0:
			f.dups = true
		}
	}
	if len(key) > MaxRecord || len(value) > MaxRecord {
		return fmt.Errorf("spill: %s: record of %d+%d bytes", f.f.Name(), len(key), len(value))
	}
	if len(f.index) == 0 || f.size-f.index[len(f.index)-1].off >= indexEvery {
		start := len(f.indexKeys)
		f.indexKeys = append(f.indexKeys, key...)
		f.index = append(f.index, indexEntry{start: start, end: len(f.indexKeys), off: f.size})
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
	r, err := f.NewReader()
	if err != nil {
		return err
	}
	r.Seek(from)
	for n := 0; r.Next(); n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(r.Key(), r.Value()); err != nil {
			return err
		}
	}
	return r.Err()
}

// Get returns a copy of the value of the first record of key; ok is false when
// there is none. Lookups reuse pooled Readers: a lookup reads at most an index
// step and a record, and a new Reader for each allocated a 64 KB read buffer
// (a join's million lookups, 64 GB churned through the heap).
func (f *File) Get(key []byte) (value []byte, ok bool, err error) {
	r, _ := f.readers.Get().(*Reader)
	if r == nil {
		if r, err = f.NewReader(); err != nil {
			return nil, false, err
		}
	}
	r.Seek(key)
	if r.Next() && bytes.Equal(r.Key(), key) {
		value, ok = bytes.Clone(r.Value()), true
	}
	if err := r.Err(); err != nil {
		return nil, false, err // the Reader is left to the collector: it keeps its error
	}
	f.readers.Put(r)
	return value, ok, nil
}

// Reader reads a File's records in order, from wherever Seek put it. Each
// goroutine needs its own.
type Reader struct {
	f     *File
	rr    *recordReader
	read  bool   // rr holds the record Next returned last
	again bool   // Next returns that record again (a Seek to its key)
	eof   bool   // rr reached the end
	from  []byte // records before it are skipped
	err   error
}

// NewReader starts a Reader at the first record.
func (f *File) NewReader() (*Reader, error) {
	if !f.finished {
		return nil, fmt.Errorf("spill: %s: read before Finish", f.f.Name())
	}
	r := &Reader{f: f}
	r.reset(0)
	return r, nil
}

// reset starts reading at off, reusing the read buffer.
func (r *Reader) reset(off int64) {
	if r.rr == nil {
		r.rr = &recordReader{name: r.f.f.Name()}
	}
	r.rr.reset(io.NewSectionReader(r.f.f, off, r.f.size-off), off)
	r.read, r.eof = false, false
}

// Seek makes Next return the records from the first whose key does not sort
// before key. Moving forward reads on from where the Reader is, or jumps
// ahead by the index when that is shorter; moving back starts again from the
// index. A Seek to the key of the record returned last returns it again
// without a read, where the File's keys are unique (a lookup repeated, as
// joins do).
func (r *Reader) Seek(key []byte) {
	r.again = r.read && !r.eof && !r.f.dups && bytes.Equal(key, r.rr.key)
	if r.again {
		r.from = append(r.from[:0], key...)
		return
	}
	idx := r.f.index
	// The last index entry whose key sorts before key: equal keys may begin
	// in the block before the first one whose key is key.
	i := sort.Search(len(idx), func(i int) bool { return bytes.Compare(r.f.indexKey(i), key) >= 0 })
	off := int64(0)
	if i > 0 {
		off = idx[i-1].off
	}
	if r.eof || off > r.rr.off || (r.read && bytes.Compare(key, r.rr.key) <= 0) {
		r.reset(off)
	}
	r.from = append(r.from[:0], key...)
}

// Next moves to the next record; false at the end or on an error (Err).
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	if r.again {
		r.again = false
		return true
	}
	for {
		if err := r.rr.next(); err != nil {
			r.eof = true
			if !errors.Is(err, io.EOF) {
				r.err = err
			}
			return false
		}
		r.read = true
		if r.from == nil || bytes.Compare(r.rr.key, r.from) >= 0 {
			return true
		}
	}
}

// Key and Value are the current record's, valid until the next call of Next
// or Seek.
func (r *Reader) Key() []byte   { return r.rr.key }
func (r *Reader) Value() []byte { return r.rr.val }

// Err is what stopped Next, nil at a clean end.
func (r *Reader) Err() error { return r.err }

// Close removes the file; it must not be used after.
func (f *File) Close() error {
	f.f.Close()
	if err := os.Remove(f.f.Name()); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}
