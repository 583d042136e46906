package bkdisk

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Journal layout (docs/formats.md §11.2, JournalChannel / Journal).
const (
	JournalMagic = "BKLG"
	// Journal format versions: V1 has no header; V2–V4 an 8-byte one ("BKLG" +
	// version); V5+ pad the header to a 512-byte sector and may hold padding records.
	JournalV1            = 1
	JournalV5            = 5
	JournalCurrent       = 6 // what bookies write by default
	journalVersionHeader = 8
	JournalSectorSize    = 512
	// paddingMask is the length field of a padding record (V5+).
	paddingMask = -0x100
)

// Meta-record entry ids (BookieImpl): a journal record with one of these entryIds
// carries ledger state, not an entry.
const (
	MetaLedgerKey   = -0x1000
	MetaFence       = -0x2000
	MetaForceLedger = -0x4000
	MetaExplicitLAC = -0x8000
)

// RecordKind says what a journal record holds.
type RecordKind string

const (
	RecordEntry       RecordKind = "entry"
	RecordLedgerKey   RecordKind = "ledger-key"
	RecordFence       RecordKind = "fence"
	RecordForceLedger RecordKind = "force-ledger"
	RecordExplicitLAC RecordKind = "explicit-lac"
)

func recordKind(entryID int64) RecordKind {
	switch entryID {
	case MetaLedgerKey:
		return RecordLedgerKey
	case MetaFence:
		return RecordFence
	case MetaForceLedger:
		return RecordForceLedger
	case MetaExplicitLAC:
		return RecordExplicitLAC
	}
	return RecordEntry
}

// JournalRecord is one record of a journal.
type JournalRecord struct {
	Offset            int64 // of the record's int32 length field
	Kind              RecordKind
	LedgerID, EntryID int64
	Data              []byte // the record's bytes (a Frame for entries); valid only during the callback
}

// End is the offset just past the record (what lastMark's offset is compared to).
func (r JournalRecord) End() int64 { return r.Offset + 4 + int64(len(r.Data)) }

// JournalResult sums up one scan of a journal.
type JournalResult struct {
	Version    int32
	HeaderSize int64
	Records    int64
	// End is where the data ended: a length of 0, the end of the file, or damage.
	End      int64
	Problems []*FormatError
}

// ScanJournal reads a journal of size bytes from r and passes every record (entries
// and meta records) to fn in file order. Padding records are skipped; a length of 0
// ends the data. A cut-short record or a negative length is reported in Problems
// and ends the scan; a header of another format, an unknown version or an error
// from fn is returned.
func ScanJournal(file string, r io.Reader, size int64, fn func(JournalRecord) error) (JournalResult, error) {
	rd := newReader(file, r, size)
	res, err := readJournalHeader(rd)
	if err != nil {
		return res, err
	}
	var buf []byte
	for {
		res.End = rd.pos
		if rd.left() == 0 {
			return res, nil
		}
		at := rd.pos
		if rd.left() < 4 {
			if p := trailingBytes(rd, size); p != nil {
				res.Problems = append(res.Problems, p)
			}
			return res, nil
		}
		n, err := rd.int32()
		if err != nil {
			return res, err
		}
		switch {
		case n == 0:
			return res, nil
		case n == paddingMask && res.Version >= JournalV5:
			if p := skipPadding(rd, at); p != nil {
				res.Problems = append(res.Problems, p)
				return res, nil
			}
			continue
		case n < 0:
			res.Problems = append(res.Problems, formatErr(file, at, ErrBadSize, "record length %d is negative", n))
			return res, nil
		case int64(n) > rd.left():
			res.Problems = append(res.Problems, formatErr(file, at, ErrTruncated,
				"record length %d runs past the end of the file (%d bytes left): journal cut short", n, rd.left()))
			return res, nil
		case n < minEntrySize:
			res.Problems = append(res.Problems, formatErr(file, at, ErrBadSize, "record length %d is below the minimum %d", n, minEntrySize))
			return res, nil
		}
		if buf, err = rd.read(buf, int(n)); err != nil {
			return res, err
		}
		lid, eid := be64(buf), be64(buf[8:])
		res.Records++
		if err := fn(JournalRecord{Offset: at, Kind: recordKind(eid), LedgerID: lid, EntryID: eid, Data: buf}); err != nil {
			return res, err
		}
	}
}

func skipPadding(rd *reader, at int64) *FormatError {
	if rd.left() < 4 {
		return formatErr(rd.file, at, ErrTruncated, "padding record ends before its length")
	}
	n, err := rd.int32()
	if err != nil {
		return asFormatErr(rd, err)
	}
	if n < 0 || int64(n) > rd.left() {
		return formatErr(rd.file, at+4, ErrBadSize, "padding length %d (%d bytes left)", n, rd.left())
	}
	if err := rd.discard(int64(n)); err != nil {
		return asFormatErr(rd, err)
	}
	return nil
}

