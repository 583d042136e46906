package schemaid

import "fmt"

// DecodeConfluentPayload reads the Confluent wire-format header at the start
// of a whole message payload: `0x00 | i32 id | data` or `0x01 | 16-byte GUID |
// data`. It returns the id (Raw is the header only, so it re-encodes exactly)
// and the offset where the data starts. A payload that does not start with
// 0x00 or 0x01 fails with ErrNotConfluent; one too short for its header fails
// with ErrTruncated. Both are *DecodeError values naming the byte offset.
func DecodeConfluentPayload(payload []byte) (ID, int, error) {
	if len(payload) == 0 {
		return ID{}, 0, &DecodeError{Offset: 0, Err: ErrNotConfluent, Detail: "empty payload"}
	}
	var n int
	switch payload[0] {
	case MagicConfluent:
		n = confluentLen
	case MagicConfluentGUID:
		n = confluentGUIDLen
	default:
		return ID{}, 0, &DecodeError{Offset: 0, Err: ErrNotConfluent,
			Detail: fmt.Sprintf("first byte 0x%02x, want 0x00 (id) or 0x01 (GUID)", payload[0])}
	}
	if len(payload) < n {
		return ID{}, 0, &DecodeError{Offset: 1, Err: ErrTruncated,
			Detail: fmt.Sprintf("Confluent header needs %d bytes after the magic, payload has %d", n-1, len(payload)-1)}
	}
	// The header alone has exactly the schema_id shape, so reuse that decoder.
	id, err := decodeSchemaID(clone(payload[:n]))
	return id, n, err
}
