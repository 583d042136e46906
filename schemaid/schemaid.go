// Package schemaid decodes and encodes the schema identifiers carried in a
// Pulsar MessageMetadata: the registry version in schema_version (field 16)
// and the external-registry id in schema_id (field 32, PIP-420), including the
// Kafka/Confluent forms. It does no I/O: bytes in, values out.
//
// The byte layouts and the rules for telling them apart are docs/formats.md §4.
// In short, the field the bytes came from decides first; within schema_id the
// magic byte decides (0xFF value id, 0xFE key/value id, 0x00 + exactly 4 bytes
// Confluent id, 0x01 + exactly 16 bytes Confluent GUID); otherwise the old
// magic-less key/value layout when its two lengths consume every byte exactly;
// otherwise the bytes are reported as unknown. Nothing is guessed.
//
// A 0xFE id comes in two layouts after its key (KVLayout): Java's, with a
// value length, and pulsar-rs's, without one. The Java layout is read when
// exactly 4+valueLen bytes follow the key and the length says so; otherwise the
// rest is the value id in the Rust layout.
//
// Decisions beyond the spec:
//   - A lone 0xFF decodes as an external value id with empty inner bytes.
//     Upstream (SchemaIdUtil.addMagicHeader) never writes it, but its
//     removeMagicHeader reads it back as an empty id, so we do the same and
//     say so in Reason rather than fail.
//   - The old key/value layout needs a positive key length (the spec's
//     "positive 4-byte length first"); the value length may be zero.
//   - A schema_version longer than 8 bytes is "pulsar-version-legacy"; one of
//     1..7 bytes is "unknown". Neither is an error.
package schemaid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Field names the MessageMetadata field some bytes came from. The values are
// the protobuf field numbers.
type Field int

const (
	FieldUnknown       Field = 0  // bare bytes, e.g. a CLI argument
	FieldSchemaVersion Field = 16 // MessageMetadata.schema_version
	FieldSchemaID      Field = 32 // MessageMetadata.schema_id (PIP-420)
)

func (f Field) String() string {
	switch f {
	case FieldUnknown:
		return "unknown"
	case FieldSchemaVersion:
		return "schema_version"
	case FieldSchemaID:
		return "schema_id"
	}
	return fmt.Sprintf("field(%d)", int(f))
}

// MarshalText makes Field render by name in JSON.
func (f Field) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// ParseField reads a CLI field hint: "version", "schema_version" or "16";
// "id", "schema_id" or "32"; "" or "unknown" or "any" for no hint.
func ParseField(s string) (Field, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "unknown", "any", "auto":
		return FieldUnknown, nil
	case "version", "schema_version", "schema-version", "16":
		return FieldSchemaVersion, nil
	case "id", "schema_id", "schema-id", "32":
		return FieldSchemaID, nil
	}
	return FieldUnknown, fmt.Errorf("unknown schema field %q (want version or id)", s)
}

// Kind says which layout an ID was read as.
type Kind string

const (
	KindEmpty               Kind = "empty"
	KindPulsarVersion       Kind = "pulsar-version"
	KindPulsarVersionLegacy Kind = "pulsar-version-legacy"
	KindExternalValue       Kind = "external-value" // 0xFF | value id
	KindExternalKV          Kind = "external-kv"    // 0xFE | i32 len | key | i32 len | value (or | value: KVLayout)
	KindConfluentID         Kind = "confluent-id"   // 0x00 | i32 id
	KindConfluentGUID       Kind = "confluent-guid" // 0x01 | 16-byte GUID
	KindLegacyKV            Kind = "kv-legacy"      // i32 len | key | i32 len | value, no magic
	KindUnknown             Kind = "unknown"
)

// KVLayout says how the value id of a 0xFE key/value schema_id is delimited.
// Both open with `0xFE | 4-byte big-endian keyLen | key`; they differ after the key.
type KVLayout string

