package formats

import (
	"bytes"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
)

// samePeekAsParse checks PeekEntry against ParseEntryInto on b: when the fast
// path accepts b, the full parser must accept it too and agree on every
// field. It returns whether the fast path accepted.
func samePeekAsParse(t *testing.T, b []byte) bool {
	t.Helper()
	var r EntryRefs
	ok := PeekEntry(b, &r)
	var e Entry
	err := ParseEntryInto(b, &e, nil, nil)
	if want := err == nil && e.BrokerMeta != nil && e.BrokerMeta.Index != nil; HasBrokerIndex(b) != want {
		t.Fatalf("entry %x: HasBrokerIndex = %v, ParseEntryInto says %v", b, !want, want)
	}
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("PeekEntry accepted %x, ParseEntryInto: %v", b, err)
	}
	if want := e.Refs(); !reflect.DeepEqual(r, want) {
		t.Fatalf("entry %x:\nPeekEntry      %+v\nParseEntryInto %+v", b, r, want)
	}
	return true
}

func buildSeed(t testing.TB, bm *pulsarpb.BrokerEntryMetadata, crc bool, md *pulsarpb.MessageMetadata, payload string) []byte {
	t.Helper()
	b, err := BuildEntry(bm, crc, md, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// peekSeeds returns well-formed entries first (wellFormed of them), then
// damaged ones.
func peekSeeds(t testing.TB) (seeds [][]byte, wellFormed int) {
	withVersion := sampleMD()
	withVersion.SchemaVersion = EncodeSchemaVersion(3)
	withVersion.NumMessagesInBatch = proto.Int32(5)
	withVersion.Properties = []*pulsarpb.KeyValue{{Key: proto.String("k"), Value: proto.String("v")}}
	withID := sampleMD()
	withID.SchemaId = []byte{0x01, 0, 0, 0, 1, 'k', 'v'}
	withID.ReplicateTo = []string{"east", "west"}
	withBoth := sampleMD()
	withBoth.SchemaVersion = []byte{} // present but empty
	withBoth.SchemaId = []byte{0, 0, 0, 0, 42}
	withBoth.NumMessagesInBatch = proto.Int32(-3)
	onlyTS := &pulsarpb.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(7)}
	seeds = [][]byte{
		buildSeed(t, nil, false, sampleMD(), ""),
		buildSeed(t, nil, true, withVersion, "payload"),
		buildSeed(t, sampleBM(), true, withID, "x"),
		buildSeed(t, sampleBM(), false, withBoth, "yz"),
		buildSeed(t, onlyTS, true, sampleMD(), "p"),
		buildSeed(t, &pulsarpb.BrokerEntryMetadata{}, false, sampleMD(), ""),
		handFrame(true, true, []byte("hand")),
	}
	wellFormed = len(seeds)
	// A flipped payload byte (CRC), a cut, short and empty frames.
	crcBad := bytes.Clone(seeds[1])
	crcBad[len(crcBad)-1] ^= 0xff
	seeds = append(seeds, crcBad, seeds[2][:len(seeds[2])/2],
		nil, []byte{0x0e}, []byte{0x0e, 0x02, 0, 0, 0, 9}, []byte{0x0e, 0x01, 1, 2, 3, 4}, []byte{0, 0, 0, 0},
		[]byte{0x0e, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0e, 0x01})
	// A property whose KeyValue (`0a 01 6b 12 01 76`) claims more bytes than it has.
	bp := bytes.Clone(seeds[1])
	if i := bytes.Index(bp, []byte{0x0a, 0x01, 'k'}); i >= 0 {
		bp[i+1] = 0x05
		seeds = append(seeds, bp)
	}
	// Broker metadata that is not a well-formed message (tag 0).
	seeds = append(seeds, []byte{0x0e, 0x02, 0, 0, 0, 2, 0x00, 0x01, 0, 0, 0, 0})
	return seeds, wellFormed
}

// Every well-formed entry takes the fast path; damaged ones never take it
// wrongly.
func TestPeekEntryMatchesParse(t *testing.T) {
	seeds, wellFormed := peekSeeds(t)
	for i, s := range seeds {
		ok := samePeekAsParse(t, s)
		if i < wellFormed && !ok {
			t.Errorf("seed %d: well-formed entry %x not accepted by the fast path", i, s)
		}
	}
}

// withMD returns a copy of md changed by f.
func withMD(md *pulsarpb.MessageMetadata, f func(*pulsarpb.MessageMetadata)) *pulsarpb.MessageMetadata {
	c := proto.Clone(md).(*pulsarpb.MessageMetadata)
	f(c)
	return c
}

// TestPeekEntryFields pins what PeekEntry reads, independently of Entry.Refs.
func TestPeekEntryFields(t *testing.T) {
	md := sampleMD()
	md.SchemaVersion = EncodeSchemaVersion(3)
	md.NumMessagesInBatch = proto.Int32(4)
	tests := []struct {
		name  string
		frame []byte
		want  EntryRefs
	}{
		{"hand frame, broker meta and crc", handFrame(true, true, []byte("pl")), EntryRefs{
			HasBrokerMeta: true, HasIndex: true, Index: 9, HasBrokerTimestamp: true, BrokerTimestamp: 5,
			PublishTime: 2, NumMessages: 1, HasChecksum: true,
			Checksum:       crc32cBitwise(append([]byte{0, 0, 0, byte(len(sampleMDBytes))}, append(sampleMDBytes, "pl"...)...)),
			ChecksumOK:     true,
			MetadataOffset: 6 + len(sampleBMBytes) + 6,
			Payload:        []byte("pl"),
		}},
		{"hand frame, bare", handFrame(false, false, nil), EntryRefs{PublishTime: 2, NumMessages: 1, Payload: []byte{}}},
		{"schema version and batch", buildSeed(t, nil, false, md, "x"), EntryRefs{
			PublishTime: 2, NumMessages: 4, SchemaVersion: EncodeSchemaVersion(3),
			Payload: []byte("x"), BatchFramingCheckable: true,
		}},
		{"compressed batch", buildSeed(t, nil, false, withMD(md, func(m *pulsarpb.MessageMetadata) {
			m.Compression = pulsarpb.CompressionType_ZLIB.Enum()
		}), "x"), EntryRefs{PublishTime: 2, NumMessages: 4, SchemaVersion: EncodeSchemaVersion(3), Payload: []byte("x")}},
		{"encrypted batch", buildSeed(t, nil, false, withMD(md, func(m *pulsarpb.MessageMetadata) {
			m.EncryptionAlgo = proto.String("RSA")
		}), "x"), EntryRefs{PublishTime: 2, NumMessages: 4, SchemaVersion: EncodeSchemaVersion(3), Payload: []byte("x")}},
		{"chunk of a batch", buildSeed(t, nil, false, withMD(md, func(m *pulsarpb.MessageMetadata) {
			m.NumChunksFromMsg = proto.Int32(3)
		}), "x"), EntryRefs{PublishTime: 2, NumMessages: 4, SchemaVersion: EncodeSchemaVersion(3), Payload: []byte("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r EntryRefs
			if !PeekEntry(tt.frame, &r) {
				t.Fatalf("PeekEntry declined %x", tt.frame)
			}
			if !reflect.DeepEqual(r, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", r, tt.want)
			}
		})
	}
}

// TestPeekEntryChecksum: every byte the checksum covers, and the checksum
// itself, is felt; a frame without a CRC block never claims one.
func TestPeekEntryChecksum(t *testing.T) {
	for _, bm := range []*pulsarpb.BrokerEntryMetadata{nil, sampleBM()} {
		good := buildSeed(t, bm, true, sampleMD(), "payload")
		var r EntryRefs
		if !PeekEntry(good, &r) || !r.HasChecksum || !r.ChecksumOK {
			t.Fatalf("broker meta %v: good frame: %+v", bm != nil, r)
		}
		for i := r.MetadataOffset - 4; i < len(good); i++ {
			bad := bytes.Clone(good)
			bad[i] ^= 0x40
			// A flip in the metadata may make it undecodable: then the fast path
			// declines and ParseEntryInto has the say.
			if PeekEntry(bad, &r) && r.ChecksumOK {
				t.Errorf("broker meta %v: byte %d flipped still matches", bm != nil, i)
			}
		}
		if !PeekEntry(buildSeed(t, bm, false, sampleMD(), "payload"), &r) || r.HasChecksum || r.ChecksumOK {
			t.Errorf("broker meta %v: frame without CRC block: %+v", bm != nil, r)
		}
	}
}

func TestPeekEntryAllocatesNothing(t *testing.T) {
	seeds, wellFormed := peekSeeds(t)
	var r EntryRefs
	allocs := testing.AllocsPerRun(10, func() {
		for _, s := range seeds[:wellFormed] {
			PeekEntry(s, &r)
		}
	})
	if allocs != 0 {
		t.Errorf("PeekEntry allocates %v times per run", allocs)
	}
}

// FuzzPeekEntry holds PeekEntry equal to ParseEntryInto on any input.
func FuzzPeekEntry(f *testing.F) {
	seeds, _ := peekSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		samePeekAsParse(t, b)
	})
}
