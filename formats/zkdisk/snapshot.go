package zkdisk

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// File magics (FileSnap / FileTxnLog headers).
const (
	SnapMagic = 0x5A4B534E // "ZKSN"
	LogMagic  = 0x5A4B4C47 // "ZKLG"
)

// Special ephemeralOwner values (EphemeralType): a container node, and the high
// byte marking a TTL node (the low 40 bits are the TTL in ms).
const (
	ContainerOwner = int64(-1 << 63)
	ttlMask        = int64(-1 << 56) // 0xff00000000000000
)

// FileHeader begins every snapshot and log.
type FileHeader struct {
	Magic   int32
	Version int32
	DBID    int64
}

// Session is one open session of a snapshot.
type Session struct {
	ID        int64
	TimeoutMs int32
}

// ACL is one access control entry.
type ACL struct {
	Perms  int32
	Scheme string
	ID     string
}

// Stat is StatPersisted: what a snapshot stores per node (no dataLength or
// numChildren: those are derived).
type Stat struct {
	Czxid, Mzxid, Ctime, Mtime  int64
	Version, Cversion, Aversion int32
	EphemeralOwner, Pzxid       int64
}

// NodeKind classifies a node by its ephemeralOwner.
type NodeKind uint8

const (
	Persistent NodeKind = iota
	Ephemeral
	Container
	TTL
)

func (k NodeKind) String() string {
	return [...]string{"persistent", "ephemeral", "container", "ttl"}[k]
}

// KindOf classifies an ephemeralOwner value.
func KindOf(owner int64) NodeKind {
	switch {
	case owner == 0:
		return Persistent
	case owner == ContainerOwner:
		return Container
	case owner&ttlMask == ttlMask:
		return TTL
	}
	return Ephemeral
}

// SnapNode is one node of a snapshot. Path is "/" for the root (stored as "").
// Data is nil when the node's data is null.
type SnapNode struct {
	Path   string
	Data   []byte
	ACLRef int64
	Stat   Stat
}

// ZxidDigest is the 3.6+ trailer: the tree digest as of Zxid.
type ZxidDigest struct {
	Zxid      int64
	Version   int32
	Digest    int64
	DigestHex string // digest versions < 2 store a hex string
}

// SnapshotTrailer is what follows the nodes: how many seals the file has (1: 3.5,
// 2: 3.6–3.8, 3: 3.9), and the optional digest and lastProcessedZxid.
type SnapshotTrailer struct {
	Seals             int
	Digest            *ZxidDigest
	LastProcessedZxid int64 // valid when Seals == 3
}

// SnapshotReader streams the nodes of one snapshot. The header, sessions and ACL
// cache are read by NewSnapshotReader; Next returns the nodes in file order
// (pre-order, children unsorted) and io.EOF once the end marker and every seal
// have been verified.
type SnapshotReader struct {
	File     string
	Header   FileHeader
	Sessions []Session
	ACLs     map[int64][]ACL
	s        *stream
	closer   io.Closer
	trailer  SnapshotTrailer
	done     bool
	err      error
}

// ParseSnapshotName returns the zxid of a snapshot file name ("snapshot.1a",
// "snapshot.1a.gz") and its compression suffix ("", "gz", "snappy").
func ParseSnapshotName(name string) (zxid int64, compression string, ok bool) {
	rest, found := strings.CutPrefix(name, "snapshot.")
	if !found {
		return 0, "", false
	}
	hexz, comp, _ := strings.Cut(rest, ".")
	if comp != "" && comp != "gz" && comp != "snappy" {
		return 0, "", false
	}
	z, err := strconv.ParseUint(hexz, 16, 64)
	if err != nil {
		return 0, "", false
	}
	return int64(z), comp, true
}

// ParseLogName returns the zxid of the first txn of a log file name ("log.1").
func ParseLogName(name string) (int64, bool) {
	rest, found := strings.CutPrefix(name, "log.")
	if !found {
		return 0, false
	}
	z, err := strconv.ParseUint(rest, 16, 64)
	return int64(z), err == nil
}

