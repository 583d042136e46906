package formats

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/crc32c"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
)

// Magic numbers that open the optional blocks of an entry frame (Commands.java).
const (
	MagicBrokerEntryMetadata = 0x0e02
	MagicCrc32c              = 0x0e01
)

// Entry is one decoded topic-ledger entry (docs/formats.md §3):
//
//	[u16 0x0e02 | u32 size | BrokerEntryMetadata]
//	[u16 0x0e01 | u32 crc32c]
//	u32 metadataSize | MessageMetadata | payload
type Entry struct {
	BrokerMeta     *pulsarpb.BrokerEntryMetadata // nil when absent
	HasChecksum    bool
	Checksum       uint32 // stored CRC32C (Castagnoli)
	ChecksumOK     bool   // stored checksum matches metadataSize..end of payload
	Metadata       *pulsarpb.MessageMetadata
	MetadataOffset int    // byte offset of the u32 metadataSize, for error messages
	Payload        []byte // aliases the input
}

// ParseEntry decodes an entry frame. Errors name the byte offset that is bad.
// A checksum mismatch is not an error: it is reported in ChecksumOK.
func ParseEntry(b []byte) (*Entry, error) {
	e := new(Entry)
	if err := ParseEntryInto(b, e, nil, nil); err != nil {
		return nil, err
	}
	return e, nil
}

// ParseEntryInto is ParseEntry for scans: it fills e and reuses md and bm
// (either may be nil, then fresh messages are allocated). e.BrokerMeta is set
// to bm only when the frame carries broker entry metadata.
func ParseEntryInto(b []byte, e *Entry, md *pulsarpb.MessageMetadata, bm *pulsarpb.BrokerEntryMetadata) error {
	*e = Entry{}
	off := 0
	if peekU16(b, off) == MagicBrokerEntryMetadata {
		size, err := readU32(b, off+2, "broker entry metadata size")
		if err != nil {
			return fmt.Errorf("entry frame: %w", err)
		}
		start := off + 6
		if uint64(size) > uint64(len(b)-start) {
			return fmt.Errorf("entry frame: offset %d: broker entry metadata size %d exceeds the %d bytes left: %w",
				off+2, size, len(b)-start, ErrTruncated)
		}
		if bm == nil {
			bm = new(pulsarpb.BrokerEntryMetadata)
		}
		if err := unmarshal.Unmarshal(b[start:start+int(size)], bm); err != nil {
			return fmt.Errorf("entry frame: offset %d: broker entry metadata: %w", start, err)
		}
		e.BrokerMeta = bm
		off = start + int(size)
	}
	if peekU16(b, off) == MagicCrc32c {
		sum, err := readU32(b, off+2, "crc32c")
		if err != nil {
			return fmt.Errorf("entry frame: %w", err)
		}
		e.HasChecksum = true
		e.Checksum = sum
		off += 6
	}
	e.MetadataOffset = off
	size, err := readU32(b, off, "metadata size")
	if err != nil {
		return fmt.Errorf("entry frame: %w", err)
	}
	start := off + 4
	if uint64(size) > uint64(len(b)-start) {
		return fmt.Errorf("entry frame: offset %d: metadata size %d exceeds the %d bytes left: %w",
			off, size, len(b)-start, ErrTruncated)
	}
	if md == nil {
		md = new(pulsarpb.MessageMetadata)
	}
	if err := unmarshal.Unmarshal(b[start:start+int(size)], md); err != nil {
		return fmt.Errorf("entry frame: offset %d: message metadata: %w", start, err)
	}
	e.Metadata = md
	e.Payload = b[start+int(size):]
	if e.HasChecksum {
		e.ChecksumOK = crc32.Checksum(b[off:], crc32c.Table) == e.Checksum
	}
	return nil
}

// BuildEntry writes an entry frame as a broker stores it. bm may be nil (no
// broker entry metadata); withChecksum adds the CRC32C block.
func BuildEntry(bm *pulsarpb.BrokerEntryMetadata, withChecksum bool, md *pulsarpb.MessageMetadata, payload []byte) ([]byte, error) {
	if md == nil {
		return nil, fmt.Errorf("build entry: message metadata is required")
	}
	mdBytes, err := marshal.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("build entry: message metadata: %w", err)
	}
	var out []byte
	if bm != nil {
		bmBytes, err := marshal.Marshal(bm)
		if err != nil {
			return nil, fmt.Errorf("build entry: broker entry metadata: %w", err)
		}
		out = binary.BigEndian.AppendUint16(out, MagicBrokerEntryMetadata)
		out = binary.BigEndian.AppendUint32(out, uint32(len(bmBytes)))
		out = append(out, bmBytes...)
	}
	crcAt := -1
	if withChecksum {
		out = binary.BigEndian.AppendUint16(out, MagicCrc32c)
		crcAt = len(out)
		out = binary.BigEndian.AppendUint32(out, 0) // filled in below
	}
	checked := len(out)
	out = binary.BigEndian.AppendUint32(out, uint32(len(mdBytes)))
	out = append(out, mdBytes...)
	out = append(out, payload...)
	if crcAt >= 0 {
		binary.BigEndian.PutUint32(out[crcAt:], crc32.Checksum(out[checked:], crc32c.Table))
	}
	return out, nil
}