const (
	// LayoutJava: `i32 valueLen | value`, as Java's KeyValue.generateKVSchemaId
	// (pulsar-client-api) writes it, then SchemaIdUtil.addMagicHeader.
	LayoutJava KVLayout = "java"
	// LayoutRust: the value id is every byte after the key, with no length, as
	// streamnative/pulsar-rs writes it (schema_id_util.rs, generate_kv_schema_id).
	LayoutRust KVLayout = "rust"
)

// Magic bytes that open a schema_id.
const (
	MagicValue         byte = 0xFF // PIP-420 value schema id
	MagicKeyValue      byte = 0xFE // PIP-420 key/value schema id
	MagicConfluent     byte = 0x00 // Confluent wire format, i32 id
	MagicConfluentGUID byte = 0x01 // Confluent wire format, 16-byte GUID
)

const (
	versionLen       = 8
	confluentLen     = 1 + 4
	confluentGUIDLen = 1 + 16
)

// ID is one decoded schema identifier. Only the fields that belong to Kind
// are set; Raw always holds the bytes it was decoded from.
type ID struct {
	Kind      Kind
	Version   int64    // pulsar-version
	Value     []byte   // external-value inner id; value id of a key/value id
	Key       []byte   // key id of a key/value id
	Layout    KVLayout // external-kv: how the value id was delimited
	Confluent int32    // confluent-id
	GUID      [16]byte // confluent-guid
	Raw       []byte   // the original bytes
	Reason    string   // why, for unknown and legacy kinds (and odd-but-valid cases)
}

// Reading is one interpretation of bare bytes: the field they would have
// come from and what they mean there.
type Reading struct {
	Field Field `json:"field"`
	ID    ID    `json:"id"`
}

var (
	// ErrMalformed matches every *DecodeError: bytes whose magic commits to a
	// layout they do not follow.
	ErrMalformed = errors.New("malformed schema id")
	// ErrTruncated: a length or fixed-size part runs past the end.
	ErrTruncated = errors.New("truncated")
	// ErrTrailingBytes: bytes left over after the layout is complete.
	ErrTrailingBytes = errors.New("trailing bytes")
	// ErrNegativeLength: an i32 length prefix is negative.
	ErrNegativeLength = errors.New("negative length")
	// ErrAmbiguous: bare bytes with no field hint fit more than one reading.
	ErrAmbiguous = errors.New("ambiguous schema id bytes")
	// ErrNotConfluent: a payload does not start with a Confluent header.
	ErrNotConfluent = errors.New("no Confluent header")
)

// DecodeError reports where committed bytes go wrong. errors.Is matches both
// ErrMalformed and the specific cause (ErrTruncated, ErrTrailingBytes,
// ErrNegativeLength, ErrNotConfluent).
type DecodeError struct {
	Offset int    // byte offset of the bad part, from the start of the input
	Err    error  // specific cause
	Detail string // what was expected there
}

func (e *DecodeError) Error() string { return "schema id: " + e.where() }

func (e *DecodeError) where() string {
	return fmt.Sprintf("byte offset %d: %v: %s", e.Offset, e.Err, e.Detail)
}

func (e *DecodeError) Unwrap() error { return e.Err }

func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

// Decode reads b as the content of field. The result never aliases b.
//
// The error is non-nil only for a 0xFE key/value id that does not follow its
// layout (a *DecodeError naming the byte offset), and for FieldUnknown bytes
// that fit several readings (ErrAmbiguous; use DecodeAll to see them).
// Everything else, however odd, decodes to a Kind, at worst KindUnknown.
func Decode(field Field, b []byte) (ID, error) {
	if len(b) == 0 {
		return ID{Kind: KindEmpty}, nil
	}
	switch field {
	case FieldSchemaVersion:
		return decodeVersion(clone(b)), nil
	case FieldSchemaID:
		return decodeSchemaID(clone(b))
	case FieldUnknown:
		return decodeBare(b)
	}
	return unknown(clone(b), fmt.Sprintf("unsupported field %d", int(field))), nil
}

