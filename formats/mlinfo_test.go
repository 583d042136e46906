package formats

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/testutil/golden"

	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// allEncodings lists every encoding a node value can have.
var allEncodings = []Encoding{
	Plain,
	{Compressed: true, Codec: mlpb.CompressionType_NONE},
	{Compressed: true, Codec: mlpb.CompressionType_LZ4},
	{Compressed: true, Codec: mlpb.CompressionType_ZLIB},
	{Compressed: true, Codec: mlpb.CompressionType_ZSTD},
	{Compressed: true, Codec: mlpb.CompressionType_SNAPPY},
}

// withUnknownField99 appends field 99 (a string) to a message's bytes, as a
// newer Pulsar might write it.
func withUnknownField99(b []byte) []byte {
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	return protowire.AppendString(b, "from-the-future")
}

// sampleMLInfoBytes is a ManagedLedgerInfo with 20 ledgers, ML and ledger
// properties, and unknown fields at the top level and inside a LedgerInfo.
func sampleMLInfoBytes(t testing.TB) []byte {
	info := &mlpb.ManagedLedgerInfo{}
	for i := range int64(20) {
		li := &mlpb.ManagedLedgerInfo_LedgerInfo{
			LedgerId:  proto.Int64(100 + i),
			Entries:   proto.Int64(1000),
			Size:      proto.Int64(65536),
			Timestamp: proto.Int64(1700000000000 + i),
		}
		if i < 19 {
			SetLedgerProperty(li, "firstEntryIndex", fmt.Sprint(i*1000))
		}
		info.LedgerInfo = append(info.LedgerInfo, li)
	}
	info.LedgerInfo[19].Entries = proto.Int64(0) // the open last ledger
	SetMLProperty(info, "index", "19999")
	b, err := proto.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	// Unknown field inside the first LedgerInfo: rebuild its bytes.
	var first []byte
	first, err = proto.Marshal(info.LedgerInfo[0])
	if err != nil {
		t.Fatal(err)
	}
	rest := &mlpb.ManagedLedgerInfo{LedgerInfo: info.LedgerInfo[1:], Properties: info.Properties}
	b, err = proto.Marshal(rest)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendBytes(out, withUnknownField99(first))
	out = append(out, b...)
	return withUnknownField99(out)
}

func sampleCursorInfoBytes(t testing.TB) []byte {
	c := &mlpb.ManagedCursorInfo{
		CursorsLedgerId:    proto.Int64(-1),
		MarkDeleteLedgerId: proto.Int64(104),
		MarkDeleteEntryId:  proto.Int64(17),
		LastActive:         proto.Int64(1700000000000),
		Properties:         []*mlpb.LongProperty{{Name: proto.String("p"), Value: proto.Int64(1)}},
	}
	b, err := proto.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return withUnknownField99(b)
}

func goldenName(kind string, enc Encoding) string {
	name := strings.NewReplacer("(", "-", ")", "").Replace(enc.String())
	return filepath.Join("testdata", kind+"-"+name+".bin")
}

// checkGolden compares got with the golden file, or rewrites it under -update.
func checkGolden(t *testing.T, path string, got []byte) []byte {
	t.Helper()
	// The codec libraries write these bytes: a difference means one changed.
	return golden.Check(t, path, got)
}

// wantHeader builds the 0x4778 header by hand: magic, i32 size, then
// {compressionType=1 varint, uncompressedSize=2 varint}.
func wantHeader(codec mlpb.CompressionType, size int) []byte {
	hdr := []byte{0x08, byte(codec), 0x10}
	for size >= 0x80 {
		hdr = append(hdr, byte(size)|0x80)
		size >>= 7
	}
	hdr = append(hdr, byte(size))
	out := []byte{0x47, 0x78, 0, 0, 0, byte(len(hdr))}
	return append(out, hdr...)
}