// readJournalHeader reads the header by version. Without the magic the journal is
// V1 (no header), as JournalChannel reads it.
func readJournalHeader(rd *reader) (JournalResult, error) {
	res := JournalResult{Version: JournalV1}
	if rd.size < 8 {
		return res, nil
	}
	b, err := rd.peek(8)
	if err != nil {
		return res, err
	}
	switch string(b[:4]) {
	case EntryLogMagic:
		return res, formatErr(rd.file, 0, ErrForeignHeader, "header %q is not %q%s", b[:4], JournalMagic, magicHint(b[:4]))
	case JournalMagic:
	default:
		return res, nil
	}
	v := be32(b[4:])
	if v < 2 || v > JournalCurrent {
		return res, formatErr(rd.file, 4, ErrUnknownVersion, "journal format version %d (known: 1 to %d)", v, JournalCurrent)
	}
	res.Version, res.HeaderSize = v, journalVersionHeader
	if v >= JournalV5 {
		res.HeaderSize = JournalSectorSize
	}
	if rd.size < res.HeaderSize {
		return res, formatErr(rd.file, 0, ErrTruncated, "journal of %d bytes is shorter than its %d-byte header", rd.size, res.HeaderSize)
	}
	return res, rd.discard(res.HeaderSize)
}

// JournalWriter writes a journal as a bookie does (fixtures and tests only).
type JournalWriter struct {
	w       io.Writer
	version int32
	pos     int64
}

// NewJournalWriter writes the header of version (1 to 6).
func NewJournalWriter(w io.Writer, version int32) (*JournalWriter, error) {
	if version < JournalV1 || version > JournalCurrent {
		return nil, fmt.Errorf("journal version %d: %w", version, ErrUnknownVersion)
	}
	j := &JournalWriter{w: w, version: version}
	if version == JournalV1 {
		return j, nil
	}
	size := journalVersionHeader
	if version >= JournalV5 {
		size = JournalSectorSize
	}
	h := make([]byte, size)
	copy(h, JournalMagic)
	binary.BigEndian.PutUint32(h[4:], uint32(version))
	return j, j.write(h)
}

func (j *JournalWriter) write(b []byte) error {
	_, err := j.w.Write(b)
	j.pos += int64(len(b))
	return err
}

// Offset is where the next record goes.
func (j *JournalWriter) Offset() int64 { return j.pos }

// Add appends a record (a stored entry, or a meta record) and returns its offset.
func (j *JournalWriter) Add(data []byte) (int64, error) {
	if len(data) < minEntrySize {
		return 0, fmt.Errorf("journal record of %d bytes: want at least %d", len(data), minEntrySize)
	}
	at := j.pos
	if err := j.write(binary.BigEndian.AppendUint32(nil, uint32(len(data)))); err != nil {
		return 0, err
	}
	return at, j.write(data)
}

// Pad writes a padding record to the next sector boundary, as a V5+ journal does
// after each flushed group (Journal.writePaddingBytes). No-op before V5.
func (j *JournalWriter) Pad() error {
	if j.version < JournalV5 {
		return nil
	}
	rem := int(j.pos % JournalSectorSize)
	if rem == 0 {
		return nil
	}
	n := JournalSectorSize - rem
	if n < 8 {
		n = JournalSectorSize - (8 - n)
	} else {
		n -= 8
	}
	b := make([]byte, 8+n)
	binary.BigEndian.PutUint32(b, uint32(u64(paddingMask)))
	binary.BigEndian.PutUint32(b[4:], uint32(n))
	return j.write(b)
}

// Close writes preallocated zeros: a reader stops at the first length 0.
func (j *JournalWriter) Close(zeros int) error {
	return j.write(make([]byte, zeros))
}

// MetaRecord builds a meta record: ledgerId, the meta entryId, then body (the
// int32-length-prefixed master key or LAC, nothing for a fence).
func MetaRecord(ledgerID, metaEntryID int64, body []byte) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(ledgerID))
	b = binary.BigEndian.AppendUint64(b, uint64(metaEntryID))
	if metaEntryID == MetaFence {
		return b
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...)
}

// LastMark is ledgers/current/lastMark: the journal position up to which
// everything is in ledger storage.
type LastMark struct {
	JournalID int64
	Offset    int64
}

// LastMarkSize is the size of the lastMark file.
const LastMarkSize = 16

// ParseLastMark reads a lastMark file's bytes.
func ParseLastMark(file string, b []byte) (LastMark, error) {
	if len(b) < LastMarkSize {
		return LastMark{}, formatErr(file, int64(len(b)), ErrTruncated, "lastMark has %d bytes, want %d", len(b), LastMarkSize)
	}
	m := LastMark{JournalID: be64(b), Offset: be64(b[8:])}
	if m.JournalID < 0 || m.Offset < 0 {
		return m, formatErr(file, 0, ErrBadSize, "lastMark journal %d offset %d is negative", m.JournalID, m.Offset)
	}
	return m, nil
}

// Bytes encodes m as the lastMark file holds it.
func (m LastMark) Bytes() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(m.JournalID))
	return binary.BigEndian.AppendUint64(b, uint64(m.Offset))
}

// Before reports whether the record at (journalID, end offset) is covered by the
// mark, i.e. already flushed to ledger storage.
func (m LastMark) Before(journalID, end int64) bool {
	return journalID < m.JournalID || (journalID == m.JournalID && end <= m.Offset)
}