// EntryBaseIndex returns the broker index of the first message in an entry:
// index - num_messages_in_batch + 1 (docs/formats.md §2). ok is false when the
// entry has no broker index or the values cannot form a valid offset.
func EntryBaseIndex(bm *pulsarpb.BrokerEntryMetadata, md *pulsarpb.MessageMetadata) (int64, bool) {
	if bm == nil || bm.Index == nil {
		return 0, false
	}
	return baseIndex(bm.GetIndex(), md.GetNumMessagesInBatch()) // nil md reads the default, 1
}

// BaseIndex is EntryBaseIndex of the entry r was read from.
func (r *EntryRefs) BaseIndex() (int64, bool) {
	if !r.HasIndex {
		return 0, false
	}
	return baseIndex(r.Index, r.NumMessages)
}

// baseIndex is index - numMessages + 1, when that is a valid offset.
func baseIndex(index uint64, numMessages int32) (int64, bool) {
	n := int64(numMessages)
	if index > math.MaxInt64 || n < 1 {
		return 0, false
	}
	base := int64(index) - n + 1
	if base < 0 {
		return 0, false
	}
	return base, true
}

// BatchMessage is one message of a batched payload.
type BatchMessage struct {
	Meta    *pulsarpb.SingleMessageMetadata
	Payload []byte // aliases the parsed input
}

// ParseBatch splits an uncompressed batch payload into its numMessages
// messages, each `u32 size | SingleMessageMetadata | payload_size bytes`.
// Bytes left over after the last message are an error.
func ParseBatch(payload []byte, numMessages int) ([]BatchMessage, error) {
	// Each message needs at least its 4-byte size, so a corrupt count cannot
	// make us allocate more than the input justifies.
	if numMessages < 0 || numMessages > len(payload)/4 {
		return nil, fmt.Errorf("batch: %d messages cannot fit in %d bytes", numMessages, len(payload))
	}
	msgs := make([]BatchMessage, 0, numMessages)
	off := 0
	for i := range numMessages {
		size, err := readU32(payload, off, "single message metadata size")
		if err != nil {
			return nil, fmt.Errorf("batch message %d: %w", i, err)
		}
		start := off + 4
		if uint64(size) > uint64(len(payload)-start) {
			return nil, fmt.Errorf("batch message %d: offset %d: metadata size %d exceeds the %d bytes left: %w",
				i, off, size, len(payload)-start, ErrTruncated)
		}
		meta := new(pulsarpb.SingleMessageMetadata)
		if err := unmarshal.Unmarshal(payload[start:start+int(size)], meta); err != nil {
			return nil, fmt.Errorf("batch message %d: offset %d: single message metadata: %w", i, start, err)
		}
		if meta.PayloadSize == nil {
			return nil, fmt.Errorf("batch message %d: offset %d: single message metadata lacks payload_size", i, start)
		}
		start += int(size)
		n := meta.GetPayloadSize()
		if n < 0 || int64(n) > int64(len(payload)-start) {
			return nil, fmt.Errorf("batch message %d: offset %d: payload size %d exceeds the %d bytes left: %w",
				i, start, n, len(payload)-start, ErrTruncated)
		}
		msgs = append(msgs, BatchMessage{Meta: meta, Payload: payload[start : start+int(n)]})
		off = start + int(n)
	}
	if off != len(payload) {
		return nil, fmt.Errorf("batch: offset %d: %d bytes left after %d messages", off, len(payload)-off, numMessages)
	}
	return msgs, nil
}

// BuildBatch writes a batched payload. A message whose Meta has no
// payload_size gets len(Payload); a payload_size that disagrees is an error.
// The caller's messages are not modified.
func BuildBatch(msgs []BatchMessage) ([]byte, error) {
	var out []byte
	for i, m := range msgs {
		meta := m.Meta
		switch {
		case meta == nil:
			meta = &pulsarpb.SingleMessageMetadata{PayloadSize: proto.Int32(int32(len(m.Payload)))}
		case meta.PayloadSize == nil:
			meta = proto.Clone(meta).(*pulsarpb.SingleMessageMetadata)
			meta.PayloadSize = proto.Int32(int32(len(m.Payload)))
		case int(meta.GetPayloadSize()) != len(m.Payload):
			return nil, fmt.Errorf("batch message %d: payload_size %d but payload has %d bytes",
				i, meta.GetPayloadSize(), len(m.Payload))
		}
		b, err := marshal.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("batch message %d: %w", i, err)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
		out = append(out, m.Payload...)
	}
	return out, nil
}

// peekU16 returns the big-endian u16 at off, or 0 when fewer than 2 bytes remain.
func peekU16(b []byte, off int) uint16 {
	if off < 0 || len(b)-off < 2 {
		return 0
	}
	return binary.BigEndian.Uint16(b[off:])
}

func readU32(b []byte, off int, what string) (uint32, error) {
	if len(b)-off < 4 {
		return 0, fmt.Errorf("offset %d: %s needs 4 bytes, %d left: %w", off, what, max(len(b)-off, 0), ErrTruncated)
	}
	return binary.BigEndian.Uint32(b[off:]), nil
}