func TestManagedLedgerInfoGolden(t *testing.T) {
	raw := sampleMLInfoBytes(t)
	want := new(mlpb.ManagedLedgerInfo)
	if err := proto.Unmarshal(raw, want); err != nil {
		t.Fatal(err)
	}
	for _, enc := range allEncodings {
		t.Run(enc.String(), func(t *testing.T) {
			got, err := EncodeManagedLedgerInfo(want, enc)
			if err != nil {
				t.Fatal(err)
			}
			golden := checkGolden(t, goldenName("mlinfo", enc), got)
			if enc.Compressed {
				h := wantHeader(enc.Codec, len(raw))
				if !bytes.HasPrefix(golden, h) {
					t.Fatalf("header = % x, want % x", golden[:min(len(golden), len(h))], h)
				}
				if enc.Codec == mlpb.CompressionType_NONE && !bytes.Equal(golden[len(h):], raw) {
					t.Fatal("none(0x4778) body is not the raw protobuf")
				}
			} else if !bytes.Equal(golden, raw) {
				t.Fatal("plain encoding is not the raw protobuf")
			}

			info, gotEnc, err := DecodeManagedLedgerInfo(golden)
			if err != nil {
				t.Fatal(err)
			}
			if gotEnc != enc {
				t.Errorf("encoding = %v, want %v", gotEnc, enc)
			}
			if !proto.Equal(info, want) {
				t.Errorf("decoded info differs")
			}
			// Unknown fields survive: re-marshaling the decoded message gives the input bytes.
			again, err := proto.Marshal(info)
			if err != nil || !bytes.Equal(again, raw) {
				t.Errorf("re-marshaled bytes differ from the original (unknown fields lost?)")
			}
		})
	}
}

func TestManagedCursorInfoGolden(t *testing.T) {
	raw := sampleCursorInfoBytes(t)
	want := new(mlpb.ManagedCursorInfo)
	if err := proto.Unmarshal(raw, want); err != nil {
		t.Fatal(err)
	}
	for _, enc := range allEncodings {
		t.Run(enc.String(), func(t *testing.T) {
			got, err := EncodeManagedCursorInfo(want, enc)
			if err != nil {
				t.Fatal(err)
			}
			golden := checkGolden(t, goldenName("cursor", enc), got)
			if enc.Compressed && !bytes.HasPrefix(golden, wantHeader(enc.Codec, len(raw))) {
				t.Fatalf("header = % x", golden[:12])
			}
			info, gotEnc, err := DecodeManagedCursorInfo(golden)
			if err != nil {
				t.Fatal(err)
			}
			if gotEnc != enc || !proto.Equal(info, want) {
				t.Errorf("decoded %v %v, want %v", gotEnc, info, enc)
			}
		})
	}
}

func TestManagedLedgerInfoRewriteKeepsUnknownFields(t *testing.T) {
	raw := sampleMLInfoBytes(t)
	for _, enc := range allEncodings {
		stored, err := EncodeManagedLedgerInfo(mustDecodeML(t, raw), enc)
		if err != nil {
			t.Fatal(err)
		}
		// read-modify-write, as back-fill does
		info, gotEnc, err := DecodeManagedLedgerInfo(stored)
		if err != nil {
			t.Fatal(err)
		}
		SetLedgerProperty(info.LedgerInfo[19], "firstEntryIndex", "19000")
		SetLedgerProperty(info.LedgerInfo[0], "firstEntryIndex", "0") // replace in place
		rewritten, err := EncodeManagedLedgerInfo(info, gotEnc)
		if err != nil {
			t.Fatal(err)
		}
		back, backEnc, err := DecodeManagedLedgerInfo(rewritten)
		if err != nil {
			t.Fatal(err)
		}
		if backEnc != enc {
			t.Errorf("%v: rewrite changed the encoding to %v", enc, backEnc)
		}
		for _, m := range []proto.Message{back, back.LedgerInfo[0]} {
			if u := m.ProtoReflect().GetUnknown(); !bytes.Contains(u, []byte("from-the-future")) {
				t.Errorf("%v: unknown field 99 lost from %T", enc, m)
			}
		}
		if v, _ := LedgerProperty(back.LedgerInfo[19], "firstEntryIndex"); v != "19000" {
			t.Errorf("%v: new property = %q", enc, v)
		}
		if n := len(back.LedgerInfo[0].Properties); n != 1 {
			t.Errorf("%v: replacing a property left %d properties", enc, n)
		}
		if v, ok := MLProperty(back, "index"); !ok || v != "19999" {
			t.Errorf("%v: ML property index = %q, %v", enc, v, ok)
		}
	}
}

