package formats

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/mlpb"
)

// brokerMLInfoBytes is a ManagedLedgerInfo as a broker writes it for a topic
// never offloaded: ledgers with their numbers and properties, ML properties.
func brokerMLInfoBytes(t testing.TB, ledgers int) []byte {
	info := &mlpb.ManagedLedgerInfo{}
	for i := range int64(ledgers) {
		li := &mlpb.ManagedLedgerInfo_LedgerInfo{
			LedgerId: proto.Int64(100 + i), Entries: proto.Int64(1000 * i), Size: proto.Int64(-1 << 40),
			Timestamp: proto.Int64(1700000000000 + i),
		}
		if i%2 == 0 {
			SetLedgerProperty(li, "firstEntryIndex", fmt.Sprint(i*1000))
			SetLedgerProperty(li, "", "")
		}
		info.LedgerInfo = append(info.LedgerInfo, li)
	}
	SetMLProperty(info, "index", "19999")
	b, err := proto.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// offloadedMLInfoBytes is brokerMLInfoBytes with its first ledger offloaded and
// deleted from BookKeeper, as the offloader leaves it.
func offloadedMLInfoBytes(t testing.TB) []byte {
	info := new(mlpb.ManagedLedgerInfo)
	if err := proto.Unmarshal(brokerMLInfoBytes(t, 3), info); err != nil {
		t.Fatal(err)
	}
	info.LedgerInfo[0].OffloadContext = &mlpb.OffloadContext{
		UidMsb: proto.Int64(6742487917743876977), UidLsb: proto.Int64(4227808590942902568),
		Complete: proto.Bool(true), BookkeeperDeleted: proto.Bool(true), Timestamp: proto.Int64(1718003601920),
		DriverMetadata: &mlpb.OffloadDriverMetadata{Name: proto.String("aws-s3"), Properties: []*mlpb.KeyValue{
			{Key: proto.String("bucket"), Value: proto.String("acme-pulsar-offload")}}},
	}
	b, err := proto.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The fast path takes what brokers write (else the speed-up silently goes),
// and leaves to proto.Unmarshal what it does not know.
func TestDecodeMLInfoFastTakesBrokerValues(t *testing.T) {
	for _, n := range []int{0, 1, 3, 50} {
		b := brokerMLInfoBytes(t, n)
		got := new(mlpb.ManagedLedgerInfo)
		if !decodeMLInfoFast(b, got) {
			t.Fatalf("%d ledgers: fast path refused a broker's value", n)
		}
		want := new(mlpb.ManagedLedgerInfo)
		if err := proto.Unmarshal(b, want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%d ledgers: fast decode differs from proto.Unmarshal", n)
		}
	}
	hb, _ := proto.Marshal(&mlpb.ManagedLedgerInfoMetadata{CompressionType: mlpb.CompressionType_ZSTD.Enum(), UncompressedSize: proto.Int32(77)})
	if h := new(mlpb.ManagedLedgerInfoMetadata); !decodeHeaderFast(hb, h) || h.GetCompressionType() != mlpb.CompressionType_ZSTD || h.GetUncompressedSize() != 77 {
		t.Errorf("header fast path refused or misread a broker's header: %v", h)
	}
	// An offloaded ledger, as the broker writes it, is taken too.
	b := offloadedMLInfoBytes(t)
	got, want := new(mlpb.ManagedLedgerInfo), new(mlpb.ManagedLedgerInfo)
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatal(err)
	}
	if !decodeMLInfoFast(b, got) || !proto.Equal(got, want) || got.LedgerInfo[0].OffloadContext == nil {
		t.Errorf("offloaded ledger: fast path refused it or decoded it differently")
	}
	// Refused: what proto.Unmarshal would merge (a second offload context in one
	// ledger), a terminated position, unknown fields, a cut value.
	oc, _ := proto.Marshal(&mlpb.OffloadContext{Complete: proto.Bool(true)})
	li := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7)
	for range 2 {
		li = protowire.AppendBytes(protowire.AppendTag(li, 5, protowire.BytesType), oc)
	}
	twice := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), li)
	terminated, _ := proto.Marshal(&mlpb.ManagedLedgerInfo{TerminatedPosition: &mlpb.NestedPositionInfo{LedgerId: proto.Int64(1), EntryId: proto.Int64(2)}})
	for name, b := range map[string][]byte{"offload context twice": twice, "terminated": terminated,
		"unknown field": sampleMLInfoBytes(t), "cut": brokerMLInfoBytes(t, 3)[:40], "cut offload": b[:len(b)-30]} {
		info := new(mlpb.ManagedLedgerInfo)
		if decodeMLInfoFast(b, info) || !proto.Equal(info, new(mlpb.ManagedLedgerInfo)) {
			t.Errorf("%s: fast path took it, or wrote into the message before refusing", name)
		}
	}
}

