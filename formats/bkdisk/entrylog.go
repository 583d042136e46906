package bkdisk

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Entry log layout (docs/formats.md §11.1, DefaultEntryLogger / directentrylogger.Header).
const (
	EntryLogMagic      = "BKLO"
	EntryLogHeaderSize = 1024 // LOGFILE_HEADER_SIZE
	DirectHeaderSize   = 4096 // the direct-I/O logger's header
	// invalidLedgerID marks records scanners skip: the ledgers map, the direct
	// logger's fake padding record.
	invalidLedgerID int64 = -1
	// ledgersMapEntryID is the entryId of a ledgers-map batch.
	ledgersMapEntryID int64 = -2
	// ledgersMapBatch is the most ledgers one map batch holds.
	ledgersMapBatch = 10_000
	// ledgersMapFixed is a batch's bytes after the size field, before its pairs.
	ledgersMapFixed = 8 + 8 + 4
)

// EntryLogHeader is the header of an entry log.
type EntryLogHeader struct {
	Version          int32
	LedgersMapOffset int64 // 0: never closed, no map
	LedgersCount     int32
	// Direct: the direct-I/O logger's 4096-byte header (its fake padding record at
	// 1024 was seen), so entries start at 4096.
	Direct bool
}

// LogEntry is one entry found in an entry log.
type LogEntry struct {
	// Offset is where the entry's bytes begin (after their int32 size): the
	// position in BookKeeper's location (logId<<32 | offset).
	Offset            int64
	LedgerID, EntryID int64
	Data              []byte // the stored entry (a Frame); valid only during the callback
}

// LedgerBytes is one pair of a ledgers map: a ledger and its bytes in the log.
type LedgerBytes struct {
	LedgerID int64
	Bytes    int64
}

// EntryLogResult sums up one scan of an entry log.
type EntryLogResult struct {
	// Unflushed: the log has 0 bytes. A bookie creates the next log ahead of need
	// and writes its header only into the log's write buffer
	// (EntryLoggerAllocator.allocateNewLog), so the preallocated log, and a log
	// whose buffer a crash lost (its entries are in the journal), are empty: not
	// damage.
	Unflushed bool
	Header    EntryLogHeader
	Entries   int64
	// Map is the ledgers map of a closed log (nil when the log has none).
	Map []LedgerBytes
	// Problems are damage the scan stepped past or stopped at (a cut-short entry, a
	// bad ledgers map); entries before them were passed to fn.
	Problems []*FormatError
}

// LogID returns the id of an entry log or journal from its file name
// (<hex>.log, <hex>.txn), and false for any other name.
func LogID(name, ext string) (int64, bool) {
	hex, ok := strings.CutSuffix(name, ext)
	if !ok || hex == "" {
		return 0, false
	}
	id, err := strconv.ParseInt(hex, 16, 64)
	return id, err == nil && id >= 0
}

// ScanEntryLog reads an entry log of size bytes from r front to back and passes each
// entry to fn in file order. A closed log's entries end at its ledgers map, which
// is then read; a log that was never closed (map offset 0) is scanned to its end;
// a log of 0 bytes holds nothing yet (Unflushed).
// Like upstream's scanEntryLog, a size <= 0 is padding (one byte is skipped) and
// records of ledger -1 are skipped. Damage is reported in Problems; a header of
// another format, an unknown version or an error from fn is returned.
func ScanEntryLog(file string, r io.Reader, size int64, fn func(LogEntry) error) (EntryLogResult, error) {
	var res EntryLogResult
	if size == 0 {
		res.Unflushed = true
		return res, nil
	}
	rd := newReader(file, r, size)
	hdr, err := readEntryLogHeader(rd)
	if err != nil {
		return res, err
	}
	res.Header = hdr
	end := size
	if hdr.LedgersMapOffset != 0 {
		if hdr.LedgersMapOffset < EntryLogHeaderSize || hdr.LedgersMapOffset > size {
			res.Problems = append(res.Problems, formatErr(file, 8, ErrBadSize,
				"ledgers map offset %d is outside the entries (%d..%d); scanning the whole log", hdr.LedgersMapOffset, EntryLogHeaderSize, size))
			res.Header.LedgersMapOffset = 0
		} else {
			end = hdr.LedgersMapOffset
		}
	}
	var buf []byte
	first, inNegative := true, false
	for rd.pos < end {
		if err := rd.skipZeros(end); err != nil {
			return res, err
		}
		if end-rd.pos < 4 {
			if p := trailingBytes(rd, end); p != nil {
				res.Problems = append(res.Problems, p)
			}
			break
		}
		at := rd.pos
		n, err := rd.int32()
		if err != nil {
			return res, err
		}
		if n <= 0 { // padding: step one byte past where the size began
			if n < 0 && !inNegative {
				// Zeros are padding; a negative size is not something a writer leaves.
				res.Problems = append(res.Problems, formatErr(file, at, ErrBadSize, "entry size %d is negative (skipped byte by byte, as upstream scanners do)", n))
			}
			inNegative = n < 0 || inNegative
			rd.pos, rd.s = at+1, rd.s-3
			continue
		}
		inNegative = false
		if int64(n) > end-rd.pos {
			res.Problems = append(res.Problems, formatErr(file, at, ErrTruncated,
				"entry size %d runs past the end of the entries at %d (%d bytes left): log cut short", n, end, end-rd.pos))
			break
		}
		if n < minEntrySize {
			res.Problems = append(res.Problems, formatErr(file, at, ErrBadSize, "entry size %d is below the minimum %d", n, minEntrySize))
			if err := rd.discard(int64(n)); err != nil {
				return res, err
			}
			continue
		}
		if buf, err = rd.read(buf, int(n)); err != nil {
			return res, err
		}
		lid, eid := be64(buf), be64(buf[8:])
		if first && at == EntryLogHeaderSize && lid == invalidLedgerID && int64(n) == DirectHeaderSize-EntryLogHeaderSize-4 {
			res.Header.Direct = true
		}
		first = false
		if lid == invalidLedgerID {
			continue
		}
		res.Entries++
		if err := fn(LogEntry{Offset: at + 4, LedgerID: lid, EntryID: eid, Data: buf}); err != nil {
			return res, err
		}
	}
	if res.Header.LedgersMapOffset != 0 {
		if err := rd.discard(res.Header.LedgersMapOffset - rd.pos); err != nil {
			return res, err
		}
		m, p := readLedgersMap(rd, res.Header.LedgersCount)
		res.Map = m
		if p != nil {
			res.Problems = append(res.Problems, p)
		}
	}
	return res, nil
}

