package formats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"google.golang.org/protobuf/proto"
)

// crc32cBitwise is an independent, table-free CRC-32C (Castagnoli,
// reflected polynomial 0x82F63B78) used to check the frame's checksum.
func crc32cBitwise(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82F63B78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

func TestCRC32CReference(t *testing.T) {
	// Published check value of CRC-32C.
	if got := crc32cBitwise([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("crc32cBitwise(123456789) = %#x, want 0xE3069283", got)
	}
}

// Hand-encoded pieces of the sample entry.
var (
	// MessageMetadata{producer_name:"p", sequence_id:1, publish_time:2}
	sampleMDBytes = []byte{0x0a, 0x01, 'p', 0x10, 0x01, 0x18, 0x02}
	// BrokerEntryMetadata{broker_timestamp:5, index:9}
	sampleBMBytes = []byte{0x08, 0x05, 0x10, 0x09}
)

func sampleMD() *pulsarpb.MessageMetadata {
	return &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(2)}
}

func sampleBM() *pulsarpb.BrokerEntryMetadata {
	return &pulsarpb.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(5), Index: proto.Uint64(9)}
}

// handFrame assembles an entry frame byte by byte, independently of BuildEntry.
func handFrame(withBM, withCRC bool, payload []byte) []byte {
	var checked []byte
	checked = append(checked, 0, 0, 0, byte(len(sampleMDBytes)))
	checked = append(checked, sampleMDBytes...)
	checked = append(checked, payload...)
	var out []byte
	if withBM {
		out = append(out, 0x0e, 0x02, 0, 0, 0, byte(len(sampleBMBytes)))
		out = append(out, sampleBMBytes...)
	}
	if withCRC {
		out = append(out, 0x0e, 0x01)
		out = binary.BigEndian.AppendUint32(out, crc32cBitwise(checked))
	}
	return append(out, checked...)
}

func TestBuildEntryMatchesHandVector(t *testing.T) {
	payload := []byte("hi")
	// Full vector written out for the case with both optional blocks.
	full := []byte{
		0x0e, 0x02, 0x00, 0x00, 0x00, 0x04, 0x08, 0x05, 0x10, 0x09, // broker entry metadata
		0x0e, 0x01, 0, 0, 0, 0, // crc32c, patched below
		0x00, 0x00, 0x00, 0x07, 0x0a, 0x01, 'p', 0x10, 0x01, 0x18, 0x02, // metadata
		'h', 'i',
	}
	binary.BigEndian.PutUint32(full[12:], crc32cBitwise(full[16:]))
	if !bytes.Equal(full, handFrame(true, true, payload)) {
		t.Fatalf("handFrame disagrees with the written-out vector")
	}
	for _, tc := range []struct {
		name           string
		withBM, withCR bool
	}{
		{"bare", false, false},
		{"checksum", false, true},
		{"broker-meta", true, false},
		{"both", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bm *pulsarpb.BrokerEntryMetadata
			if tc.withBM {
				bm = sampleBM()
			}
			got, err := BuildEntry(bm, tc.withCR, sampleMD(), payload)
			if err != nil {
				t.Fatal(err)
			}
			want := handFrame(tc.withBM, tc.withCR, payload)
			if !bytes.Equal(got, want) {
				t.Fatalf("BuildEntry = % x\nwant         % x", got, want)
			}

			e, err := ParseEntry(want)
			if err != nil {
				t.Fatal(err)
			}
			if (e.BrokerMeta != nil) != tc.withBM || (tc.withBM && !proto.Equal(e.BrokerMeta, sampleBM())) {
				t.Errorf("BrokerMeta = %v", e.BrokerMeta)
			}
			if e.HasChecksum != tc.withCR || e.ChecksumOK != tc.withCR {
				t.Errorf("HasChecksum=%v ChecksumOK=%v, want %v", e.HasChecksum, e.ChecksumOK, tc.withCR)
			}
			if tc.withCR && e.Checksum != crc32cBitwise(want[len(want)-13:]) {
				t.Errorf("Checksum = %#x", e.Checksum)
			}
			wantOff := 0
			if tc.withBM {
				wantOff += 10
			}
			if tc.withCR {
				wantOff += 6
			}
			if e.MetadataOffset != wantOff {
				t.Errorf("MetadataOffset = %d, want %d", e.MetadataOffset, wantOff)
			}
			if !proto.Equal(e.Metadata, sampleMD()) || string(e.Payload) != "hi" {
				t.Errorf("Metadata = %v, Payload = %q", e.Metadata, e.Payload)
			}
		})
	}
}

func TestParseEntryBadChecksum(t *testing.T) {
	b := handFrame(true, true, []byte("hi"))
	b[len(b)-1] ^= 0xff // corrupt the payload, not the stored sum
	e, err := ParseEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if !e.HasChecksum || e.ChecksumOK {
		t.Fatalf("HasChecksum=%v ChecksumOK=%v, want true false", e.HasChecksum, e.ChecksumOK)
	}
}