// DecodeAll reads bare bytes whose field is unknown and returns every reading
// that fits, schema_version first, then schema_id. A reading fits when it is
// not KindUnknown and decodes without error; a legacy version fits (its Kind
// says so). Empty input gives one KindEmpty reading with FieldUnknown, as
// both fields read it alike. When nothing fits, the single reading is
// KindUnknown with FieldUnknown and a Reason saying why each field rejected it.
func DecodeAll(b []byte) []Reading {
	if len(b) == 0 {
		return []Reading{{Field: FieldUnknown, ID: ID{Kind: KindEmpty}}}
	}
	raw := clone(b)
	var out []Reading
	var why []string

	v := decodeVersion(raw)
	if v.Kind != KindUnknown {
		out = append(out, Reading{Field: FieldSchemaVersion, ID: v})
	} else {
		why = append(why, "as schema_version: "+v.Reason)
	}

	id, err := decodeSchemaID(raw)
	switch {
	case err != nil:
		why = append(why, "as schema_id: "+err.Error())
	case id.Kind == KindUnknown:
		why = append(why, "as schema_id: "+id.Reason)
	default:
		out = append(out, Reading{Field: FieldSchemaID, ID: id})
	}

	if len(out) == 0 {
		out = append(out, Reading{Field: FieldUnknown, ID: unknown(raw, strings.Join(why, "; "))})
	}
	return out
}

// decodeBare is Decode for FieldUnknown: the one reading that fits, or an
// error when there are several, so no reading is picked silently.
func decodeBare(b []byte) (ID, error) {
	rs := DecodeAll(b)
	if len(rs) == 1 {
		return rs[0].ID, nil
	}
	var names []string
	for _, r := range rs {
		names = append(names, fmt.Sprintf("%s as %s", r.ID, r.Field))
	}
	reason := "fits several readings: " + strings.Join(names, "; ")
	return unknown(rs[0].ID.Raw, reason), fmt.Errorf("%w: %s (give the field)", ErrAmbiguous, reason)
}

func decodeVersion(raw []byte) ID {
	switch {
	case len(raw) == versionLen:
		return ID{Kind: KindPulsarVersion, Version: int64(binary.BigEndian.Uint64(raw)), Raw: raw}
	case len(raw) > versionLen:
		return ID{Kind: KindPulsarVersionLegacy, Raw: raw,
			Reason: fmt.Sprintf("schema_version is %d bytes, not 8 (pre-2.4 format?)", len(raw))}
	}
	return unknown(raw, fmt.Sprintf("schema_version is %d bytes, want 8", len(raw)))
}

func decodeSchemaID(raw []byte) (ID, error) {
	switch raw[0] {
	case MagicValue:
		id := ID{Kind: KindExternalValue, Value: sub(raw, 1, len(raw)), Raw: raw}
		if len(raw) == 1 {
			id.Reason = "0xFF with an empty value id (upstream never writes this)"
		}
		return id, nil
	case MagicKeyValue:
		key, value, layout, err := splitExternalKV(raw)
		if err != nil {
			return unknown(raw, err.Error()), err
		}
		return ID{Kind: KindExternalKV, Key: key, Value: value, Layout: layout, Raw: raw}, nil
	case MagicConfluent:
		if len(raw) == confluentLen {
			return ID{Kind: KindConfluentID, Confluent: int32(binary.BigEndian.Uint32(raw[1:])), Raw: raw}, nil
		}
	case MagicConfluentGUID:
		if len(raw) == confluentGUIDLen {
			id := ID{Kind: KindConfluentGUID, Raw: raw}
			copy(id.GUID[:], raw[1:])
			return id, nil
		}
	}
	key, value, err := splitKV(raw, 0)
	if err == nil && len(key) > 0 {
		return ID{Kind: KindLegacyKV, Key: key, Value: value, Raw: raw}, nil
	}
	if err == nil {
		err = errors.New("key id length is 0")
	}
	return unknown(raw, unknownReason(raw, err)), nil
}