// readEntryLogHeader reads and checks the first 1024 bytes.
func readEntryLogHeader(rd *reader) (EntryLogHeader, error) {
	if rd.size < EntryLogHeaderSize {
		return EntryLogHeader{}, formatErr(rd.file, 0, ErrTruncated, "entry log of %d bytes is shorter than its %d-byte header", rd.size, EntryLogHeaderSize)
	}
	b, err := rd.peek(EntryLogHeaderSize)
	if err != nil {
		return EntryLogHeader{}, err
	}
	if string(b[:4]) != EntryLogMagic {
		return EntryLogHeader{}, formatErr(rd.file, 0, ErrForeignHeader, "header %q is not %q%s", b[:4], EntryLogMagic, magicHint(b[:4]))
	}
	h := EntryLogHeader{
		Version:          be32(b[4:]),
		LedgersMapOffset: be64(b[8:]),
		LedgersCount:     be32(b[16:]),
	}
	if h.Version != 0 && h.Version != 1 {
		return h, formatErr(rd.file, 4, ErrUnknownVersion, "entry log version %d (known: 0, 1)", h.Version)
	}
	if h.LedgersCount < 0 {
		return h, formatErr(rd.file, 16, ErrBadSize, "ledgers count %d is negative", h.LedgersCount)
	}
	return h, rd.discard(EntryLogHeaderSize)
}

// magicHint names the format a foreign header belongs to, when it is one of ours.
func magicHint(m []byte) string {
	switch string(m) {
	case JournalMagic:
		return " (this is a journal)"
	case EntryLogMagic:
		return " (this is an entry log)"
	}
	return ""
}

// trailingBytes reports fewer than 4 bytes before end that are not zeros.
func trailingBytes(rd *reader, end int64) *FormatError {
	at := rd.pos
	b, err := rd.peek(int(end - at))
	if err != nil {
		return asFormatErr(rd, err)
	}
	for _, c := range b {
		if c != 0 {
			return formatErr(rd.file, at, ErrTruncated, "%d bytes at the end are too few for an entry size", len(b))
		}
	}
	_ = rd.discard(int64(len(b)))
	return nil
}

// readLedgersMap reads the map's batches until count ledgers are read.
func readLedgersMap(rd *reader, count int32) ([]LedgerBytes, *FormatError) {
	m := make([]LedgerBytes, 0, min(int(count), ledgersMapBatch))
	for int32(len(m)) < count {
		at := rd.pos
		if rd.left() < 4+ledgersMapFixed {
			return m, formatErr(rd.file, at, ErrTruncated, "ledgers map ends after %d of %d ledgers", len(m), count)
		}
		n, err := rd.int32()
		if err != nil {
			return m, asFormatErr(rd, err)
		}
		if n < ledgersMapFixed || int64(n) > rd.left() || (n-ledgersMapFixed)%16 != 0 {
			return m, formatErr(rd.file, at, ErrBadSize, "ledgers map batch size %d (want 20 + 16*n, at most %d bytes left)", n, rd.left())
		}
		b, err := rd.read(nil, int(n))
		if err != nil {
			return m, asFormatErr(rd, err)
		}
		lid, eid, k := be64(b), be64(b[8:]), be32(b[16:])
		if lid != invalidLedgerID || eid != ledgersMapEntryID {
			return m, formatErr(rd.file, at, ErrBadSize, "ledgers map batch has ledger %d entry %d, want -1, -2", lid, eid)
		}
		if k < 0 || int64(k)*16 != int64(n-ledgersMapFixed) || int64(len(m))+int64(k) > int64(count) {
			return m, formatErr(rd.file, at+20, ErrBadSize, "ledgers map batch count %d does not fit its size %d or the header's count %d", k, n, count)
		}
		for i := range int(k) {
			p := b[ledgersMapFixed+16*i:]
			m = append(m, LedgerBytes{LedgerID: be64(p), Bytes: be64(p[8:])})
		}
	}
	return m, nil
}

