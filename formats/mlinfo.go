package formats

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/golang/snappy"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// MagicManagedInfoMetadata opens the compressed form of ManagedLedgerInfo and
// ManagedCursorInfo node values (PIP-146/PIP-270, MetaStoreImpl).
const MagicManagedInfoMetadata = 0x4778

// Encoding says how a managed-ledger or cursor node value was stored, so a
// rewrite can store it the same way.
type Encoding struct {
	Compressed bool                 // value starts with the 0x4778 header
	Codec      mlpb.CompressionType // meaningful only when Compressed
}

// Plain is the encoding of a bare protobuf value.
var Plain = Encoding{}

// String returns "plain", "lz4", "zlib", "zstd", "snappy", or "none(0x4778)"
// for a header that declares no compression.
func (e Encoding) String() string {
	if !e.Compressed {
		return "plain"
	}
	if e.Codec == mlpb.CompressionType_NONE {
		return "none(0x4778)"
	}
	return codecName(e.Codec)
}

// ParseEncoding is the inverse of Encoding.String.
func ParseEncoding(s string) (Encoding, error) {
	switch strings.ToLower(s) {
	case "plain":
		return Plain, nil
	case "none(0x4778)":
		return Encoding{Compressed: true, Codec: mlpb.CompressionType_NONE}, nil
	}
	for c := mlpb.CompressionType_LZ4; c <= mlpb.CompressionType_SNAPPY; c++ {
		if strings.EqualFold(s, codecName(c)) {
			return Encoding{Compressed: true, Codec: c}, nil
		}
	}
	return Encoding{}, fmt.Errorf("unknown encoding %q (want plain, lz4, zlib, zstd, snappy or none(0x4778))", s)
}

// DecodeManagedLedgerInfo reads a /managed-ledgers/<name> value in any of its
// encodings: empty (an empty ManagedLedgerInfo), plain protobuf, or the
// compressed form.
func DecodeManagedLedgerInfo(b []byte) (*mlpb.ManagedLedgerInfo, Encoding, error) {
	info := new(mlpb.ManagedLedgerInfo)
	enc, err := decodeManagedInfo(b, new(mlpb.ManagedLedgerInfoMetadata), info)
	if err != nil {
		return nil, Encoding{}, fmt.Errorf("managed ledger info: %w", err)
	}
	return info, enc, nil
}

// EncodeManagedLedgerInfo writes info in the given encoding.
func EncodeManagedLedgerInfo(info *mlpb.ManagedLedgerInfo, enc Encoding) ([]byte, error) {
	b, err := encodeManagedInfo(info, enc)
	if err != nil {
		return nil, fmt.Errorf("managed ledger info: %w", err)
	}
	return b, nil
}

// DecodeManagedCursorInfo reads a cursor node value; cursors use the same
// 0x4778 header, with ManagedCursorInfoMetadata.
func DecodeManagedCursorInfo(b []byte) (*mlpb.ManagedCursorInfo, Encoding, error) {
	info := new(mlpb.ManagedCursorInfo)
	enc, err := decodeManagedInfo(b, new(mlpb.ManagedCursorInfoMetadata), info)
	if err != nil {
		return nil, Encoding{}, fmt.Errorf("managed cursor info: %w", err)
	}
	return info, enc, nil
}

// EncodeManagedCursorInfo writes info in the given encoding.
func EncodeManagedCursorInfo(info *mlpb.ManagedCursorInfo, enc Encoding) ([]byte, error) {
	b, err := encodeManagedInfo(info, enc)
	if err != nil {
		return nil, fmt.Errorf("managed cursor info: %w", err)
	}
	return b, nil
}

// managedInfoHeader is what ManagedLedgerInfoMetadata and
// ManagedCursorInfoMetadata have in common.
type managedInfoHeader interface {
	proto.Message
	GetCompressionType() mlpb.CompressionType
	GetUncompressedSize() int32
}

// decodeManagedInfo fills msg from b. Like MetaStoreImpl, a value whose
// compressed header or body cannot be read falls back to plain protobuf;
// since 0x47 is an invalid protobuf tag, that fallback fails too, and the
// error then reports the header problem.
func decodeManagedInfo(b []byte, hdr managedInfoHeader, msg proto.Message) (Encoding, error) {
	if peekU16(b, 0) != MagicManagedInfoMetadata {
		if err := unmarshalInfo(b, msg); err != nil {
			return Encoding{}, fmt.Errorf("plain protobuf: %w", err)
		}
		return Plain, nil
	}
	body, enc, herr := openManagedInfo(b, hdr)
	if herr == nil {
		if err := unmarshalInfo(body, msg); err != nil {
			return Encoding{}, fmt.Errorf("%s body: %w", enc, err)
		}
		return enc, nil
	}
	if err := unmarshal.Unmarshal(b, msg); err != nil {
		return Encoding{}, fmt.Errorf("%w (and not plain protobuf either: %v)", herr, err)
	}
	return Plain, nil
}