// OpenSnapshot opens a snapshot file (plain or .gz; .snappy is refused with
// ErrUnsupported). Close the reader when done.
func OpenSnapshot(path string) (*SnapshotReader, error) {
	base := path[strings.LastIndexByte(path, '/')+1:]
	_, comp, _ := ParseSnapshotName(base)
	if comp == "snappy" {
		return nil, &DecodeError{File: path, What: "open", Err: fmt.Errorf("%w: snappy-compressed snapshots are not supported (decompress it, or let ZooKeeper write a plain one)", ErrUnsupported)}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var r io.Reader = f
	if comp == "gz" {
		gz, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, &DecodeError{File: path, What: "gzip header", Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
		}
		r = gz
	}
	sr, err := NewSnapshotReader(r, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	sr.closer = f
	return sr, nil
}

// Close closes the file OpenSnapshot opened.
func (r *SnapshotReader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

// NewSnapshotReader reads the header, sessions and ACL cache from r; name is used
// in errors.
func NewSnapshotReader(r io.Reader, name string) (*SnapshotReader, error) {
	sr := &SnapshotReader{File: name, s: newStream(r, name), ACLs: map[int64][]ACL{}}
	if err := sr.readHead(); err != nil {
		return nil, err
	}
	return sr, nil
}

func (r *SnapshotReader) readHead() error {
	s := r.s
	h, err := readFileHeader(s, SnapMagic)
	if err != nil {
		return err
	}
	r.Header = h
	n, err := s.int32("session count")
	if err != nil {
		return err
	}
	// Counts are not trusted for allocation: elements are appended as read.
	for i := int32(0); i < n; i++ {
		var ss Session
		if ss.ID, err = s.int64("session id"); err != nil {
			return err
		}
		if ss.TimeoutMs, err = s.int32("session timeout"); err != nil {
			return err
		}
		r.Sessions = append(r.Sessions, ss)
	}
	m, err := s.int32("ACL cache count")
	if err != nil {
		return err
	}
	for i := int32(0); i < m; i++ {
		ref, err := s.int64("ACL ref")
		if err != nil {
			return err
		}
		off := s.offset()
		k, err := s.int32("ACL vector count")
		if err != nil {
			return err
		}
		if k < -1 {
			return s.errAt(off, "ACL vector count", fmt.Errorf("%w: %d", ErrMalformed, k))
		}
		var list []ACL
		for j := int32(0); j < k; j++ {
			var a ACL
			if a.Perms, err = s.int32("ACL perms"); err != nil {
				return err
			}
			if a.Scheme, err = s.ustring("ACL scheme"); err != nil {
				return err
			}
			if a.ID, err = s.ustring("ACL id"); err != nil {
				return err
			}
			list = append(list, a)
		}
		r.ACLs[ref] = list
	}
	return nil
}

func readFileHeader(s *stream, magic int32) (FileHeader, error) {
	var h FileHeader
	var err error
	if h.Magic, err = s.int32("file header magic"); err != nil {
		return h, err
	}
	if h.Magic != magic {
		return h, s.errAt(0, "file header", fmt.Errorf("%w: magic %#08x, want %#08x", ErrBadMagic, uint32(h.Magic), uint32(magic)))
	}
	if h.Version, err = s.int32("file header version"); err != nil {
		return h, err
	}
	if h.Version != 2 {
		return h, s.errAt(4, "file header", fmt.Errorf("%w: format version %d, want 2", ErrUnsupported, h.Version))
	}
	h.DBID, err = s.int64("file header dbid")
	return h, err
}

// Offset is the byte offset of the next unread byte.
func (r *SnapshotReader) Offset() int64 { return r.s.offset() }

// Trailer is valid once Next has returned io.EOF.
func (r *SnapshotReader) Trailer() SnapshotTrailer { return r.trailer }

// Next returns the next node, io.EOF after the last one once the seals check out,
// or a *DecodeError (sticky).
func (r *SnapshotReader) Next() (SnapNode, error) {
	if r.err != nil {
		return SnapNode{}, r.err
	}
	if r.done {
		return SnapNode{}, io.EOF
	}
	n, err := r.next()
	if err != nil {
		r.err = err
		if err == io.EOF {
			r.done, r.err = true, nil
		}
	}
	return n, err
}

func (r *SnapshotReader) next() (SnapNode, error) {
	s := r.s
	var n SnapNode
	path, err := s.ustring("node path")
	if err != nil {
		return n, err
	}
	if path == "/" {
		return n, r.readTrailer()
	}
	if path == "" {
		path = "/"
	}
	n.Path = path
	if n.Data, err = s.buffer("node data"); err != nil {
		return n, ofPath(err, path)
	}
	b, err := s.next(8+60, "node ACL ref and stat")
	if err != nil {
		return n, ofPath(err, path)
	}
	n.ACLRef = be64(b)
	b = b[8:]
	n.Stat = Stat{
		Czxid: be64(b), Mzxid: be64(b[8:]), Ctime: be64(b[16:]), Mtime: be64(b[24:]),
		Version: be32(b[32:]), Cversion: be32(b[36:]), Aversion: be32(b[40:]),
		EphemeralOwner: be64(b[44:]), Pzxid: be64(b[52:]),
	}
	return n, nil
}

// ofPath names the node in an error (built only on failure: the hot path
// allocates nothing per field).
func ofPath(err error, path string) error {
	if de, ok := err.(*DecodeError); ok {
		de.What += " of " + path
	}
	return err
}

func be64(b []byte) int64 {
	_ = b[7]
	return int64(uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7]))
}

func be32(b []byte) int32 {
	_ = b[3]
	return int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
}

// readTrailer checks seal 1, then the optional 3.6+ digest with seal 2 and the
// optional 3.9 lastProcessedZxid with seal 3. A file may end after any seal.
func (r *SnapshotReader) readTrailer() error {
	if err := r.seal(1); err != nil {
		return err
	}
	r.trailer.Seals = 1
	if eof, err := r.s.atEOF(); eof || err != nil {
		return eofOr(err)
	}
	d, err := r.readDigest()
	if err != nil {
		return err
	}
	if err := r.seal(2); err != nil {
		return err
	}
	r.trailer.Seals, r.trailer.Digest = 2, d
	if eof, err := r.s.atEOF(); eof || err != nil {
		return eofOr(err)
	}
	if r.trailer.LastProcessedZxid, err = r.s.int64("lastProcessedZxid"); err != nil {
		return err
	}
	if err := r.seal(3); err != nil {
		return err
	}
	r.trailer.Seals = 3
	off := r.s.offset()
	if eof, err := r.s.atEOF(); !eof || err != nil {
		if err != nil {
			return err
		}
		return r.s.errAt(off, "after seal 3", fmt.Errorf("%w: unexpected trailing bytes", ErrMalformed))
	}
	return io.EOF
}

func eofOr(err error) error {
	if err != nil {
		return err
	}
	return io.EOF
}

func (r *SnapshotReader) readDigest() (*ZxidDigest, error) {
	s := r.s
	var d ZxidDigest
	var err error
	if d.Zxid, err = s.int64("digest zxid"); err != nil {
		return nil, err
	}
	if d.Version, err = s.int32("digest version"); err != nil {
		return nil, err
	}
	if d.Version < 2 {
		d.DigestHex, err = s.ustring("digest")
	} else {
		d.Digest, err = s.int64("digest")
	}
	return &d, err
}

// seal reads int64 Adler-32 of everything before it, then the string "/".
func (r *SnapshotReader) seal(i int) error {
	s := r.s
	want := s.checksum()
	off := s.offset()
	what := fmt.Sprintf("seal %d", i)
	got, err := s.int64(what)
	if err != nil {
		return err
	}
	if uint64(got) != uint64(want) {
		return s.errAt(off, what, fmt.Errorf("%w: stored %#x, computed %#x", ErrChecksum, uint64(got), want))
	}
	off = s.offset()
	slash, err := s.ustring(what + " marker")
	if err != nil {
		return err
	}
	if slash != "/" {
		return s.errAt(off, what+" marker", fmt.Errorf("%w: %q, want \"/\"", ErrMalformed, slash))
	}
	return nil
}

// ReadSnapshotFile reads a whole snapshot: its nodes, sessions, ACLs and trailer.
// For large files prefer OpenSnapshot and Next.
func ReadSnapshotFile(path string) (*SnapshotReader, []SnapNode, error) {
	sr, err := OpenSnapshot(path)
	if err != nil {
		return nil, nil, err
	}
	defer sr.Close()
	var nodes []SnapNode
	for {
		n, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return sr, nodes, nil
		}
		if err != nil {
			return sr, nodes, err
		}
		nodes = append(nodes, n)
	}
}
