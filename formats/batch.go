package formats

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
)

// fieldPayloadSize is SingleMessageMetadata.payload_size (docs/formats.md §3).
const fieldPayloadSize = 3

// CheckBatchFraming checks that an uncompressed batch payload is exactly
// numMessages records of `u32 size | SingleMessageMetadata | payload_size bytes`:
// what is left of an entry without a checksum when it was cut or overwritten.
// It allocates nothing; the error names the message and byte offset (within the
// payload) where the framing breaks.
func CheckBatchFraming(payload []byte, numMessages int) error {
	if numMessages < 0 || numMessages > len(payload)/4 {
		return fmt.Errorf("batch: %d messages cannot fit in %d bytes: %w", numMessages, len(payload), ErrTruncated)
	}
	off := 0
	for i := range numMessages {
		if len(payload)-off < 4 {
			return fmt.Errorf("batch message %d of %d: offset %d: %d bytes left, want a 4-byte metadata size: %w",
				i, numMessages, off, len(payload)-off, ErrTruncated)
		}
		size := uint64(binary.BigEndian.Uint32(payload[off:]))
		start := off + 4
		if size > uint64(len(payload)-start) {
			return fmt.Errorf("batch message %d of %d: offset %d: metadata size %d exceeds the %d bytes left: %w",
				i, numMessages, off, size, len(payload)-start, ErrTruncated)
		}
		n, ok := peekPayloadSize(payload[start : start+int(size)])
		if !ok {
			return fmt.Errorf("batch message %d of %d: offset %d: single message metadata does not parse or lacks payload_size", i, numMessages, start)
		}
		start += int(size)
		if n < 0 || n > int64(len(payload)-start) {
			return fmt.Errorf("batch message %d of %d: offset %d: payload size %d exceeds the %d bytes left: %w",
				i, numMessages, start, n, len(payload)-start, ErrTruncated)
		}
		off = start + int(n)
	}
	if off != len(payload) {
		return fmt.Errorf("batch: offset %d: %d bytes left after %d messages", off, len(payload)-off, numMessages)
	}
	return nil
}

// peekPayloadSize reads payload_size from a SingleMessageMetadata's wire bytes.
func peekPayloadSize(b []byte) (int64, bool) {
	var size int64
	found := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
		if num == fieldPayloadSize && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, false
			}
			size, found = int64(int32(v)), true
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0, false
		}
		b = b[m:]
	}
	return size, found
}

// BatchFramingCheckable reports whether md's payload is a batch whose framing can
// be read as stored: batched (num_messages_in_batch set), not compressed, not
// encrypted and not a chunk.
func BatchFramingCheckable(md *pulsarpb.MessageMetadata) bool {
	return md.NumMessagesInBatch != nil && md.GetCompression() == pulsarpb.CompressionType_NONE &&
		md.GetEncryptionAlgo() == "" && len(md.GetEncryptionParam()) == 0 && md.GetNumChunksFromMsg() <= 1
}