// unknownReason explains why schema_id bytes fit no layout; kvErr is why the
// magic-less key/value layout did not fit.
func unknownReason(raw []byte, kvErr error) string {
	var head string
	switch raw[0] {
	case MagicConfluent:
		head = fmt.Sprintf("0x00 (Confluent) needs exactly 4 more bytes, has %d", len(raw)-1)
	case MagicConfluentGUID:
		head = fmt.Sprintf("0x01 (Confluent GUID) needs exactly 16 more bytes, has %d", len(raw)-1)
	default:
		head = fmt.Sprintf("no magic byte (0x%02x)", raw[0])
	}
	why := kvErr.Error()
	var de *DecodeError
	if errors.As(kvErr, &de) {
		why = de.where()
	}
	return head + "; not the legacy key/value layout: " + why
}

// splitExternalKV reads a 0xFE key/value id: `0xFE | i32 keyLen | key`, then
// the Java layout `i32 valueLen | value` when exactly 4+valueLen bytes remain
// and the length says so, otherwise the Rust layout, where the rest is the
// value id. So a Rust-layout value id that happens to open with 4 bytes equal
// to the length of the rest reads as Java (docs/formats.md §4.3): the bytes
// cannot tell them apart, and Java is upstream's layout. Only a key length
// that does not fit is an error.
func splitExternalKV(raw []byte) (key, value []byte, layout KVLayout, err error) {
	key, off, err := readLenPrefixed(raw, 1, "key")
	if err != nil {
		return nil, nil, "", err
	}
	if javaValueAt(raw, off) {
		return key, sub(raw, off+4, len(raw)), LayoutJava, nil
	}
	return key, sub(raw, off, len(raw)), LayoutRust, nil
}

// javaValueAt says whether raw[off:] is exactly `i32 valueLen | value`.
func javaValueAt(raw []byte, off int) bool {
	rest := len(raw) - off
	return rest >= 4 && int64(int32(binary.BigEndian.Uint32(raw[off:]))) == int64(rest-4)
}

// splitKV reads `i32 keyLen | key | i32 valueLen | value` starting at off and
// requires it to end exactly at the end of raw. Offsets in errors count from
// the start of raw.
func splitKV(raw []byte, off int) (key, value []byte, err error) {
	key, off, err = readLenPrefixed(raw, off, "key")
	if err != nil {
		return nil, nil, err
	}
	value, off, err = readLenPrefixed(raw, off, "value")
	if err != nil {
		return nil, nil, err
	}
	if off != len(raw) {
		return nil, nil, &DecodeError{Offset: off, Err: ErrTrailingBytes,
			Detail: fmt.Sprintf("%d byte(s) after the value id", len(raw)-off)}
	}
	return key, value, nil
}

func readLenPrefixed(raw []byte, off int, what string) ([]byte, int, error) {
	if len(raw)-off < 4 {
		return nil, off, &DecodeError{Offset: off, Err: ErrTruncated,
			Detail: fmt.Sprintf("%s id length needs 4 bytes, %d left", what, len(raw)-off)}
	}
	n := int32(binary.BigEndian.Uint32(raw[off:]))
	if n < 0 {
		return nil, off, &DecodeError{Offset: off, Err: ErrNegativeLength,
			Detail: fmt.Sprintf("%s id length %d", what, n)}
	}
	start := off + 4
	if int64(n) > int64(len(raw)-start) {
		return nil, off, &DecodeError{Offset: off, Err: ErrTruncated,
			Detail: fmt.Sprintf("%s id length %d runs past the end (%d bytes left after offset %d)",
				what, n, len(raw)-start, start)}
	}
	end := start + int(n)
	return sub(raw, start, end), end, nil
}

func unknown(raw []byte, reason string) ID {
	return ID{Kind: KindUnknown, Raw: raw, Reason: reason}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// sub is raw[i:j] capped so an append by the caller cannot clobber Raw.
func sub(raw []byte, i, j int) []byte { return raw[i:j:j] }
