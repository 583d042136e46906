package zkdisk

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ledgermedic/ledgermedic/formats/jute"
)

// Txn types (ZooDefs.OpCode) that appear in logs.
const (
	OpCreate          = 1
	OpDelete          = 2
	OpSetData         = 5
	OpSetACL          = 7
	OpCheck           = 13
	OpMulti           = 14
	OpCreate2         = 15
	OpReconfig        = 16
	OpCreateContainer = 19
	OpDeleteContainer = 20
	OpCreateTTL       = 21
	OpCreateSession   = -10
	OpCloseSession    = -11
	OpError           = -1
)

// TxnHeader precedes every txn.
type TxnHeader struct {
	ClientID int64 // the session
	Cxid     int32
	Zxid     int64
	Time     int64 // ms since the epoch
	Type     int32
}

// Record is the body of a txn: one of the *Txn types below.
type Record interface{ txnType() int32 }

// CreateTxn is create, create2, createContainer and createTTL (Type says which).
// V0 marks the pre-3.3 layout without ParentCVersion.
type CreateTxn struct {
	Type           int32
	Path           string
	Data           []byte
	ACL            []ACL
	Ephemeral      bool
	ParentCVersion int32
	TTL            int64
	V0             bool
}

// DeleteTxn is delete and deleteContainer.
type DeleteTxn struct {
	Type int32
	Path string
}

// SetDataTxn is setData and reconfig; Version is the node's version after the write.
type SetDataTxn struct {
	Type    int32
	Path    string
	Data    []byte
	Version int32
}

// SetACLTxn changes a node's ACL; Version is the new aversion.
type SetACLTxn struct {
	Path    string
	ACL     []ACL
	Version int32
}

// CheckVersionTxn is a version check inside a multi (it changes nothing).
type CheckVersionTxn struct {
	Path    string
	Version int32
}

// ErrorTxn is a failed operation (alone, or a failed op inside a multi).
type ErrorTxn struct{ Err int32 }

// CreateSessionTxn opens a session.
type CreateSessionTxn struct{ TimeoutMs int32 }

// CloseSessionTxn ends a session; Paths are its ephemerals (3.6+; HasPaths false
// in older logs, whose closeSession has no record).
type CloseSessionTxn struct {
	Paths    []string
	HasPaths bool
}

// MultiTxn holds the sub-txns of one multi; each shares the header's zxid and time.
type MultiTxn struct{ Txns []Record }

// UnknownTxn is a txn type this reader does not decode; Raw is its record bytes.
type UnknownTxn struct {
	Type int32
	Raw  []byte
}

func (t *CreateTxn) txnType() int32        { return t.Type }
func (t *DeleteTxn) txnType() int32        { return t.Type }
func (t *SetDataTxn) txnType() int32       { return t.Type }
func (t *SetACLTxn) txnType() int32        { return OpSetACL }
func (t *CheckVersionTxn) txnType() int32  { return OpCheck }
func (t *ErrorTxn) txnType() int32         { return OpError }
func (t *CreateSessionTxn) txnType() int32 { return OpCreateSession }
func (t *CloseSessionTxn) txnType() int32  { return OpCloseSession }
func (t *MultiTxn) txnType() int32         { return OpMulti }
func (t *UnknownTxn) txnType() int32       { return t.Type }

// TxnDigest is the optional 3.6+ tree digest after a txn.
type TxnDigest struct {
	Version    int32
	TreeDigest int64
}

// Txn is one decoded log record. Offset is where its record (the checksum) starts.
type Txn struct {
	Offset int64
	Header TxnHeader
	Record Record // nil for types without a record
	Digest *TxnDigest
}

// LogReader streams the txns of one log file.
type LogReader struct {
	File   string
	Header FileHeader
	s      *fileReader
	closer io.Closer
	err    error
}

// OpenLog opens a txn log file. Close the reader when done.
func OpenLog(path string) (*LogReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	lr, err := NewLogReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	lr.closer = f
	return lr, nil
}

// NewLogReader reads the file header from r; name is used in errors. An empty
// file has no header: that is an ErrTruncated error at offset 0.
func NewLogReader(r io.Reader, name string) (*LogReader, error) {
	lr := &LogReader{File: name, s: newFileReader(r, name)}
	h, err := readFileHeader(lr.s, LogMagic)
	if err != nil {
		return nil, fileErr(err, name, 0)
	}
	lr.Header = h
	return lr, nil
}

// Close closes the file OpenLog opened.
func (l *LogReader) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}