func mustDecodeML(t *testing.T, b []byte) *mlpb.ManagedLedgerInfo {
	t.Helper()
	info, _, err := DecodeManagedLedgerInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestDecodeManagedLedgerInfoEmpty(t *testing.T) {
	info, enc, err := DecodeManagedLedgerInfo(nil)
	if err != nil || enc != Plain || len(info.LedgerInfo) != 0 {
		t.Fatalf("empty value: %v %v %v", info, enc, err)
	}
}

// compressedValue assembles a 0x4778 value by hand with any header fields.
func compressedValue(hdr, body []byte) []byte {
	out := []byte{0x47, 0x78}
	out = binary.BigEndian.AppendUint32(out, uint32(len(hdr)))
	return append(append(out, hdr...), body...)
}

func TestDecodeManagedLedgerInfoBadHeaders(t *testing.T) {
	raw := sampleMLInfoBytes(t)
	lz4Body, err := compress(codecLZ4, raw)
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(codec, size int) []byte {
		b := protowire.AppendTag(nil, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(codec))
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(int64(size)))
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"magic only", []byte{0x47, 0x78}, "compression header size"},
		{"header size beyond value", []byte{0x47, 0x78, 0, 0, 1, 0, 0x08}, "header size 256 exceeds"},
		{"negative header size", []byte{0x47, 0x78, 0xff, 0xff, 0xff, 0xff}, "header size -1"},
		{"header not protobuf", compressedValue([]byte{0xff}, lz4Body), "compressed header: offset 6"},
		{"header missing size", compressedValue([]byte{0x08, 0x01}, lz4Body), "compressed header"},
		{"unknown codec", compressedValue(hdr(9, len(raw)), lz4Body), "compressed header"},
		{"size too small", compressedValue(hdr(1, len(raw)-1), lz4Body), "lz4"},
		{"size too large", compressedValue(hdr(1, len(raw)+1), lz4Body), "header says"},
		{"negative size", compressedValue(hdr(1, -5), lz4Body), "out of range"},
		{"absurd size", compressedValue(hdr(1, 1<<30), lz4Body), "out of range"},
		{"impossible lz4 ratio", compressedValue(hdr(1, 100<<20), lz4Body[:10]), "impossible"},
		{"none with wrong size", compressedValue(hdr(0, len(raw)+3), raw), "header says"},
		{"zstd with lz4 body", compressedValue(hdr(3, len(raw)), lz4Body), "zstd"},
		{"zlib with lz4 body", compressedValue(hdr(2, len(raw)), lz4Body), "zlib"},
		{"snappy size mismatch", compressedValue(hdr(4, len(raw)+1), snappyOf(t, raw)), "snappy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodeManagedLedgerInfo(tc.in)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "not plain protobuf either") {
				t.Errorf("error %q does not say the plain fallback was tried", err)
			}
		})
	}
	// The good value decodes, proving the failures above are the header's.
	if _, _, err := DecodeManagedLedgerInfo(compressedValue(hdr(1, len(raw)), lz4Body)); err != nil {
		t.Fatal(err)
	}
}

