package formats

import (
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ledgermedic/ledgermedic/formats/crc32c"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
)

// EntryRefs is what scans need of a topic entry (docs/formats.md §3), read by
// PeekEntry without building protobuf messages. Byte slices alias the entry.
type EntryRefs struct {
	HasBrokerMeta      bool // the frame has a broker entry metadata block
	HasIndex           bool
	Index              uint64 // BrokerEntryMetadata.index
	HasBrokerTimestamp bool
	BrokerTimestamp    uint64 // BrokerEntryMetadata.broker_timestamp

	PublishTime uint64 // MessageMetadata.publish_time; 0 when absent
	NumMessages int32  // num_messages_in_batch; 1 when absent, as GetNumMessagesInBatch
	// SchemaVersion and SchemaID are nil when absent and non-nil (maybe empty)
	// when present, as in pulsarpb.MessageMetadata.
	SchemaVersion []byte
	SchemaID      []byte

	HasChecksum    bool
	Checksum       uint32 // stored CRC32C
	ChecksumOK     bool   // Checksum matches metadataSize..end of payload
	MetadataOffset int    // byte offset of the u32 metadataSize

	Payload []byte // aliases the entry
	// BatchFramingCheckable is BatchFramingCheckable of the metadata: the
	// payload's batch framing can be checked as stored (CheckBatchFraming).
	BatchFramingCheckable bool
}

// Refs returns what PeekEntry would have read of the entry e was parsed from.
func (e *Entry) Refs() EntryRefs {
	md := e.Metadata
	r := EntryRefs{
		PublishTime: md.GetPublishTime(), NumMessages: md.GetNumMessagesInBatch(),
		SchemaVersion: md.GetSchemaVersion(), SchemaID: md.GetSchemaId(),
		HasChecksum: e.HasChecksum, Checksum: e.Checksum, ChecksumOK: e.ChecksumOK,
		MetadataOffset: e.MetadataOffset,
		Payload:        e.Payload, BatchFramingCheckable: BatchFramingCheckable(md),
	}
	if bm := e.BrokerMeta; bm != nil {
		r.HasBrokerMeta = true
		r.HasIndex, r.Index = bm.Index != nil, bm.GetIndex()
		r.HasBrokerTimestamp, r.BrokerTimestamp = bm.BrokerTimestamp != nil, bm.GetBrokerTimestamp()
	}
	return r
}

// PeekEntry is the allocation-free fast path of ParseEntryInto for scans over
// millions of entries: it walks the frame, checks the CRC and the wire format
// of both metadata blocks as proto.Unmarshal would, and reads into r only the
// fields EntryRefs names. Full unmarshalling allocates every optional field of
// MessageMetadata and costs more than reading the entry from Badger.
//
// When PeekEntry returns true, ParseEntryInto accepts b too and agrees on
// every field of r. False means "ask ParseEntryInto": it says precisely what
// is wrong, or (rarely) accepts what the fast path does not; r is then
// undefined. A checksum mismatch is not false, as for ParseEntryInto.
func PeekEntry(b []byte, r *EntryRefs) bool {
	*r = EntryRefs{NumMessages: 1}
	off := 0
	if peekU16(b, 0) == MagicBrokerEntryMetadata {
		if len(b) < 6 {
			return false
		}
		size := uint64(binary.BigEndian.Uint32(b[2:]))
		if size > uint64(len(b)-6) {
			return false
		}
		if !r.readBrokerMeta(b[6 : 6+size]) {
			return false
		}
		off = 6 + int(size)
	}
	if peekU16(b, off) == MagicCrc32c {
		if len(b)-off < 6 {
			return false
		}
		r.HasChecksum = true
		r.Checksum = binary.BigEndian.Uint32(b[off+2:])
		off += 6
	}
	r.MetadataOffset = off
	if len(b)-off < 4 {
		return false
	}
	size := uint64(binary.BigEndian.Uint32(b[off:]))
	start := off + 4
	if size > uint64(len(b)-start) {
		return false
	}
	var fr framing
	if !r.readMetadata(b[start:start+int(size)], &fr) {
		return false
	}
	r.Payload = b[start+int(size):]
	r.BatchFramingCheckable = fr.checkable()
	if r.HasChecksum {
		r.ChecksumOK = crc32c.Checksum(b[off:]) == r.Checksum
	}
	return true
}

