package formats

import (
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ledgermedic/ledgermedic/formats/mlpb"
)

// Field numbers of ManagedLedgerInfo, its LedgerInfo and KeyValue (mldata.proto).
const (
	mlFieldLedgerInfo = 1
	mlFieldProperties = 3
	liFieldLedgerID   = 1
	liFieldTimestamp  = 4
	liFieldOffload    = 5
	liFieldProperties = 6
	kvFieldKey        = 1
	kvFieldValue      = 2
	liInts            = liFieldTimestamp // ledgerId, entries, size, timestamp
)

// mlInfoShape is what the first pass of decodeMLInfoFast counts, and the
// offload contexts it decoded (in ledger order).
type mlInfoShape struct {
	ledgers, kvs, strs, strBytes int
	offloads                     []*mlpb.OffloadContext
}

// decodeMLInfoFast fills info (a fresh message) from the wire bytes b of a
// ManagedLedgerInfo that holds only ledger infos with their four numbers,
// properties and (once per ledger) an offload context, and ML properties: what
// brokers write for a topic that was never terminated. It makes a few
// allocations for the whole message where proto.Unmarshal makes several per
// ledger, which was most of the cost of listing topics; an offload context is
// decoded by proto.Unmarshal on its own, as proto.Unmarshal of the whole
// would. Anything else (a terminated position, an unknown field, a wire type
// proto.Unmarshal would keep as unknown, any malformed byte) returns false
// with info untouched: the caller then uses proto.Unmarshal, which decodes it
// or says what is wrong. FuzzDecodeMLInfoFast checks that both agree.
func decodeMLInfoFast(b []byte, info *mlpb.ManagedLedgerInfo) bool {
	var sh mlInfoShape
	if !sh.scanInfo(b) {
		return false
	}
	lis := make([]mlpb.ManagedLedgerInfo_LedgerInfo, sh.ledgers)
	liPtrs := make([]*mlpb.ManagedLedgerInfo_LedgerInfo, sh.ledgers)
	ints := make([]int64, liInts*sh.ledgers)
	kvs := make([]mlpb.KeyValue, sh.kvs)
	kvPtrs := make([]*mlpb.KeyValue, sh.kvs)
	strs := make([]string, sh.strs)
	// Every key and value in one allocation, never written after the copy.
	text := make([]byte, 0, sh.strBytes)
	f := mlInfoFill{lis: lis, liPtrs: liPtrs, ints: ints, kvs: kvs, kvPtrs: kvPtrs, strs: strs, text: text, offloads: sh.offloads}
	f.fillInfo(b, info)
	return true
}