func snappyOf(t *testing.T, b []byte) []byte {
	out, err := compress(codecSNAPPY, b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecodeManagedLedgerInfoBadPlain(t *testing.T) {
	_, _, err := DecodeManagedLedgerInfo([]byte{0x0a, 0x05, 0x08})
	if err == nil || !strings.Contains(err.Error(), "plain protobuf") {
		t.Fatalf("error = %v", err)
	}
}

func TestEncodeManagedLedgerInfoErrors(t *testing.T) {
	missing := &mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{{}}} // ledgerId required
	if _, err := EncodeManagedLedgerInfo(missing, Plain); err == nil {
		t.Error("missing required ledgerId: no error")
	}
	if _, err := EncodeManagedLedgerInfo(&mlpb.ManagedLedgerInfo{}, Encoding{Compressed: true, Codec: 9}); err == nil {
		t.Error("unknown codec: no error")
	}
	if _, err := EncodeManagedCursorInfo(&mlpb.ManagedCursorInfo{}, Plain); err == nil {
		t.Error("cursor missing cursorsLedgerId: no error")
	}
}

func TestEncodingStringRoundTrip(t *testing.T) {
	want := []string{"plain", "none(0x4778)", "lz4", "zlib", "zstd", "snappy"}
	for i, enc := range allEncodings {
		if enc.String() != want[i] {
			t.Errorf("String() = %q, want %q", enc.String(), want[i])
		}
		back, err := ParseEncoding(enc.String())
		if err != nil || back != enc {
			t.Errorf("ParseEncoding(%q) = %v, %v", enc.String(), back, err)
		}
	}
	if _, err := ParseEncoding("gzip"); err == nil {
		t.Error("ParseEncoding(gzip): no error")
	}
}

func TestPropertiesOnNil(t *testing.T) {
	if _, ok := LedgerProperty(nil, "x"); ok {
		t.Error("LedgerProperty(nil) found a value")
	}
	if _, ok := MLProperty(nil, "x"); ok {
		t.Error("MLProperty(nil) found a value")
	}
}

func FuzzDecodeManagedLedgerInfo(f *testing.F) {
	raw := sampleMLInfoBytes(f)
	info := new(mlpb.ManagedLedgerInfo)
	if err := proto.Unmarshal(raw, info); err != nil {
		f.Fatal(err)
	}
	for _, enc := range allEncodings {
		b, err := EncodeManagedLedgerInfo(info, enc)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x47, 0x78, 0, 0, 0, 4, 0x08, 0x01, 0x10, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		info, enc, err := DecodeManagedLedgerInfo(b)
		if err != nil {
			return
		}
		out, err := EncodeManagedLedgerInfo(info, enc)
		if err != nil {
			return // partial message
		}
		again, enc2, err := DecodeManagedLedgerInfo(out)
		if err != nil || enc2 != enc || !proto.Equal(again, info) {
			t.Fatalf("round trip in %v: %v", enc, err)
		}
	})
}

func FuzzDecodeManagedCursorInfo(f *testing.F) {
	raw := sampleCursorInfoBytes(f)
	c := new(mlpb.ManagedCursorInfo)
	if err := proto.Unmarshal(raw, c); err != nil {
		f.Fatal(err)
	}
	for _, enc := range allEncodings {
		b, err := EncodeManagedCursorInfo(c, enc)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, enc, err := DecodeManagedCursorInfo(b)
		if err != nil {
			return
		}
		out, err := EncodeManagedCursorInfo(c, enc)
		if err != nil {
			return
		}
		again, enc2, err := DecodeManagedCursorInfo(out)
		if err != nil || enc2 != enc || !proto.Equal(again, c) {
			t.Fatalf("round trip in %v: %v", enc, err)
		}
	})
}

// A property added by SetLedgerProperty is an ordinary KeyValue to protobuf
// (it is allocated with its strings, in one piece).
func TestSetLedgerPropertyNewKeyValue(t *testing.T) {
	li := &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(3), Properties: make([]*mlpb.KeyValue, 0, 4)}
	if n := testing.AllocsPerRun(1, func() { SetLedgerProperty(li, "firstEntryIndex", "42") }); n != 1 {
		t.Errorf("adding a property: %v allocations, want 1", n)
	}
	li.Properties = li.Properties[:1]
	SetLedgerProperty(li, "other", "x")
	SetLedgerProperty(li, "other", "y") // replaced in place
	want := &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(3), Properties: []*mlpb.KeyValue{
		{Key: proto.String("firstEntryIndex"), Value: proto.String("42")}, {Key: proto.String("other"), Value: proto.String("y")}}}
	got, err := marshal.Marshal(li)
	if err != nil {
		t.Fatal(err)
	}
	wantB, _ := marshal.Marshal(want)
	if !bytes.Equal(got, wantB) || !proto.Equal(li, want) || !proto.Equal(proto.Clone(li), want) {
		t.Errorf("properties set = %v, want %v", li, want)
	}
}
