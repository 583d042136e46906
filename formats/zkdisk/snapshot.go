package zkdisk

import (
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/ledgermedic/ledgermedic/formats/jute"
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
	s        *fileReader
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
	sr := &SnapshotReader{File: name, s: newFileReader(r, name), ACLs: map[int64][]ACL{}}
	sr.s.SumTo(newAdler())
	if err := sr.readHead(); err != nil {
		return nil, fileErr(err, name, 0)
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
	n, err := s.Int32("session count")
	if err != nil {
		return err
	}
	// Counts are not trusted for allocation: elements are appended as read (and
	// a negative count is none, as DataTree's deserializer reads it).
	for i := int32(0); i < n; i++ {
		var ss Session
		if ss.ID, err = s.Int64("session id"); err != nil {
			return err
		}
		if ss.TimeoutMs, err = s.Int32("session timeout"); err != nil {
			return err
		}
		r.Sessions = append(r.Sessions, ss)
	}
	m, err := s.Int32("ACL cache count")
	if err != nil {
		return err
	}
	for i := int32(0); i < m; i++ {
		ref, err := s.Int64("ACL ref")
		if err != nil {
			return err
		}
		if r.ACLs[ref], err = readACLs(s.Reader, "ACL"); err != nil {
			return err
		}
	}
	return nil
}

func readFileHeader(s *fileReader, magic int32) (FileHeader, error) {
	var h FileHeader
	var err error
	if h.Magic, err = s.Int32("file header magic"); err != nil {
		return h, err
	}
	if h.Magic != magic {
		return h, s.errAt(0, "file header", fmt.Errorf("%w: magic %#08x, want %#08x", ErrBadMagic, uint32(h.Magic), uint32(magic)))
	}
	if h.Version, err = s.Int32("file header version"); err != nil {
		return h, err
	}
	if h.Version != 2 {
		return h, s.errAt(4, "file header", fmt.Errorf("%w: format version %d, want 2", ErrUnsupported, h.Version))
	}
	h.DBID, err = s.Int64("file header dbid")
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
		err = fileErr(err, r.File, 0)
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
	path, err := s.String("node path")
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
	b, err := s.Bytes(snapRecordFixed, "node ACL ref and stat")
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
	if je, ok := err.(*jute.Error); ok {
		je.Field += " of " + path
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
	if eof, err := r.s.AtEnd(); eof || err != nil {
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
	if eof, err := r.s.AtEnd(); eof || err != nil {
		return eofOr(err)
	}
	if r.trailer.LastProcessedZxid, err = r.s.Int64("lastProcessedZxid"); err != nil {
		return err
	}
	if err := r.seal(3); err != nil {
		return err
	}
	r.trailer.Seals = 3
	off := r.s.offset()
	if eof, err := r.s.AtEnd(); !eof || err != nil {
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
	if d.Zxid, err = s.Int64("digest zxid"); err != nil {
		return nil, err
	}
	if d.Version, err = s.Int32("digest version"); err != nil {
		return nil, err
	}
	if d.Version < 2 {
		d.DigestHex, err = s.String("digest")
	} else {
		d.Digest, err = s.Int64("digest")
	}
	return &d, err
}

// seal reads int64 Adler-32 of everything before it, then the string "/".
func (r *SnapshotReader) seal(i int) error {
	s := r.s
	want := s.Sum32()
	off := s.offset()
	what := fmt.Sprintf("seal %d", i)
	got, err := s.Int64(what)
	if err != nil {
		return err
	}
	if uint64(got) != uint64(want) {
		return s.errAt(off, what, fmt.Errorf("%w: stored %#x, computed %#x", ErrChecksum, uint64(got), want))
	}
	off = s.offset()
	slash, err := s.String(what + " marker")
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

// snapshotImage is a whole plain snapshot file in memory, scanned once for the
// tree loader; node paths and data alias buf, which is never written. It
// handles well-formed files only: on anything unexpected scan reports false and
// the caller reads the file again with SnapshotReader, whose errors name the
// offset and cause. Reading the file whole spares a copy of every value and an
// allocation per path, and lets the seals' Adler-32 run on another core.
type snapshotImage struct {
	buf      []byte
	sessions []Session
	// recs are the nodes in file order, decoded by the scan while each record
	// is in the cache (one pass over the file).
	recs   []rec
	newest int64              // the latest node ctime/mtime
	owners map[int64][]string // ephemeral nodes by session
	sum    *prefixAdler
	seals  [][2]int64 // offset and stored value of each seal, checked by sealsOK
	off    int
	// avail bytes of buf hold the file; with feed, a reader is still filling
	// the rest (see feed.go).
	avail int
	feed  *fileFeed
	// Each node's last path component, copied side by side: sorting siblings
	// by name then reads a few MB that stay in cache, not the whole file.
	nameBuf []byte
	nameEnd []int32
}

// names is each node's last path component ("" for the root).
func (im *snapshotImage) names() []string {
	out := make([]string, len(im.nameEnd))
	start := 0
	for i, end := range im.nameEnd {
		if end := int(end); end > start {
			out[i] = unsafe.String(&im.nameBuf[start], end-start)
			start = end
		}
	}
	return out
}

// snapRecordFixed is a node's ACL ref and StatPersisted after its data.
const snapRecordFixed = 8 + 60

func (im *snapshotImage) take(n int) ([]byte, bool) {
	if n < 0 || (im.avail-im.off < n && !im.await(im.off+n)) {
		return nil, false
	}
	b := im.buf[im.off : im.off+n : im.off+n]
	im.off += n
	return b, true
}

func (im *snapshotImage) i32() (int32, bool) {
	b, ok := im.take(4)
	if !ok {
		return 0, false
	}
	return be32(b), true
}

func (im *snapshotImage) i64() (int64, bool) {
	b, ok := im.take(8)
	if !ok {
		return 0, false
	}
	return be64(b), true
}

// str is a jute string (null reads as ""), aliasing buf.
func (im *snapshotImage) str() (string, bool) {
	n, ok := im.i32()
	if !ok || n == -1 {
		return "", ok
	}
	b, ok := im.take(int(n))
	if !ok || len(b) == 0 {
		return "", ok
	}
	return unsafe.String(&b[0], len(b)), true
}

// scan checks the layout SnapshotReader checks (header, sessions, ACL cache,
// nodes, seals and trailer) and indexes the nodes; pt learns their parents.
func (im *snapshotImage) scan(pt *parentTracker) bool {
	magic, ok1 := im.i32()
	version, ok2 := im.i32()
	_, ok3 := im.i64()
	if !ok1 || !ok2 || !ok3 || magic != SnapMagic || version != 2 {
		return false
	}
	n, ok := im.i32()
	for i := int32(0); ok && i < n; i++ {
		var s Session
		s.ID, ok = im.i64()
		if ok {
			s.TimeoutMs, ok = im.i32()
		}
		im.sessions = append(im.sessions, s)
	}
	if !ok || !im.skipACLs() {
		return false
	}
	im.owners = map[int64][]string{}
	for {
		at := im.off
		p, dlen, ok := im.nodeHead()
		if !ok {
			return false
		}
		plen := im.off - at - 8 // 0 for the root, stored as "" (or null)
		if p == "/" {
			im.off -= 4 // not a node: the end marker, followed by the seal
			return im.trailer()
		}
		if p == "" {
			p = "/"
		}
		if dlen < -1 {
			return false
		}
		b, ok := im.take(max(int(dlen), 0) + snapRecordFixed)
		if !ok {
			return false
		}
		r := recOf(at, plen, b, int(dlen))
		im.newest = max(im.newest, r.Stat.Mtime, r.Stat.Ctime)
		if o := r.Stat.EphemeralOwner; KindOf(o) == Ephemeral {
			im.owners[o] = append(im.owners[o], p)
		}
		if n := len(im.recs); n == 1024 || (n > 1024 && n == cap(im.recs)) {
			im.reserve()
		}
		im.recs = append(im.recs, r)
		slash := strings.LastIndexByte(p, '/')
		im.nameBuf = append(im.nameBuf, p[slash+1:]...)
		im.nameEnd = append(im.nameEnd, int32(len(im.nameBuf)))
		pt.add(p, slash)
	}
}

// nodeHead reads a node's path and data length (or the end marker "/" and
// the 4 bytes after it); when both are in buf already, without going through
// take for each.
func (im *snapshotImage) nodeHead() (p string, dlen int32, ok bool) {
	at, buf := im.off, im.buf[:im.avail]
	if at+4 <= len(buf) {
		if n := int(be32(buf[at:])); n >= 0 && at+8+n <= len(buf) {
			if n > 0 {
				p = unsafe.String(&buf[at+4], n)
			}
			im.off = at + 8 + n
			return p, be32(buf[at+4+n:]), true
		}
	}
	if p, ok = im.str(); ok {
		dlen, ok = im.i32()
	}
	return p, dlen, ok
}

// reserve sizes the per-node slices for the rest of the file from the
// average size of the nodes so far (and a quarter more), so they grow about
// once instead of doubling their way up (88 bytes a node).
func (im *snapshotImage) reserve() {
	per := max(im.off/len(im.recs), 76)
	more := (len(im.buf)-im.off)/per + (len(im.buf)-im.off)/per/4
	im.recs = slices.Grow(im.recs, more)
	im.nameEnd = slices.Grow(im.nameEnd, more)
	im.nameBuf = slices.Grow(im.nameBuf, more*(len(im.nameBuf)/len(im.recs)+1))
}

// sealsOK reports whether every seal holds the Adler-32 of the bytes before it.
func (im *snapshotImage) sealsOK() bool {
	for _, s := range im.seals {
		if uint64(s[1]) != uint64(im.sum.at(int(s[0]))) {
			return false
		}
	}
	return true
}

// recOf is the rec of a node whose path of plen bytes was read at off and
// whose record after the data length dlen (checked by the scan) is b.
func recOf(off, plen int, b []byte, dlen int) rec {
	r := rec{path: uint32(off + 4), plen: uint32(plen), data: uint32(off + 4 + plen + 4), dlen: int32(dlen)}
	b = b[max(dlen, 0):][:snapRecordFixed]
	r.ACLRef = be64(b)
	r.Stat = Stat{
		Czxid: be64(b[8:]), Mzxid: be64(b[16:]), Ctime: be64(b[24:]), Mtime: be64(b[32:]),
		Version: be32(b[40:]), Cversion: be32(b[44:]), Aversion: be32(b[48:]),
		EphemeralOwner: be64(b[52:]), Pzxid: be64(b[60:]),
	}
	return r
}

func (im *snapshotImage) skipACLs() bool {
	m, ok := im.i32()
	for i := int32(0); ok && i < m; i++ {
		var k int32
		if _, ok = im.i64(); ok {
			k, ok = im.i32()
		}
		ok = ok && k >= -1
		for j := int32(0); ok && j < k; j++ {
			if _, ok = im.i32(); ok {
				if _, ok = im.str(); ok {
					_, ok = im.str()
				}
			}
		}
	}
	return ok
}

// trailer checks seal 1 and the optional 3.6+ and 3.9 parts, as readTrailer.
func (im *snapshotImage) trailer() bool {
	if !im.seal() {
		return false
	}
	if im.atEnd() {
		return true
	}
	_, ok1 := im.i64()
	dv, ok2 := im.i32()
	if !ok1 || !ok2 {
		return false
	}
	var ok bool
	if dv < 2 {
		_, ok = im.str()
	} else {
		_, ok = im.i64()
	}
	if !ok || !im.seal() {
		return false
	}
	if im.atEnd() {
		return true
	}
	if _, ok := im.i64(); !ok || !im.seal() {
		return false
	}
	return im.atEnd()
}

// seal reads an int64 Adler-32 of everything before it (checked later, by
// sealsOK, so the sum has time to finish on its own core), then the string "/".
func (im *snapshotImage) seal() bool {
	off := im.off
	got, ok := im.i64()
	if !ok {
		return false
	}
	im.seals = append(im.seals, [2]int64{int64(off), got})
	slash, ok := im.i32()
	if !ok || slash != 1 {
		return false
	}
	b, ok := im.take(1)
	return ok && b[0] == '/'
}

// prefixAdler computes, on its own goroutine, the Adler-32 of each 1 MiB-aligned
// prefix of buf, so a seal near the end of a large snapshot is checked by
// summing only the bytes after the last boundary.
type prefixAdler struct {
	buf    []byte
	prefix []uint32 // prefix[k] = Adler-32 of buf[:k<<20]
	done   chan struct{}
	stop   atomic.Bool
}

const adlerBlock = 1 << 20

func startPrefixAdler(buf []byte) *prefixAdler {
	pa := &prefixAdler{buf: buf, prefix: make([]uint32, len(buf)/adlerBlock+1), done: make(chan struct{})}
	go func() {
		defer close(pa.done)
		pa.prefix[0] = 1
		for k := 1; k < len(pa.prefix) && !pa.stop.Load(); k++ {
			pa.prefix[k] = adlerUpdate(pa.prefix[k-1], buf[(k-1)*adlerBlock:k*adlerBlock])
		}
	}()
	return pa
}

// at is the Adler-32 of buf[:off].
func (pa *prefixAdler) at(off int) uint32 {
	<-pa.done
	k := off / adlerBlock
	if pa.stop.Load() {
		k = 0
	}
	return adlerUpdate(pa.prefix[k], pa.buf[k*adlerBlock:off])
}

// halt stops the goroutine early when the scan gave up.
func (pa *prefixAdler) halt() {
	pa.stop.Store(true)
	<-pa.done
}

// adlerChunk is the most adlerAVX2 sums at once (512 blocks of 32 bytes).
const adlerChunk = 16 << 10

// adlerUpdate continues an Adler-32 over p (RFC 1950: s1 = 1 + sum of the
// bytes, s2 = sum of the successive s1 values, both mod 65521): with AVX2, 32
// bytes per step, the bytes of a chunk of n adding n*s1 + sum of
// (n-i)*p[i] to s2; the rest (and every byte without AVX2) by adlerSWAR.
func adlerUpdate(sum uint32, p []byte) uint32 {
	const mod = 65521
	if haveAdlerAVX2 && len(p) >= 32 {
		s1, s2 := uint64(sum&0xffff), uint64(sum>>16)
		for len(p) >= 32 {
			n := min(len(p), adlerChunk) &^ 31
			a, b := adlerAVX2(p[:n])
			s2 = (s2 + uint64(n)*s1 + b) % mod
			s1 = (s1 + a) % mod
			p = p[n:]
		}
		sum = uint32(s2<<16 | s1)
	}
	return adlerSWAR(sum, p)
}

// adlerSWAR continues an Adler-32 over p in portable code. Eight bytes
// b0..b7 at a time: s2 += 8*s1 + 8*b0 + 7*b1 + ... + 1*b7 and s1 += b0+...+b7,
// the byte sums taken by multiplying 16-bit lanes (no lane can carry into
// another), which runs about three times as fast as a byte at a time. The
// sums are 64-bit, so they are reduced once per 64 KiB instead of per 5552
// bytes.
func adlerSWAR(sum uint32, p []byte) uint32 {
	const (
		mod   = 65521
		lanes = 0x00ff00ff00ff00ff
		ones  = 0x0001000100010001
		wEven = 8<<48 | 6<<32 | 4<<16 | 2 // weights of b0, b2, b4, b6
		wOdd  = 7<<48 | 5<<32 | 3<<16 | 1 // weights of b1, b3, b5, b7
	)
	s1, s2 := uint64(sum&0xffff), uint64(sum>>16)
	for len(p) > 0 {
		q := p[:min(len(p), 64<<10)]
		p = p[len(q):]
		// Four words at a time: byte n of 32 weighs 32-n = 8*(3-k) + (8-j)
		// for byte j of word k, so the lanes of the four words are summed
		// first (E, O: at most 1020 each) and the multiplies are done once;
		// T weighs each word's lanes by 3-k (at most 3060). No lane sum can
		// reach 65536, so none carries into the next.
		for len(q) >= 32 {
			x0, x1 := binary.LittleEndian.Uint64(q), binary.LittleEndian.Uint64(q[8:])
			x2, x3 := binary.LittleEndian.Uint64(q[16:]), binary.LittleEndian.Uint64(q[24:])
			e0, o0 := x0&lanes, (x0>>8)&lanes
			e1, o1 := x1&lanes, (x1>>8)&lanes
			e2, o2 := x2&lanes, (x2>>8)&lanes
			e3, o3 := x3&lanes, (x3>>8)&lanes
			even, odd := e0+e1+e2+e3, o0+o1+o2+o3
			t := 3*(e0+o0) + 2*(e1+o1) + (e2 + o2)
			s2 += s1<<5 + ((t*ones)>>48)<<3 + (even*wEven)>>48 + (odd*wOdd)>>48
			s1 += ((even + odd) * ones) >> 48
			q = q[32:]
		}
		for len(q) >= 8 {
			x := binary.LittleEndian.Uint64(q)
			even, odd := x&lanes, (x>>8)&lanes
			s2 += s1<<3 + (even*wEven)>>48 + (odd*wOdd)>>48
			s1 += ((even + odd) * ones) >> 48
			q = q[8:]
		}
		for _, c := range q {
			s1 += uint64(c)
			s2 += s1
		}
		s1 %= mod
		s2 %= mod
	}
	return uint32(s2<<16 | s1)
}
