package inspect

import (
	"encoding/binary"
	"hash/crc32"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
)

// entryRefs is what SchemaUsage needs of a topic entry.
type entryRefs struct {
	publishMs          uint64
	messages           int64  // num_messages_in_batch (default 1)
	version, id        []byte // schema_version, schema_id; alias the entry
	hasVersion, hasID  bool
	hasChecksum, crcOK bool
	checksum           uint32
	metadataOffset     int
}

var (
	castagnoliTable    = crc32.MakeTable(crc32.Castagnoli)
	messageMetadataDsc = (&pulsarpb.MessageMetadata{}).ProtoReflect().Descriptor()
	brokerMetadataDsc  = (&pulsarpb.BrokerEntryMetadata{}).ProtoReflect().Descriptor()
)

// MessageMetadata field numbers read by the scan (FORMATS.md §3).
const (
	fieldPublishTime        = 3
	fieldNumMessagesInBatch = 11
	fieldSchemaVersion      = 16
	fieldSchemaID           = 32
)

// scanEntry is the allocation-free fast path of formats.ParseEntryInto for
// SchemaUsage: it walks the frame (FORMATS.md §3) and reads only publish_time,
// num_messages_in_batch, schema_version and schema_id, while checking the wire
// format of everything as proto.Unmarshal would. It returns false for anything
// it does not accept; the caller then asks ParseEntryInto, which stays the
// authority on what is wrong (FuzzScanEntry holds the two together).
//
// Full unmarshalling allocates every optional field of MessageMetadata and
// costs more than reading the entry from Badger; this keeps the scan I/O-bound.
func scanEntry(b []byte, r *entryRefs) bool {
	*r = entryRefs{messages: 1}
	off := 0
	if peek16(b, 0) == formats.MagicBrokerEntryMetadata {
		if len(b) < 6 {
			return false
		}
		size := uint64(binary.BigEndian.Uint32(b[2:]))
		if size > uint64(len(b)-6) {
			return false
		}
		if !validWire(b[6:6+size], brokerMetadataDsc, 0) {
			return false
		}
		off = 6 + int(size)
	}
	if peek16(b, off) == formats.MagicCrc32c {
		if len(b)-off < 6 {
			return false
		}
		r.hasChecksum = true
		r.checksum = binary.BigEndian.Uint32(b[off+2:])
		off += 6
	}
	r.metadataOffset = off
	if len(b)-off < 4 {
		return false
	}
	size := uint64(binary.BigEndian.Uint32(b[off:]))
	start := off + 4
	if size > uint64(len(b)-start) {
		return false
	}
	if !r.readMetadata(b[start : start+int(size)]) {
		return false
	}
	if r.hasChecksum {
		r.crcOK = crc32.Checksum(b[off:], castagnoliTable) == r.checksum
	}
	return true
}

// readMetadata reads the four fields from MessageMetadata bytes; like
// proto.Unmarshal, the last occurrence wins and a field with another wire type
// is an unknown field.
func (r *entryRefs) readMetadata(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == fieldPublishTime && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			r.publishMs, b = v, b[m:]
			continue
		case num == fieldNumMessagesInBatch && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			r.messages, b = int64(int32(v)), b[m:]
			continue
		case (num == fieldSchemaVersion || num == fieldSchemaID) && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return false
			}
			if num == fieldSchemaVersion {
				r.version, r.hasVersion = v, true
			} else {
				r.id, r.hasID = v, true
			}
			b = b[m:]
			continue
		}
		m := consumeChecked(num, typ, b, messageMetadataDsc, 0)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	return true
}

// maxWireDepth bounds nested messages; Pulsar's metadata nests two deep.
const maxWireDepth = 16

// validWire reports whether b is a well-formed message of type md: every field
// parses, and fields md declares as messages are well-formed in turn.
func validWire(b []byte, md protoreflect.MessageDescriptor, depth int) bool {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		m := consumeChecked(num, typ, b, md, depth)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	return true
}

// consumeChecked consumes one field value, checking a declared message field's
// content and a declared packed numeric list's elements.
func consumeChecked(num protowire.Number, typ protowire.Type, b []byte, md protoreflect.MessageDescriptor, depth int) int {
	if typ != protowire.BytesType || !mayNeedCheck(md, num) {
		return protowire.ConsumeFieldValue(num, typ, b)
	}
	fd := md.Fields().ByNumber(num)
	v, m := protowire.ConsumeBytes(b)
	if m < 0 || fd == nil {
		return m
	}
	switch {
	case fd.Message() != nil && fd.Kind() == protoreflect.MessageKind:
		if depth >= maxWireDepth || !validWire(v, fd.Message(), depth+1) {
			return -1
		}
	case fd.IsList() && fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.BytesKind:
		if !validPacked(v, fd.Kind()) {
			return -1
		}
	}
	return m
}

// plainMetadataFields marks the MessageMetadata field numbers below 64 whose
// length-delimited content needs no check (strings, bytes, unknown numbers):
// a descriptor lookup per field costs as much as the rest of the scan.
var plainMetadataFields = func() (plain [64]bool) {
	for i := range plain {
		fd := messageMetadataDsc.Fields().ByNumber(protowire.Number(i))
		plain[i] = fd == nil || fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind
	}
	return plain
}()

func mayNeedCheck(md protoreflect.MessageDescriptor, num protowire.Number) bool {
	if md == messageMetadataDsc && num < 64 {
		return !plainMetadataFields[num]
	}
	return true
}

func validPacked(b []byte, k protoreflect.Kind) bool {
	for len(b) > 0 {
		var n int
		switch k {
		case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
			_, n = protowire.ConsumeFixed32(b)
		case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
			_, n = protowire.ConsumeFixed64(b)
		default:
			_, n = protowire.ConsumeVarint(b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// consumeTag is protowire.ConsumeTag with proto.Unmarshal's rule that field
// numbers lie in [1, 2^29-1].
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, 0, n
	}
	if num := v >> 3; num < uint64(protowire.MinValidNumber) || num > uint64(protowire.MaxValidNumber) {
		return 0, 0, -1
	}
	return protowire.Number(v >> 3), protowire.Type(v & 7), n
}

func peek16(b []byte, off int) uint16 {
	if len(b)-off < 2 {
		return 0
	}
	return binary.BigEndian.Uint16(b[off:])
}