func asFormatErr(rd *reader, err error) *FormatError {
	if fe, ok := err.(*FormatError); ok {
		return fe
	}
	return formatErr(rd.file, rd.pos, err, "read")
}

// EntryLogWriter writes an entry log as DefaultEntryLogger does (fixtures and tests:
// nothing here writes a bookie's files).
type EntryLogWriter struct {
	w       writerAt
	pos     int64
	ledgers []LedgerBytes // in first-seen order
	index   map[int64]int
}

type writerAt interface {
	io.Writer
	io.WriterAt
}

// NewEntryLogWriter writes the header (the 4096-byte direct-I/O header with its fake
// padding record when direct) to w.
func NewEntryLogWriter(w writerAt, direct bool) (*EntryLogWriter, error) {
	size := EntryLogHeaderSize
	if direct {
		size = DirectHeaderSize
	}
	h := make([]byte, size)
	copy(h, EntryLogMagic)
	binary.BigEndian.PutUint32(h[4:], 1)
	if direct {
		binary.BigEndian.PutUint32(h[EntryLogHeaderSize:], DirectHeaderSize-EntryLogHeaderSize-4)
		binary.BigEndian.PutUint64(h[EntryLogHeaderSize+4:], u64(invalidLedgerID)) // ledgerId -1: legacy scanners skip it
	}
	if _, err := w.Write(h); err != nil {
		return nil, err
	}
	return &EntryLogWriter{w: w, pos: int64(size), index: map[int64]int{}}, nil
}

// Add appends one stored entry (which begins with ledgerId, entryId) and returns
// the offset of its bytes.
func (l *EntryLogWriter) Add(data []byte) (int64, error) {
	if len(data) < minEntrySize {
		return 0, fmt.Errorf("entry of %d bytes: want at least %d", len(data), minEntrySize)
	}
	var sz [4]byte
	binary.BigEndian.PutUint32(sz[:], uint32(len(data)))
	if _, err := l.w.Write(sz[:]); err != nil {
		return 0, err
	}
	if _, err := l.w.Write(data); err != nil {
		return 0, err
	}
	off := l.pos + 4
	l.pos += 4 + int64(len(data))
	lid := be64(data)
	i, ok := l.index[lid]
	if !ok {
		i = len(l.ledgers)
		l.index[lid] = i
		l.ledgers = append(l.ledgers, LedgerBytes{LedgerID: lid})
	}
	l.ledgers[i].Bytes += 4 + int64(len(data))
	return off, nil
}

// Offset is where the next size field goes.
func (l *EntryLogWriter) Offset() int64 { return l.pos }

// Close appends the ledgers map and patches its offset and count into the header,
// as closing a log does. A log that is not closed keeps offset 0.
func (l *EntryLogWriter) Close() error {
	mapAt := l.pos
	for start := 0; start < len(l.ledgers); start += ledgersMapBatch {
		batch := l.ledgers[start:min(start+ledgersMapBatch, len(l.ledgers))]
		b := make([]byte, 0, 4+ledgersMapFixed+16*len(batch))
		b = binary.BigEndian.AppendUint32(b, uint32(ledgersMapFixed+16*len(batch)))
		b = binary.BigEndian.AppendUint64(b, u64(invalidLedgerID))
		b = binary.BigEndian.AppendUint64(b, u64(ledgersMapEntryID))
		b = binary.BigEndian.AppendUint32(b, uint32(len(batch)))
		for _, lb := range batch {
			b = binary.BigEndian.AppendUint64(b, uint64(lb.LedgerID))
			b = binary.BigEndian.AppendUint64(b, uint64(lb.Bytes))
		}
		if _, err := l.w.Write(b); err != nil {
			return err
		}
		l.pos += int64(len(b))
	}
	var h [12]byte
	binary.BigEndian.PutUint64(h[0:], uint64(mapAt))
	binary.BigEndian.PutUint32(h[8:], uint32(len(l.ledgers)))
	_, err := l.w.WriteAt(h[:], 8)
	return err
}