// Offset is the byte offset of the next record.
func (l *LogReader) Offset() int64 { return l.s.offset() }

// Next returns the next txn. io.EOF is the clean end: EOF at a record boundary or
// a zero length (the preallocated zeros). A bad checksum (ErrChecksum), a record
// cut short (ErrTruncated) or an undecodable txn come back as a sticky
// *DecodeError whose Offset is the record's start.
func (l *LogReader) Next() (Txn, error) { return l.NextAfter(math.MinInt64) }

// NextAfter is Next for the first txn whose zxid is above after: the records
// before it are checked (checksum, end byte) but not decoded, as replay skips
// the txns a snapshot holds already (a log that spans the snapshot is mostly
// such txns).
func (l *LogReader) NextAfter(after int64) (Txn, error) {
	if l.err != nil {
		return Txn{}, l.err
	}
	t, err := l.next(after)
	if err != nil {
		l.err = err
	}
	return t, err
}

func (l *LogReader) next(after int64) (Txn, error) {
	s := l.s
	for {
		start := s.offset()
		t := Txn{Offset: start}
		if eof, err := s.AtEnd(); eof || err != nil {
			return t, eofOr(fileErr(err, l.File, 0))
		}
		head, err := s.Bytes(12, "record checksum and length")
		if err != nil {
			return t, recordErr(fileErr(err, l.File, 0), start)
		}
		crc, n := be64(head), be32(head[8:])
		if n == 0 {
			return t, io.EOF
		}
		if n < 0 {
			return t, s.errAt(start, "record length", fmt.Errorf("%w: negative length %d", ErrMalformed, n))
		}
		view, err := s.Bytes(int(n), "txn")
		if err != nil {
			return t, recordErr(fileErr(err, l.File, 0), start)
		}
		if sum := adlerUpdate(1, view); uint64(crc) != uint64(sum) {
			return t, s.errAt(start, "txn record", fmt.Errorf("%w: stored %#x, computed %#x", ErrChecksum, uint64(crc), sum))
		}
		// The TxnHeader's zxid: after clientId (8 bytes) and cxid (4).
		skip := len(view) >= 20 && be64(view[12:]) <= after
		var body []byte
		if !skip {
			body = s.keep(view) // the txn's values alias it, and outlive the window
		}
		eor, err := s.Bytes(1, "end-of-record byte")
		if err != nil {
			return t, recordErr(fileErr(err, l.File, 0), start)
		}
		if eor[0] != 'B' {
			return t, s.errAt(start, "end-of-record byte", fmt.Errorf("%w: %#x, want 0x42 (last transaction was partial)", ErrMalformed, eor[0]))
		}
		if skip {
			continue
		}
		if err := decodeTxn(&t, body, start+12, l.File); err != nil {
			return t, err
		}
		return t, nil
	}
}

// recordErr reports a read error against the record's start offset, where replay
// stops.
func recordErr(err error, start int64) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return &DecodeError{File: de.File, Offset: start, What: fmt.Sprintf("txn record (failed at offset %d reading %s)", de.Offset, de.What), Err: de.Err}
	}
	return err
}

// DecodeTxnBytes decodes one txn's bytes (TxnHeader, record, optional digest) as
// they sit in a log record; base is their file offset, for errors.
func DecodeTxnBytes(b []byte, file string, base int64) (Txn, error) {
	t := Txn{Offset: base - 12}
	err := decodeTxn(&t, b, base, file)
	return t, err
}

func decodeTxn(t *Txn, b []byte, base int64, file string) error {
	return fileErr(readTxn(t, jute.NewReader(b)), file, base)
}

func readTxn(t *Txn, d *jute.Reader) error {
	h := &t.Header
	var err error
	if h.ClientID, err = d.Int64("txn header clientId"); err != nil {
		return err
	}
	if h.Cxid, err = d.Int32("txn header cxid"); err != nil {
		return err
	}
	if h.Zxid, err = d.Int64("txn header zxid"); err != nil {
		return err
	}
	if h.Time, err = d.Int64("txn header time"); err != nil {
		return err
	}
	if h.Type, err = d.Int32("txn header type"); err != nil {
		return err
	}
	if t.Record, err = decodeRecord(d, h.Type, true); err != nil {
		return err
	}
	// 3.6+: a TxnDigest may follow; ZooKeeper reads it when the bytes are there.
	if d.Left() >= 12 {
		var dg TxnDigest
		dg.Version, _ = d.Int32("txn digest version")
		dg.TreeDigest, _ = d.Int64("txn digest")
		t.Digest = &dg
	}
	if d.Left() != 0 {
		return d.Malformed("txn", "%d unexpected bytes after the txn (type %d)", d.Left(), h.Type)
	}
	return nil
}

