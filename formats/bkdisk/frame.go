// Package bkdisk reads (and, for fixtures, writes) the files a BookKeeper bookie
// keeps on disk: entry logs (<hex>.log), journals (<hex>.txn), the lastMark file,
// and the BookKeeper entry frame stored in both (docs/formats.md §11).
//
// The layouts follow the upstream source as docs/formats.md §11 records it; the tests
// run on files real BookKeeper 4.17.4 bookies wrote (testdata/bookkeeper) and on bytes
// built from the description (for damage no bookie writes on purpose).
//
// Every reader streams (no whole-file loads) and checks every size against the bytes
// left; bad bytes give a *FormatError naming the file and offset, never a panic.
package bkdisk

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/ledgermedic/ledgermedic/formats/crc32c"
)

// FrameHeaderSize is the fixed part of a stored BookKeeper entry: ledgerId,
// entryId, lastAddConfirmed, ledgerLength (int64 each, big-endian).
const FrameHeaderSize = 32

// minEntrySize is upstream's MIN_SANE_ENTRY_SIZE: ledgerId and entryId.
const minEntrySize = 16

// DigestType is a ledger's digest type (LedgerMetadataFormat.DigestType names).
type DigestType string

const (
	DigestCRC32  DigestType = "CRC32"
	DigestHMAC   DigestType = "HMAC"
	DigestCRC32C DigestType = "CRC32C"
	DigestDummy  DigestType = "DUMMY"
)

// DetectOrder is the order Detect tries digest types: Pulsar's default first, so a
// CRC32C ledger costs one checksum pass.
var DetectOrder = []DigestType{DigestCRC32C, DigestCRC32, DigestHMAC}

// ErrUnknownDigest: a digest type name that is not one of the four above.
var ErrUnknownDigest = errors.New("unknown digest type")

// Width is the digest's size on disk.
func (t DigestType) Width() (int, error) {
	switch t {
	case DigestCRC32C:
		return 4, nil
	case DigestCRC32:
		return 8, nil // a long holding the unsigned 32-bit value
	case DigestHMAC:
		return sha1.Size, nil
	case DigestDummy:
		return 0, nil
	}
	return 0, fmt.Errorf("%w %q", ErrUnknownDigest, string(t))
}

// Frame is one stored BookKeeper entry split into its fields. Digest and Payload
// alias the bytes given to ParseFrame.
type Frame struct {
	LedgerID, EntryID int64
	LastAddConfirmed  int64
	LedgerLength      int64 // cumulative, including this entry
	Digest            []byte
	Payload           []byte // what a BookKeeper client read returns
}

// ParseFrame splits b (one stored entry) for digest type t.
func ParseFrame(b []byte, t DigestType) (Frame, error) {
	w, err := t.Width()
	if err != nil {
		return Frame{}, err
	}
	if len(b) < FrameHeaderSize+w {
		return Frame{}, fmt.Errorf("entry frame: %d bytes, want at least %d (header + %s digest): %w",
			len(b), FrameHeaderSize+w, t, ErrTruncated)
	}
	return Frame{
		LedgerID:         be64(b[0:]),
		EntryID:          be64(b[8:]),
		LastAddConfirmed: be64(b[16:]),
		LedgerLength:     be64(b[24:]),
		Digest:           b[FrameHeaderSize : FrameHeaderSize+w],
		Payload:          b[FrameHeaderSize+w:],
	}, nil
}

// Verify reports whether b's digest is right for type t (password: HMAC only).
// DUMMY carries no digest and always verifies.
func Verify(b []byte, t DigestType, password []byte) bool {
	w, err := t.Width()
	if err != nil || len(b) < FrameHeaderSize+w {
		return false
	}
	hdr, got, payload := b[:FrameHeaderSize], b[FrameHeaderSize:FrameHeaderSize+w], b[FrameHeaderSize+w:]
	switch t {
	case DigestCRC32C:
		c := crc32.Update(crc32.Checksum(hdr, crc32c.Table), crc32c.Table, payload)
		return binary.BigEndian.Uint32(got) == c
	case DigestCRC32:
		c := crc32.Update(crc32.ChecksumIEEE(hdr), crc32.IEEETable, payload)
		return binary.BigEndian.Uint64(got) == uint64(c)
	case DigestHMAC:
		return hmac.Equal(got, macSum(password, hdr, payload))
	}
	return true // DUMMY
}

// Detect returns the first type of DetectOrder whose digest verifies b (HMAC with
// password), or "" when none does. A DUMMY ledger cannot be told apart from damage.
func Detect(b []byte, password []byte) DigestType {
	for _, t := range DetectOrder {
		if Verify(b, t, password) {
			return t
		}
	}
	return ""
}

// BuildFrame writes a stored entry as a BookKeeper client sends it.
func BuildFrame(t DigestType, password []byte, ledgerID, entryID, lac, length int64, payload []byte) ([]byte, error) {
	w, err := t.Width()
	if err != nil {
		return nil, err
	}
	b := make([]byte, FrameHeaderSize, FrameHeaderSize+w+len(payload))
	binary.BigEndian.PutUint64(b[0:], uint64(ledgerID))
	binary.BigEndian.PutUint64(b[8:], uint64(entryID))
	binary.BigEndian.PutUint64(b[16:], uint64(lac))
	binary.BigEndian.PutUint64(b[24:], uint64(length))
	hdr := bytes.Clone(b)
	switch t {
	case DigestCRC32C:
		b = binary.BigEndian.AppendUint32(b, crc32.Update(crc32.Checksum(hdr, crc32c.Table), crc32c.Table, payload))
	case DigestCRC32:
		b = binary.BigEndian.AppendUint64(b, uint64(crc32.Update(crc32.ChecksumIEEE(hdr), crc32.IEEETable, payload)))
	case DigestHMAC:
		b = append(b, macSum(password, hdr, payload)...)
	}
	return append(b, payload...), nil
}

// MacKey is the HMAC-SHA1 key of a ledger: SHA-1("mac" ‖ password), as
// MacDigestManager.genDigest("mac", passwd) derives it.
func MacKey(password []byte) []byte {
	h := sha1.New()
	h.Write([]byte("mac"))
	h.Write(password)
	return h.Sum(nil)
}

func macSum(password, hdr, payload []byte) []byte {
	m := hmac.New(sha1.New, MacKey(password))
	m.Write(hdr)
	m.Write(payload)
	return m.Sum(nil)
}

func be64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }
func be32(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

// u64 converts at run time, so negative constants (ledger -1) can be encoded.
func u64(v int64) uint64 { return uint64(v) }
