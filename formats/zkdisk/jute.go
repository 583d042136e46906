// Package zkdisk reads ZooKeeper's on-disk files (docs/formats.md §8): snapshots
// (version-2/snapshot.<zxid>) and transaction logs (version-2/log.<zxid>), both in
// jute's big-endian binary encoding (read with formats/jute), and replays them:
// into a tree of nodes in memory (Load), or as a stream of nodes and changes for
// a reader that sorts them by path and folds each path (Stream, Folder).
//
// Every decoder streams: a snapshot of millions of nodes is read node by node, and
// no length read from a file allocates more than the bytes that are really there.
// Errors are *DecodeError, naming the file and the byte offset.
package zkdisk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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

// fileReader reads a ZooKeeper file with the one jute reader (formats/jute) as a
// stream: a window that refills, so a snapshot of millions of nodes is read node
// by node. Its failures are *jute.Error until fileErr names the file.
type fileReader struct {
	*jute.Reader
	file string
	slab []byte // small values are cut from it (one allocation per many nodes)
}

// streamWindow is the read window, enlarged only for a longer value.
const streamWindow = 256 << 10

func newFileReader(r io.Reader, file string) *fileReader {
	return &fileReader{Reader: jute.NewStreamReader(r, streamWindow), file: file}
}

func (f *fileReader) offset() int64 { return int64(f.Offset()) }

func (f *fileReader) errAt(off int64, what string, err error) error {
	return &DecodeError{File: f.file, Offset: off, What: what, Err: err}
}

// buffer reads a jute buffer (null: nil) into memory the caller keeps: small
// values are cut from a shared slab, larger ones get their own allocation.
func (f *fileReader) buffer(field string) ([]byte, error) {
	b, err := f.Buffer(field)
	if err != nil || b == nil {
		return nil, err
	}
	return f.keep(b), nil
}

// keep copies b out of the window.
func (f *fileReader) keep(b []byte) []byte {
	n := len(b)
	if n == 0 {
		return []byte{} // empty, not null
	}
	if n > 4<<10 {
		return bytes.Clone(b)
	}
	if len(f.slab) < n {
		f.slab = make([]byte, 64<<10)
	}
	out := f.slab[:n:n]
	f.slab = f.slab[n:]
	copy(out, b)
	return out
}

// adlerHash is hash/adler32's Adler-32 computed by adlerUpdate (AVX2 where the
// CPU has it), for the seals of a streamed snapshot.
type adlerHash struct{ sum uint32 }

func newAdler() *adlerHash { return &adlerHash{sum: 1} }

func (a *adlerHash) Write(p []byte) (int, error) { a.sum = adlerUpdate(a.sum, p); return len(p), nil }
func (a *adlerHash) Sum32() uint32               { return a.sum }
func (a *adlerHash) Reset()                      { a.sum = 1 }
func (a *adlerHash) Size() int                   { return 4 }
func (a *adlerHash) BlockSize() int              { return 4 }
func (a *adlerHash) Sum(b []byte) []byte         { return binary.BigEndian.AppendUint32(b, a.sum) }

// fileErr turns a failure of the jute reader into a *DecodeError of the file, at
// base plus the reader's offset (base 0 for a file's own stream reader).
func fileErr(err error, file string, base int64) error {
	var je *jute.Error
	if !errors.As(err, &je) {
		return err
	}
	kind := je.Err
	switch {
	case errors.Is(je, jute.ErrTruncated):
		kind = ErrTruncated
	case errors.Is(je, jute.ErrMalformed):
		kind = ErrMalformed
	}
	return &DecodeError{File: file, Offset: base + int64(je.Offset), What: je.Field, Err: fmt.Errorf("%w: %s", kind, je.Detail)}
}

func readACLs(r *jute.Reader, what string) ([]ACL, error) {
	n, err := r.Count(what, 12)
	if err != nil {
		return nil, err
	}
	out := make([]ACL, 0, r.Prealloc(n))
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