// unmarshalInfo is unmarshal.Unmarshal, by decodeMLInfoFast where it can.
func unmarshalInfo(b []byte, msg proto.Message) error {
	if info, ok := msg.(*mlpb.ManagedLedgerInfo); ok && decodeMLInfoFast(b, info) {
		return nil
	}
	return unmarshal.Unmarshal(b, msg)
}

// openManagedInfo parses the 0x4778 header and returns the uncompressed body.
func openManagedInfo(b []byte, hdr managedInfoHeader) ([]byte, Encoding, error) {
	n, err := readU32(b, 2, "compression header size")
	if err != nil {
		return nil, Encoding{}, fmt.Errorf("compressed header: %w", err)
	}
	start := 6
	if int32(n) < 0 || int(n) > len(b)-start {
		return nil, Encoding{}, fmt.Errorf("compressed header: offset 2: header size %d exceeds the %d bytes left: %w",
			int32(n), len(b)-start, ErrTruncated)
	}
	// Strict: a header missing a field must not be read as codec NONE.
	if h := b[start : start+int(n)]; !decodeHeaderFast(h, hdr) {
		if err := proto.Unmarshal(h, hdr); err != nil {
			return nil, Encoding{}, fmt.Errorf("compressed header: offset %d: %w", start, err)
		}
	}
	enc := Encoding{Compressed: true, Codec: hdr.GetCompressionType()}
	if _, known := mlpb.CompressionType_name[int32(enc.Codec)]; !known {
		return nil, Encoding{}, fmt.Errorf("compressed header: offset %d: unknown compression type %d", start, int32(enc.Codec))
	}
	bodyAt := start + int(n)
	body, err := decompress(int32(enc.Codec), b[bodyAt:], int(hdr.GetUncompressedSize()))
	if err != nil {
		return nil, Encoding{}, fmt.Errorf("compressed body at offset %d: %w", bodyAt, err)
	}
	return body, enc, nil
}

func encodeManagedInfo(msg proto.Message, enc Encoding) ([]byte, error) {
	if !enc.Compressed {
		return marshal.Marshal(msg)
	}
	buf := bodyBuffers.Get().(*[]byte)
	defer bodyBuffers.Put(buf)
	body, err := marshal.MarshalAppend((*buf)[:0], msg)
	if err != nil {
		return nil, err
	}
	*buf = body
	if len(body) > math.MaxInt32 {
		return nil, fmt.Errorf("%d bytes is too large to compress", len(body))
	}
	// The header, {compressionType = 1, uncompressedSize = 2} as proto.Marshal
	// writes ManagedLedgerInfoMetadata and ManagedCursorInfoMetadata, is built
	// here: two varints.
	var hdr [2 + 2*binary.MaxVarintLen64]byte
	h := protowire.AppendTag(hdr[:0], 1, protowire.VarintType)
	h = protowire.AppendVarint(h, uint64(int64(enc.Codec)))
	h = protowire.AppendTag(h, 2, protowire.VarintType)
	h = protowire.AppendVarint(h, uint64(len(body)))
	// Room for any codec's worst case (snappy's is the largest), so nothing regrows.
	out := make([]byte, 0, 6+len(h)+snappy.MaxEncodedLen(len(body)))
	out = binary.BigEndian.AppendUint16(out, MagicManagedInfoMetadata)
	out = binary.BigEndian.AppendUint32(out, uint32(len(h)))
	out = append(out, h...)
	return appendCompressed(out, int32(enc.Codec), body)
}

// bodyBuffers hold marshalled bodies on their way to a compressor.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// LedgerProperty returns a per-ledger property (PIP-404), e.g. firstEntryIndex.
func LedgerProperty(li *mlpb.ManagedLedgerInfo_LedgerInfo, key string) (string, bool) {
	return lookup(li.GetProperties(), key)
}

// SetLedgerProperty sets a per-ledger property, replacing the value of an
// existing key in place (so its unknown fields and position survive) or
// appending a new one.
func SetLedgerProperty(li *mlpb.ManagedLedgerInfo_LedgerInfo, key, value string) {
	li.Properties = set(li.Properties, key, value)
}

// MLProperty returns a managed-ledger property, e.g. the broker index under "index".
func MLProperty(info *mlpb.ManagedLedgerInfo, key string) (string, bool) {
	return lookup(info.GetProperties(), key)
}

// SetMLProperty sets a managed-ledger property like SetLedgerProperty.
func SetMLProperty(info *mlpb.ManagedLedgerInfo, key, value string) {
	info.Properties = set(info.Properties, key, value)
}

func lookup(kvs []*mlpb.KeyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue(), true
		}
	}
	return "", false
}

func set(kvs []*mlpb.KeyValue, key, value string) []*mlpb.KeyValue {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			kv.Value = proto.String(value)
			return kvs
		}
	}
	return append(kvs, newKeyValue(key, value))
}

// keyValue is a KeyValue with the two strings it points to, so that adding a
// property (back-fill adds one to nearly every ledger) is one allocation.
type keyValue struct {
	kv         mlpb.KeyValue
	key, value string
}

func newKeyValue(key, value string) *mlpb.KeyValue {
	b := &keyValue{key: key, value: value}
	b.kv.Key, b.kv.Value = &b.key, &b.value
	return &b.kv
}
