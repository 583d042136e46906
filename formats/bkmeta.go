package formats

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// LedgerMetadataVersionKey opens every BookKeeper ledger metadata value
// (LedgerMetadataSerDe); the text version and a newline follow.
const LedgerMetadataVersionKey = "BookieMetadataFormatVersion\t"

// LedgerMetadataFormatVersion is the only version we read and write: binary
// protobuf, BookKeeper 4.9 onwards.
const LedgerMetadataFormatVersion = 3

// maxVersionDigits is BookKeeper's MAX_VERSION_DIGITS: readHeader gives up when
// the newline is not among the first 10 bytes after the version key.
const maxVersionDigits = 10

// DecodeLedgerMetadata reads a /ledgers/... node value: the version line,
// then a varint-delimited LedgerMetadataFormat. Like BookKeeper's
// parseDelimitedFrom, bytes after the delimited message are ignored.
func DecodeLedgerMetadata(b []byte) (*bkpb.LedgerMetadataFormat, error) {
	version, off, err := readLedgerMetadataHeader(b)
	if err != nil {
		return nil, err
	}
	if version != LedgerMetadataFormatVersion {
		return nil, fmt.Errorf("ledger metadata: unsupported metadata format version %d (only %d is supported): %w",
			version, LedgerMetadataFormatVersion, ErrUnsupportedVersion)
	}
	n, vlen := protowire.ConsumeVarint(b[off:])
	if vlen < 0 {
		return nil, fmt.Errorf("ledger metadata: offset %d: message length varint: %w", off, protowire.ParseError(vlen))
	}
	off += vlen
	if n > math.MaxInt32 || int(n) > len(b)-off {
		return nil, fmt.Errorf("ledger metadata: offset %d: message length %d exceeds the %d bytes left: %w",
			off-vlen, n, len(b)-off, ErrTruncated)
	}
	m := new(bkpb.LedgerMetadataFormat)
	if err := unmarshal.Unmarshal(b[off:off+int(n)], m); err != nil {
		return nil, fmt.Errorf("ledger metadata: offset %d: %w", off, err)
	}
	return m, nil
}

// readLedgerMetadataHeader returns the text version and the offset after its newline.
func readLedgerMetadataHeader(b []byte) (version, off int, err error) {
	for i := range len(LedgerMetadataVersionKey) {
		if i >= len(b) {
			return 0, 0, fmt.Errorf("ledger metadata: header ends at byte %d, want %q: %w", i, LedgerMetadataVersionKey, ErrTruncated)
		}
		if b[i] != LedgerMetadataVersionKey[i] {
			return 0, 0, fmt.Errorf("ledger metadata: header corrupt at byte %d: got 0x%02x, want %q", i, b[i], LedgerMetadataVersionKey[i])
		}
	}
	start := len(LedgerMetadataVersionKey)
	// Like readHeader, look at no more than maxVersionDigits bytes, newline included.
	for i := start; i < len(b) && i-start < maxVersionDigits; i++ {
		if b[i] != '\n' {
			continue
		}
		text := string(b[start:i])
		v, err := strconv.Atoi(text)
		if err != nil || v < 0 {
			return 0, 0, fmt.Errorf("ledger metadata: offset %d: version %q is not a number", start, text)
		}
		return v, i + 1, nil
	}
	return 0, 0, fmt.Errorf("ledger metadata: offset %d: no newline within %d bytes after the version key", start, maxVersionDigits)
}

// OpenedLedgerMetadata is m as a writer first creates it: OPEN, lastEntryId -1,
// length 0 (the Java client's invariant for an open ledger, LedgerMetadataImpl).
func OpenedLedgerMetadata(m *bkpb.LedgerMetadataFormat) *bkpb.LedgerMetadataFormat {
	o := proto.Clone(m).(*bkpb.LedgerMetadataFormat)
	o.State = bkpb.LedgerMetadataFormat_OPEN.Enum()
	o.LastEntryId = proto.Int64(-1)
	o.Length = proto.Int64(0)
	return o
}

// EncodeLedgerMetadata writes m in format version 3, as BookKeeper does.
func EncodeLedgerMetadata(m *bkpb.LedgerMetadataFormat) ([]byte, error) {
	body, err := marshal.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("ledger metadata: %w", err)
	}
	out := make([]byte, 0, len(LedgerMetadataVersionKey)+2+protowire.SizeVarint(uint64(len(body)))+len(body))
	out = append(out, LedgerMetadataVersionKey...)
	out = strconv.AppendInt(out, LedgerMetadataFormatVersion, 10)
	out = append(out, '\n')
	out = protowire.AppendVarint(out, uint64(len(body)))
	return append(out, body...), nil
}

// CustomMetadata returns a ledger's custom metadata value as a string, e.g.
// "pulsar/managed-ledger" or "pulsar/schemaId".
func CustomMetadata(m *bkpb.LedgerMetadataFormat, key string) (string, bool) {
	for _, kv := range m.GetCustomMetadata() {
		if kv.GetKey() == key {
			return string(kv.GetValue()), true
		}
	}
	return "", false
}

// SetCustomMetadata replaces the value of key in place or appends it.
func SetCustomMetadata(m *bkpb.LedgerMetadataFormat, key, value string) {
	for _, kv := range m.CustomMetadata {
		if kv.GetKey() == key {
			kv.Value = []byte(value)
			return
		}
	}
	m.CustomMetadata = append(m.CustomMetadata, &bkpb.LedgerMetadataFormatCMetadataMapEntry{
		Key: proto.String(key), Value: []byte(value),
	})
}