// decodeRecord decodes the record of a txn of type typ. top is false inside a
// multi, where the record is the whole buffer and no digest follows.
func decodeRecord(d *jute.Reader, typ int32, top bool) (Record, error) {
	switch typ {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL:
		return decodeCreate(d, typ, top)
	case OpDelete, OpDeleteContainer:
		p, err := d.String("delete path")
		return &DeleteTxn{Type: typ, Path: p}, err
	case OpSetData, OpReconfig:
		r := &SetDataTxn{Type: typ}
		var err error
		if r.Path, err = d.String("setData path"); err != nil {
			return nil, err
		}
		if r.Data, err = d.Buffer("setData data"); err != nil {
			return nil, err
		}
		r.Version, err = d.Int32("setData version")
		return r, err
	case OpSetACL:
		r := &SetACLTxn{}
		var err error
		if r.Path, err = d.String("setACL path"); err != nil {
			return nil, err
		}
		if r.ACL, err = readACLs(d, "setACL acl"); err != nil {
			return nil, err
		}
		r.Version, err = d.Int32("setACL version")
		return r, err
	case OpCheck:
		r := &CheckVersionTxn{}
		var err error
		if r.Path, err = d.String("check path"); err != nil {
			return nil, err
		}
		r.Version, err = d.Int32("check version")
		return r, err
	case OpError:
		e, err := d.Int32("error code")
		return &ErrorTxn{Err: e}, err
	case OpCreateSession:
		to, err := d.Int32("createSession timeout")
		return &CreateSessionTxn{TimeoutMs: to}, err
	case OpCloseSession:
		return decodeCloseSession(d, top)
	case OpMulti:
		if !top {
			return nil, d.Malformed("multi", "multi nested in a multi")
		}
		return decodeMulti(d)
	}
	n := d.Left()
	if top && n >= 12 {
		n -= 12 // assume a digest follows, as ZooKeeper would
	}
	raw, err := d.Bytes(n, "unknown txn")
	return &UnknownTxn{Type: typ, Raw: raw}, err
}

func decodeCreate(d *jute.Reader, typ int32, top bool) (Record, error) {
	r := &CreateTxn{Type: typ}
	var err error
	if r.Path, err = d.String("create path"); err != nil {
		return nil, err
	}
	if r.Data, err = d.Buffer("create data"); err != nil {
		return nil, err
	}
	if r.ACL, err = readACLs(d, "create acl"); err != nil {
		return nil, err
	}
	if typ == OpCreate || typ == OpCreate2 {
		if r.Ephemeral, err = d.Bool("create ephemeral"); err != nil {
			return nil, err
		}
		// CreateTxnV0 (very old logs) ends here: ZooKeeper falls back on EOF.
		if d.Left() < 4 {
			r.V0 = true
			return r, nil
		}
	}
	if r.ParentCVersion, err = d.Int32("create parentCVersion"); err != nil {
		return nil, err
	}
	if typ == OpCreateTTL {
		r.TTL, err = d.Int64("create ttl")
	}
	return r, err
}

func decodeCloseSession(d *jute.Reader, top bool) (Record, error) {
	// Pre-3.6 closeSession has no record; with a digest alone 12 bytes remain.
	if d.Left() == 0 || (top && d.Left() == 12) {
		return &CloseSessionTxn{}, nil
	}
	paths, err := d.Strings("closeSession paths")
	if err != nil {
		return nil, err
	}
	if paths == nil {
		paths = []string{} // a null vector: the record is there, with no paths
	}
	return &CloseSessionTxn{HasPaths: true, Paths: paths}, nil
}

func decodeMulti(d *jute.Reader) (Record, error) {
	n, err := d.Count("multi txns", 8)
	if err != nil {
		return nil, err
	}
	m := &MultiTxn{Txns: make([]Record, 0, n)}
	for range n {
		typ, err := d.Int32("multi sub-txn type")
		if err != nil {
			return nil, err
		}
		sub, err := d.Record("multi sub-txn data")
		if err != nil {
			return nil, err
		}
		rec, err := decodeRecord(sub, typ, false)
		if err != nil {
			return nil, err
		}
		if sub.Left() != 0 {
			return nil, sub.Malformed("multi sub-txn", "%d unexpected bytes after sub-txn type %d", sub.Left(), typ)
		}
		m.Txns = append(m.Txns, rec)
	}
	return m, nil
}