func TestParseEntryErrorsNameOffset(t *testing.T) {
	good := handFrame(true, true, []byte("hi"))
	tests := []struct {
		name  string
		in    []byte
		want  string // substring of the error
		trunc bool
	}{
		{"empty", nil, "offset 0: metadata size", true},
		{"bm size cut", good[:4], "offset 2: broker entry metadata size", true},
		{"bm size too big", []byte{0x0e, 0x02, 0, 0, 0, 9, 1}, "offset 2: broker entry metadata size 9", true},
		{"crc cut", good[:13], "offset 12: crc32c", true},
		{"metadata size cut", good[:18], "offset 16: metadata size", true},
		{"metadata too big", append(bytes.Clone(good[:16]), 0, 0, 0, 99, 1), "offset 16: metadata size 99", true},
		{"bad metadata", []byte{0, 0, 0, 1, 0xff}, "offset 4: message metadata", false},
		{"bad broker meta", []byte{0x0e, 0x02, 0, 0, 0, 1, 0xff, 0, 0, 0, 0}, "offset 6: broker entry metadata", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEntry(tc.in)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if got := errors.Is(err, ErrTruncated); got != tc.trunc {
				t.Errorf("errors.Is(ErrTruncated) = %v, want %v (%v)", got, tc.trunc, err)
			}
		})
	}
}

func TestParseEntryIntoReuses(t *testing.T) {
	with := handFrame(true, false, []byte("a"))
	without := handFrame(false, false, []byte("b"))
	var e Entry
	md := new(pulsarpb.MessageMetadata)
	bm := new(pulsarpb.BrokerEntryMetadata)
	if err := ParseEntryInto(with, &e, md, bm); err != nil {
		t.Fatal(err)
	}
	if e.Metadata != md || e.BrokerMeta != bm || bm.GetIndex() != 9 {
		t.Fatalf("did not fill the given messages: %+v", e)
	}
	if err := ParseEntryInto(without, &e, md, bm); err != nil {
		t.Fatal(err)
	}
	if e.BrokerMeta != nil || string(e.Payload) != "b" {
		t.Fatalf("stale fields after reuse: %+v", e)
	}
}

func TestBuildEntryRequiresMetadata(t *testing.T) {
	if _, err := BuildEntry(nil, false, nil, nil); err == nil {
		t.Error("nil metadata: no error")
	}
	if _, err := BuildEntry(nil, false, &pulsarpb.MessageMetadata{}, nil); err == nil {
		t.Error("metadata missing required fields: no error")
	}
}

