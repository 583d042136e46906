package schemaid

import (
	"encoding/binary"
	"fmt"
	"math"
)

// EncodePulsarVersion is the 8-byte big-endian schema_version.
func EncodePulsarVersion(v int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, versionLen), uint64(v))
}

// EncodeExternalValue is `0xFF | id`, the PIP-420 value schema id.
func EncodeExternalValue(id []byte) []byte {
	return append([]byte{MagicValue}, id...)
}

// EncodeExternalKV is `0xFE | i32 len | key | i32 len | value`, the PIP-420
// key/value schema id. Ids longer than math.MaxInt32 cannot be encoded; use
// ID.Encode to get an error for them.
func EncodeExternalKV(key, value []byte) []byte {
	return appendKV([]byte{MagicKeyValue}, key, value)
}

// EncodeRustKV is `0xFE | u32 len | key | value`, the key/value schema id as
// streamnative/pulsar-rs writes it (no value length). It reads back as the
// Java layout when value opens with 4 bytes equal to the length of the rest
// (see ID.Encode).
func EncodeRustKV(key, value []byte) []byte {
	dst := binary.BigEndian.AppendUint32([]byte{MagicKeyValue}, uint32(len(key)))
	dst = append(dst, key...)
	return append(dst, value...)
}

// EncodeLegacyKV is the magic-less `i32 len | key | i32 len | value` layout.
// It decodes back as kv-legacy only when key is not empty.
func EncodeLegacyKV(key, value []byte) []byte {
	return appendKV(nil, key, value)
}

// EncodeConfluent is `0x00 | i32 id`, the Confluent wire-format header.
func EncodeConfluent(id int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{MagicConfluent}, uint32(id))
}

// EncodeConfluentGUID is `0x01 | 16-byte GUID`.
func EncodeConfluentGUID(g [16]byte) []byte {
	return append([]byte{MagicConfluentGUID}, g[:]...)
}

func appendKV(dst, key, value []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// Encode writes id back to bytes from its typed fields. For every ID that
// Decode returned, Encode gives back exactly Raw. Kinds with no typed form
// (unknown, pulsar-version-legacy) return a copy of Raw. It fails for an
// unrecognised Kind and for values Decode could never have produced.
func (id ID) Encode() ([]byte, error) {
	switch id.Kind {
	case KindEmpty:
		return []byte{}, nil
	case KindPulsarVersion:
		return EncodePulsarVersion(id.Version), nil
	case KindExternalValue:
		return EncodeExternalValue(id.Value), nil
	case KindExternalKV:
		if err := checkKVLens(id); err != nil {
			return nil, err
		}
		switch id.Layout {
		case LayoutJava, "":
			return EncodeExternalKV(id.Key, id.Value), nil
		case LayoutRust:
			b := EncodeRustKV(id.Key, id.Value)
			if javaValueAt(b, 5+len(id.Key)) {
				return nil, fmt.Errorf("schema id %s: a %s-layout value id opening with its own length would read back as %s",
					id.Kind, id.Layout, LayoutJava)
			}
			return b, nil
		}
		return nil, fmt.Errorf("schema id %s: unknown layout %q", id.Kind, id.Layout)
	case KindLegacyKV:
		if err := checkKVLens(id); err != nil {
			return nil, err
		}
		if len(id.Key) == 0 {
			return nil, fmt.Errorf("schema id %s: empty key id would not read back as %s", id.Kind, id.Kind)
		}
		return EncodeLegacyKV(id.Key, id.Value), nil
	case KindConfluentID:
		return EncodeConfluent(id.Confluent), nil
	case KindConfluentGUID:
		return EncodeConfluentGUID(id.GUID), nil
	case KindUnknown, KindPulsarVersionLegacy:
		if len(id.Raw) == 0 {
			return nil, fmt.Errorf("schema id %s: no raw bytes to encode", id.Kind)
		}
		return clone(id.Raw), nil
	}
	return nil, fmt.Errorf("schema id: unknown kind %q", id.Kind)
}

func checkKVLens(id ID) error {
	if len(id.Key) > math.MaxInt32 || len(id.Value) > math.MaxInt32 {
		return fmt.Errorf("schema id %s: key or value id longer than %d bytes", id.Kind, math.MaxInt32)
	}
	return nil
}