// Setting a property on one ledger of a fast-decoded message must not touch
// the next ledger's (they share one array underneath).
func TestDecodeMLInfoFastAppendIsolated(t *testing.T) {
	info, _, err := DecodeManagedLedgerInfo(brokerMLInfoBytes(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := proto.Marshal(info.LedgerInfo[2])
	SetLedgerProperty(info.LedgerInfo[0], "added", "x")
	SetLedgerProperty(info.LedgerInfo[1], "added", "y")
	SetMLProperty(info, "added", "z")
	if after, _ := proto.Marshal(info.LedgerInfo[2]); !bytes.Equal(before, after) {
		t.Error("a property set on ledgers 0 and 1 changed ledger 2")
	}
	if v, _ := LedgerProperty(info.LedgerInfo[0], "added"); v != "x" {
		t.Errorf("ledger 0 property = %q, want x", v)
	}
}

// FuzzDecodeMLInfoFast: whatever the fast path accepts, proto.Unmarshal reads
// to an equal message; and it never accepts what proto.Unmarshal refuses.
func FuzzDecodeMLInfoFast(f *testing.F) {
	f.Add(brokerMLInfoBytes(f, 3))
	f.Add(brokerMLInfoBytes(f, 0))
	f.Add(sampleMLInfoBytes(f))
	f.Add(offloadedMLInfoBytes(f))
	// A repeated singular field (the last wins), an empty key-value, an overlong varint.
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0x08, 0x01, 0x08, 0x02, 0x32, 0x00, 0x10, 0x80, 0x00}))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := new(mlpb.ManagedLedgerInfo)
		if !decodeMLInfoFast(b, got) {
			return
		}
		want := new(mlpb.ManagedLedgerInfo)
		if err := unmarshal.Unmarshal(b, want); err != nil {
			t.Fatalf("fast path accepted what proto.Unmarshal refuses: %v", err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("fast decode differs from proto.Unmarshal:\n%v\n%v", got, want)
		}
		for _, li := range got.LedgerInfo {
			if cap(li.Properties) != len(li.Properties) {
				t.Fatal("a ledger's properties share room with the next ledger's")
			}
		}
	})
}

// FuzzDecodeHeaderFast: whatever the header fast path accepts, strict
// proto.Unmarshal reads to an equal header.
func FuzzDecodeHeaderFast(f *testing.F) {
	for _, c := range []mlpb.CompressionType{mlpb.CompressionType_LZ4, mlpb.CompressionType_SNAPPY} {
		b, _ := proto.Marshal(&mlpb.ManagedLedgerInfoMetadata{CompressionType: c.Enum(), UncompressedSize: proto.Int32(300)})
		f.Add(b)
	}
	f.Add([]byte{0x08, 0x09, 0x10, 0x01})                   // unknown codec
	f.Add([]byte{0x08, 0x01})                               // size missing
	f.Add([]byte{0x08, 0x01, 0x10, 0x05, 0x08, 0x02, 0x18}) // repeated, then an unknown field
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, pair := range [][2]managedInfoHeader{
			{new(mlpb.ManagedLedgerInfoMetadata), new(mlpb.ManagedLedgerInfoMetadata)},
			{new(mlpb.ManagedCursorInfoMetadata), new(mlpb.ManagedCursorInfoMetadata)},
		} {
			got, want := pair[0], pair[1]
			if !decodeHeaderFast(b, got) {
				if !proto.Equal(got, pair[1]) {
					t.Fatal("refused, but wrote into the header")
				}
				continue
			}
			if err := proto.Unmarshal(b, want); err != nil {
				t.Fatalf("fast path accepted what strict proto.Unmarshal refuses: %v", err)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("fast header %v, proto.Unmarshal %v", got, want)
			}
		}
	})
}