// HasBrokerIndex reports whether an entry carries a broker entry index, as
// ParseEntry reads it (false for an entry ParseEntry refuses), by PeekEntry
// where it can: the full parse builds every MessageMetadata field.
func HasBrokerIndex(b []byte) bool {
	var r EntryRefs
	if PeekEntry(b, &r) {
		return r.HasIndex
	}
	e, err := ParseEntry(b)
	return err == nil && e.BrokerMeta != nil && e.BrokerMeta.Index != nil
}

var (
	messageMetadataDesc = (&pulsarpb.MessageMetadata{}).ProtoReflect().Descriptor()
	brokerMetadataDesc  = (&pulsarpb.BrokerEntryMetadata{}).ProtoReflect().Descriptor()
)

// Field numbers PeekEntry reads (docs/formats.md §3).
const (
	fieldBrokerTimestamp    = 1
	fieldBrokerIndex        = 2
	fieldPublishTime        = 3
	fieldNumMessagesInBatch = 11
	fieldSchemaVersion      = 16
	fieldSchemaID           = 32
	// What BatchFramingCheckable looks at besides num_messages_in_batch.
	fieldCompression      = 8
	fieldEncryptionAlgo   = 14
	fieldEncryptionParam  = 15
	fieldNumChunksFromMsg = 27
)

// framing is what readMetadata keeps for BatchFramingCheckable, as
// proto.Unmarshal leaves the fields: the last occurrence wins (a compression
// value the enum does not name included: Go's protobuf keeps it).
type framing struct {
	batched     bool // num_messages_in_batch present
	compression int32
	algo, param bool // encryption_algo, encryption_param non-empty
	chunks      int32
}

func (f *framing) checkable() bool {
	return f.batched && pulsarpb.CompressionType(f.compression) == pulsarpb.CompressionType_NONE && !f.algo && !f.param && f.chunks <= 1
}

// read takes one field of the metadata that BatchFramingCheckable looks at;
// m is how many bytes it consumed, 0 when it is none of them.
func (f *framing) read(num protowire.Number, typ protowire.Type, b []byte) (m int) {
	switch {
	case (num == fieldCompression || num == fieldNumChunksFromMsg) && typ == protowire.VarintType:
		v, m := protowire.ConsumeVarint(b)
		if m < 0 {
			return m
		}
		if num == fieldNumChunksFromMsg {
			f.chunks = int32(v)
		} else {
			f.compression = int32(v)
		}
		return m
	case (num == fieldEncryptionAlgo || num == fieldEncryptionParam) && typ == protowire.BytesType:
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return m
		}
		if num == fieldEncryptionAlgo {
			f.algo = len(v) > 0
		} else {
			f.param = len(v) > 0
		}
		return m
	}
	return 0
}

// readBrokerMeta reads BrokerEntryMetadata bytes. Like proto.Unmarshal, the
// last occurrence wins and a field of another wire type is an unknown field.
func (r *EntryRefs) readBrokerMeta(b []byte) bool {
	r.HasBrokerMeta = true
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if (num == fieldBrokerTimestamp || num == fieldBrokerIndex) && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			if num == fieldBrokerTimestamp {
				r.BrokerTimestamp, r.HasBrokerTimestamp = v, true
			} else {
				r.Index, r.HasIndex = v, true
			}
			b = b[m:]
			continue
		}
		m := consumeChecked(num, typ, b, brokerMetadataDesc, 0)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	return true
}

// readMetadata reads MessageMetadata bytes, with readBrokerMeta's rules.
func (r *EntryRefs) readMetadata(b []byte, fr *framing) bool {
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
			r.PublishTime, b = v, b[m:]
			continue
		case num == fieldNumMessagesInBatch && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			r.NumMessages, b = int32(v), b[m:] // int32 fields keep the low 32 bits
			fr.batched = true
			continue
		case (num == fieldSchemaVersion || num == fieldSchemaID) && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return false
			}
			// v is a sub-slice of the entry, so a present empty field is non-nil.
			if num == fieldSchemaVersion {
				r.SchemaVersion = v
			} else {
				r.SchemaID = v
			}
			b = b[m:]
			continue
		}
		if m := fr.read(num, typ, b); m != 0 {
			if m < 0 {
				return false
			}
			b = b[m:]
			continue
		}
		m := consumeChecked(num, typ, b, messageMetadataDesc, 0)
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
		fd := messageMetadataDesc.Fields().ByNumber(protowire.Number(i))
		plain[i] = fd == nil || fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind
	}
	return plain
}()

func mayNeedCheck(md protoreflect.MessageDescriptor, num protowire.Number) bool {
	if md == messageMetadataDesc && num < 64 {
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