// nextBytesField splits the length-delimited field at the front of b: its
// number, its bytes and what follows; ok is false when b does not start with one.
func nextBytesField(b []byte) (num protowire.Number, v, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || typ != protowire.BytesType {
		return 0, nil, nil, false
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 {
		return 0, nil, nil, false
	}
	return num, v, b[n+m:], true
}

// scanInfo checks b and counts what it holds.
func (sh *mlInfoShape) scanInfo(b []byte) bool {
	for len(b) > 0 {
		num, v, rest, ok := nextBytesField(b)
		if !ok || (num != mlFieldLedgerInfo && num != mlFieldProperties) {
			return false
		}
		b = rest
		if num == mlFieldLedgerInfo {
			sh.ledgers++
			if !sh.scanLedger(v) {
				return false
			}
		} else if !sh.scanKV(v) {
			return false
		}
	}
	return true
}

func (sh *mlInfoShape) scanLedger(b []byte) bool {
	offload := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num >= liFieldLedgerID && num <= liFieldTimestamp && typ == protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
		case num == liFieldProperties && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if n >= 0 && !sh.scanKV(v) {
				return false
			}
		case num == liFieldOffload && typ == protowire.BytesType && !offload:
			// Once: proto.Unmarshal merges a repeated message field.
			offload = true
			var v []byte
			if v, n = protowire.ConsumeBytes(b); n >= 0 {
				oc := new(mlpb.OffloadContext)
				if unmarshal.Unmarshal(v, oc) != nil {
					return false
				}
				sh.offloads = append(sh.offloads, oc)
			}
		default:
			return false
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

func (sh *mlInfoShape) scanKV(b []byte) bool {
	sh.kvs++
	for len(b) > 0 {
		num, v, rest, ok := nextBytesField(b)
		if !ok || (num != kvFieldKey && num != kvFieldValue) {
			return false
		}
		b = rest
		sh.strs++
		sh.strBytes += len(v)
	}
	return true
}

// mlInfoFill hands out the pieces decodeMLInfoFast allocated; the bytes were
// checked by scanInfo, so nothing here can fail.
type mlInfoFill struct {
	lis      []mlpb.ManagedLedgerInfo_LedgerInfo
	liPtrs   []*mlpb.ManagedLedgerInfo_LedgerInfo
	ints     []int64
	kvs      []mlpb.KeyValue
	kvPtrs   []*mlpb.KeyValue
	strs     []string
	text     []byte
	offloads []*mlpb.OffloadContext
	nl, nk   int // ledgers and key-values handed out
}

func (f *mlInfoFill) fillInfo(b []byte, info *mlpb.ManagedLedgerInfo) {
	var props []*mlpb.KeyValue
	for len(b) > 0 {
		num, v, rest, _ := nextBytesField(b) // scanInfo checked the shape
		b = rest
		if num == mlFieldLedgerInfo {
			f.fillLedger(v)
			continue
		}
		props = append(props, f.fillKV(v)) // ML properties are few
	}
	if f.nl > 0 {
		info.LedgerInfo = f.liPtrs[:f.nl:f.nl]
	}
	info.Properties = props
}

func (f *mlInfoFill) fillLedger(b []byte) {
	li := &f.lis[f.nl]
	f.liPtrs[f.nl] = li
	ints := f.ints[liInts*f.nl : liInts*(f.nl+1)]
	f.nl++
	kvFrom := f.nk
	for len(b) > 0 {
		num, _, n := protowire.ConsumeTag(b)
		b = b[n:]
		if num == liFieldProperties {
			v, n := protowire.ConsumeBytes(b)
			b = b[n:]
			i := f.nk
			f.kvPtrs[i] = f.fillKV(v)
			continue
		}
		if num == liFieldOffload {
			_, n := protowire.ConsumeBytes(b)
			b = b[n:]
			li.OffloadContext, f.offloads = f.offloads[0], f.offloads[1:]
			continue
		}
		x, n := protowire.ConsumeVarint(b)
		b = b[n:]
		p := &ints[num-liFieldLedgerID]
		*p = int64(x) // a repeated field: the last one wins, as in proto.Unmarshal
		switch num {
		case liFieldLedgerID:
			li.LedgerId = p
		case liFieldLedgerID + 1:
			li.Entries = p
		case liFieldLedgerID + 2:
			li.Size = p
		default:
			li.Timestamp = p
		}
	}
	if f.nk > kvFrom {
		// Capped at its length: an append (SetLedgerProperty) never writes
		// over the next ledger's properties.
		li.Properties = f.kvPtrs[kvFrom:f.nk:f.nk]
	}
}

// fillKV fills the next KeyValue; the caller stores the pointer where it belongs.
func (f *mlInfoFill) fillKV(b []byte) *mlpb.KeyValue {
	kv := &f.kvs[f.nk]
	f.nk++
	for len(b) > 0 {
		num, v, rest, _ := nextBytesField(b) // scanKV checked the shape
		b = rest
		s := &f.strs[0]
		f.strs = f.strs[1:]
		if len(v) > 0 {
			at := len(f.text)
			f.text = append(f.text, v...)
			*s = unsafe.String(&f.text[at], len(v))
		}
		if num == kvFieldKey {
			kv.Key = s
		} else {
			kv.Value = s
		}
	}
	return kv
}

// decodeHeaderFast fills hdr (a fresh ManagedLedgerInfoMetadata or
// ManagedCursorInfoMetadata) from b when b holds exactly its two required
// fields as varints, the codec a known one: what brokers write. Anything else
// returns false with hdr untouched, for proto.Unmarshal to read or refuse.
func decodeHeaderFast(b []byte, hdr managedInfoHeader) bool {
	var codec, size uint64
	var seen [3]bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.VarintType || (num != 1 && num != 2) {
			return false
		}
		b = b[n:]
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num == 1 {
			codec = v
		} else {
			size = v
		}
		seen[num] = true // a repeated field: the last one wins, as in proto.Unmarshal
	}
	c := mlpb.CompressionType(int32(codec))
	if _, known := mlpb.CompressionType_name[int32(c)]; !known || !seen[1] || !seen[2] {
		return false
	}
	sz := int32(size)
	switch h := hdr.(type) {
	case *mlpb.ManagedLedgerInfoMetadata:
		h.CompressionType, h.UncompressedSize = &c, &sz
	case *mlpb.ManagedCursorInfoMetadata:
		h.CompressionType, h.UncompressedSize = &c, &sz
	default:
		return false
	}
	return true
}