func TestEntryBaseIndex(t *testing.T) {
	bm := func(i uint64) *pulsarpb.BrokerEntryMetadata {
		return &pulsarpb.BrokerEntryMetadata{Index: proto.Uint64(i)}
	}
	md := func(n int32) *pulsarpb.MessageMetadata {
		return &pulsarpb.MessageMetadata{NumMessagesInBatch: proto.Int32(n)}
	}
	tests := []struct {
		name string
		bm   *pulsarpb.BrokerEntryMetadata
		md   *pulsarpb.MessageMetadata
		want int64
		ok   bool
	}{
		{"single message, default batch size", bm(0), &pulsarpb.MessageMetadata{}, 0, true},
		{"nil metadata counts one", bm(41), nil, 41, true},
		{"batch of 10 ending at 9", bm(9), md(10), 0, true},
		{"batch of 5 ending at 104", bm(104), md(5), 100, true},
		{"no broker metadata", nil, md(1), 0, false},
		{"no index", &pulsarpb.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(1)}, md(1), 0, false},
		{"batch larger than index", bm(2), md(5), 0, false},
		{"zero batch size", bm(2), md(0), 0, false},
		{"index beyond int64", bm(1 << 63), md(1), 0, false},
	}
	for _, tc := range tests {
		got, ok := EntryBaseIndex(tc.bm, tc.md)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: EntryBaseIndex = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBatchHandVector(t *testing.T) {
	// Two messages: SingleMessageMetadata{payload_size:2} "ab", {payload_size:1, partition_key:"k"} "c".
	vec := []byte{
		0, 0, 0, 2, 0x18, 0x02, 'a', 'b',
		0, 0, 0, 5, 0x12, 0x01, 'k', 0x18, 0x01, 'c',
	}
	msgs, err := ParseBatch(vec, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || string(msgs[0].Payload) != "ab" || string(msgs[1].Payload) != "c" ||
		msgs[1].Meta.GetPartitionKey() != "k" {
		t.Fatalf("ParseBatch = %v", msgs)
	}
	built, err := BuildBatch([]BatchMessage{
		{Payload: []byte("ab")},
		{Meta: &pulsarpb.SingleMessageMetadata{PartitionKey: proto.String("k")}, Payload: []byte("c")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, vec) {
		t.Fatalf("BuildBatch = % x\nwant        % x", built, vec)
	}

	for _, tc := range []struct {
		name string
		in   []byte
		n    int
		want string
	}{
		{"too many messages", vec, 5, "cannot fit"},
		{"negative count", vec, -1, "cannot fit"},
		{"trailing bytes", vec, 1, "offset 8: 10 bytes left after 1 messages"},
		{"payload cut", vec[:7], 1, "offset 6: payload size 2"},
		{"metadata cut", vec[:5], 1, "offset 0: metadata size 2"},
		{"second size cut", vec[:10], 2, "batch message 1: offset 8"},
	} {
		if _, err := ParseBatch(tc.in, tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := BuildBatch([]BatchMessage{{Meta: &pulsarpb.SingleMessageMetadata{PayloadSize: proto.Int32(3)}, Payload: []byte("c")}}); err == nil {
		t.Error("BuildBatch with a wrong payload_size: no error")
	}
}

func TestBuildBatchLeavesInputAlone(t *testing.T) {
	meta := &pulsarpb.SingleMessageMetadata{PartitionKey: proto.String("k")}
	if _, err := BuildBatch([]BatchMessage{{Meta: meta, Payload: []byte("xyz")}}); err != nil {
		t.Fatal(err)
	}
	if meta.PayloadSize != nil {
		t.Error("BuildBatch modified the caller's metadata")
	}
}

func TestPayloadCompressionRoundTrip(t *testing.T) {
	payload := bytes.Repeat([]byte("pulsar message payload "), 50)
	for c := range pulsarpb.CompressionType_SNAPPY + 1 {
		packed, err := CompressPayload(c, payload)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		got, err := DecompressPayload(c, packed, len(payload))
		if err != nil || !bytes.Equal(got, payload) {
			t.Errorf("%v: round trip failed: %v", c, err)
		}
		if c != pulsarpb.CompressionType_NONE {
			if _, err := DecompressPayload(c, packed, len(payload)+1); err == nil {
				t.Errorf("%v: wrong uncompressed size accepted", c)
			}
		}
	}
}

func FuzzParseEntry(f *testing.F) {
	for _, bm := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			f.Add(handFrame(bm, crc, []byte("payload")))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0x0e, 0x02, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x0e, 0x01, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEntry(b)
		if err != nil {
			return
		}
		if e.MetadataOffset < 0 || e.MetadataOffset+4 > len(b) {
			t.Fatalf("MetadataOffset %d outside %d bytes", e.MetadataOffset, len(b))
		}
		rebuilt, err := BuildEntry(e.BrokerMeta, e.HasChecksum, e.Metadata, e.Payload)
		if err != nil {
			return // e.g. metadata missing required fields
		}
		e2, err := ParseEntry(rebuilt)
		if err != nil {
			t.Fatalf("rebuilt entry does not parse: %v", err)
		}
		if !proto.Equal(e.Metadata, e2.Metadata) || !proto.Equal(e.BrokerMeta, e2.BrokerMeta) ||
			!bytes.Equal(e.Payload, e2.Payload) || e2.HasChecksum != e.HasChecksum || e2.HasChecksum && !e2.ChecksumOK {
			t.Fatalf("rebuilt entry differs: %+v vs %+v", e, e2)
		}
	})
}

func FuzzParseBatch(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 0x18, 0x02, 'a', 'b', 0, 0, 0, 5, 0x12, 0x01, 'k', 0x18, 0x01, 'c'}, 2)
	f.Add([]byte{0, 0, 0, 0}, 1)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		msgs, err := ParseBatch(b, n)
		if err != nil {
			return
		}
		rebuilt, err := BuildBatch(msgs)
		if err != nil {
			return
		}
		again, err := ParseBatch(rebuilt, n)
		if err != nil || len(again) != len(msgs) {
			t.Fatalf("rebuilt batch: %v", err)
		}
		for i := range msgs {
			if !proto.Equal(msgs[i].Meta, again[i].Meta) || !bytes.Equal(msgs[i].Payload, again[i].Payload) {
				t.Fatalf("message %d differs after rebuild", i)
			}
		}
	})
}

func BenchmarkParseEntry(b *testing.B) {
	md := sampleMD()
	md.Properties = []*pulsarpb.KeyValue{{Key: proto.String("k"), Value: proto.String("v")}}
	md.SchemaVersion = EncodeSchemaVersion(3)
	md.NumMessagesInBatch = proto.Int32(10)
	frame, err := BuildEntry(sampleBM(), true, md, bytes.Repeat([]byte{'x'}, 1024))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ParseEntry", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseEntry(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParseEntryInto", func(b *testing.B) {
		var e Entry
		md, bm := new(pulsarpb.MessageMetadata), new(pulsarpb.BrokerEntryMetadata)
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			if err := ParseEntryInto(frame, &e, md, bm); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PeekEntry", func(b *testing.B) {
		var r EntryRefs
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			if !PeekEntry(frame, &r) {
				b.Fatal("PeekEntry declined")
			}
		}
	})
}
