package formats

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

// EncodeSchemaVersion returns the 8-byte big-endian form a registry schema
// version takes in MessageMetadata.schema_version (docs/formats.md §4.1).
func EncodeSchemaVersion(v int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v))
}

// DecodeSchemaVersion reads MessageMetadata.schema_version. Only the 8-byte
// form is understood; other lengths (pre-2.4 brokers) wrap ErrUnsupportedVersion.
func DecodeSchemaVersion(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("schema version is %d bytes (% x), want 8: legacy or unsupported length: %w",
			len(b), b, ErrUnsupportedVersion)
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// SchemaHash is IndexEntry.hash: SHA-256 of the schema definition
// (SchemaInfo.schema) only.
func SchemaHash(definition []byte) []byte {
	h := sha256.Sum256(definition)
	return h[:]
}

// DecodeSchemaLocator reads a /schemas/... node value.
func DecodeSchemaLocator(b []byte) (*schemapb.SchemaLocator, error) {
	m := new(schemapb.SchemaLocator)
	if err := unmarshal.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("schema locator: %w", err)
	}
	return m, nil
}

// EncodeSchemaLocator writes a locator; missing required fields are an error.
func EncodeSchemaLocator(m *schemapb.SchemaLocator) ([]byte, error) {
	b, err := marshal.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("schema locator: %w", err)
	}
	return b, nil
}

// DecodeSchemaEntry reads entry 0 of a schema ledger.
func DecodeSchemaEntry(b []byte) (*schemapb.SchemaEntry, error) {
	m := new(schemapb.SchemaEntry)
	if err := unmarshal.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("schema entry: %w", err)
	}
	return m, nil
}

// EncodeSchemaEntry writes a schema ledger entry.
func EncodeSchemaEntry(m *schemapb.SchemaEntry) ([]byte, error) {
	b, err := marshal.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("schema entry: %w", err)
	}
	return b, nil
}

// DecodeSchemaInfo reads SchemaEntry.schema_data.
func DecodeSchemaInfo(b []byte) (*schemapb.SchemaInfo, error) {
	m := new(schemapb.SchemaInfo)
	if err := unmarshal.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("schema info: %w", err)
	}
	return m, nil
}

// EncodeSchemaInfo writes the registry form of a schema.
func EncodeSchemaInfo(m *schemapb.SchemaInfo) ([]byte, error) {
	b, err := marshal.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("schema info: %w", err)
	}
	return b, nil
}

// SplitKeyValueSchema splits a KEY_VALUE schema definition,
// `i32 keyLen | key | i32 valueLen | value`. A length of -1 is a null schema,
// returned as nil (an empty schema is a non-nil empty slice).
func SplitKeyValueSchema(def []byte) (key, value []byte, err error) {
	key, off, err := readKVPart(def, 0, "key")
	if err != nil {
		return nil, nil, err
	}
	value, off, err = readKVPart(def, off, "value")
	if err != nil {
		return nil, nil, err
	}
	if off != len(def) {
		return nil, nil, fmt.Errorf("key/value schema: offset %d: %d bytes after the value schema", off, len(def)-off)
	}
	return key, value, nil
}

func readKVPart(b []byte, off int, what string) ([]byte, int, error) {
	u, err := readU32(b, off, what+" schema length")
	if err != nil {
		return nil, 0, fmt.Errorf("key/value schema: %w", err)
	}
	n := int32(u)
	off += 4
	switch {
	case n == -1:
		return nil, off, nil
	case n < 0 || int(n) > len(b)-off:
		return nil, 0, fmt.Errorf("key/value schema: offset %d: %s schema length %d exceeds the %d bytes left: %w",
			off-4, what, n, len(b)-off, ErrTruncated)
	}
	return b[off : off+int(n) : off+int(n)], off + int(n), nil
}

// JoinKeyValueSchema builds a KEY_VALUE schema definition; a nil part is
// written as null (-1).
func JoinKeyValueSchema(key, value []byte) []byte {
	out := make([]byte, 0, 8+len(key)+len(value))
	for _, part := range [][]byte{key, value} {
		if part == nil {
			out = binary.BigEndian.AppendUint32(out, math.MaxUint32) // -1
			continue
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(part)))
		out = append(out, part...)
	}
	return out
}
