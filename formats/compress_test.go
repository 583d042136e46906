package formats

import (
	"bytes"
	"compress/zlib"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/pierrec/lz4/v4"
	"google.golang.org/protobuf/proto"
)

// Pulsar's CompressionCodecZLib deflates with Deflater.SYNC_FLUSH and never
// calls finish(): its streams stop after the sync marker 00 00 ff ff, with no
// final block and no adler32 trailer, and its decode reads exactly
// uncompressedSize bytes. We must read such streams.
func TestDecompressZlibAsPulsarWritesIt(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		// zlib (what java.util.zip.Deflater wraps) at the default level, "hi", SYNC_FLUSH.
		{"sync-flushed", []byte{0x78, 0x9c, 0xca, 0xc8, 0x04, 0x00, 0x00, 0x00, 0xff, 0xff}},
		// Hand-assembled: header 78 01, a non-final stored block LEN=2 NLEN=^2, "hi".
		{"stored, not final", []byte{0x78, 0x01, 0x00, 0x02, 0x00, 0xfd, 0xff, 'h', 'i'}},
		// A finished stream, as we write it: final block and adler32 of "hi" (0x013b00d2).
		{"finished", []byte{0x78, 0x01, 0x01, 0x02, 0x00, 0xfd, 0xff, 'h', 'i', 0x01, 0x3b, 0x00, 0xd2}},
	}
	for _, tc := range tests {
		got, err := decompress(codecZLIB, tc.in, 2)
		if err != nil || string(got) != "hi" {
			t.Errorf("%s: decompress = %q, %v; want \"hi\"", tc.name, got, err)
		}
	}
	// For empty input the encode loop `while (!deflater.needsInput())` never
	// runs, so Pulsar stores no bytes at all, not even the zlib header.
	if got, err := decompress(codecZLIB, nil, 0); err != nil || len(got) != 0 {
		t.Errorf("empty body, size 0: decompress = %q, %v; want nothing", got, err)
	}
	if got, err := decompress(codecZLIB, nil, 1); err == nil {
		t.Errorf("empty body, size 1: decompress = %q, want an error", got)
	}

	bad := []struct {
		name string
		in   []byte
		size int
		want string
	}{
		{"bad adler32", []byte{0x78, 0x01, 0x01, 0x02, 0x00, 0xfd, 0xff, 'h', 'i', 0x01, 0x3b, 0x00, 0xd3}, 2, "checksum"},
		{"more than the header says", []byte{0x78, 0x01, 0x00, 0x02, 0x00, 0xfd, 0xff, 'h', 'i'}, 1, "more than"},
		{"less than the header says", []byte{0x78, 0x01, 0x00, 0x02, 0x00, 0xfd, 0xff, 'h', 'i'}, 3, "header says 3"},
		{"cut inside a block", []byte{0x78, 0x01, 0x00, 0x02, 0x00, 0xfd, 0xff, 'h'}, 2, "zlib"},
	}
	for _, tc := range bad {
		if got, err := decompress(codecZLIB, tc.in, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: decompress = %q, %v; want an error containing %q", tc.name, got, err, tc.want)
		}
	}
}

// inflate reuses zlib readers: one left by a failed stream (bad header, cut
// block, bad trailer, too much output) must read the next stream as a fresh one.
func TestInflateReuseAfterErrors(t *testing.T) {
	var good bytes.Buffer
	w := zlib.NewWriter(&good)
	want := bytes.Repeat([]byte("ledger 17, entry 0; "), 3000) // longer than one 32 KiB window
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	bad := [][]byte{
		{0x00, 0x00},                         // not a zlib header
		{0x78, 0x01, 0x00, 0x02, 0x00, 0xfd}, // cut inside a stored block
		{0x78, 0x01, 0x01, 0x02, 0x00, 0xfd, 0xff, 'h', 'i', 0x01, 0x3b, 0x00, 0xd3}, // bad adler32
		good.Bytes()[:good.Len()/2], // cut half way
	}
	for i := range 3 * len(bad) {
		if _, err := inflate(bad[i%len(bad)], 2); err == nil {
			t.Fatalf("bad stream %d: no error", i%len(bad))
		}
		got, err := inflate(good.Bytes(), len(want))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after bad stream %d: inflate = %d bytes, %v; want the %d bytes written", i%len(bad), len(got), err, len(want))
		}
	}
}

// A whole ManagedLedgerInfo node as a broker with
// managedLedgerInfoCompressionType=ZLIB stores it.
func TestDecodeManagedLedgerInfoPulsarZlib(t *testing.T) {
	raw := sampleMLInfoBytes(t)
	var body bytes.Buffer
	w := zlib.NewWriter(&body)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // SYNC_FLUSH, and no Close: no final block, no trailer
		t.Fatal(err)
	}
	value := append(wantHeader(mlpb.CompressionType_ZLIB, len(raw)), body.Bytes()...)
	info, enc, err := DecodeManagedLedgerInfo(value)
	if err != nil {
		t.Fatal(err)
	}
	if enc != (Encoding{Compressed: true, Codec: mlpb.CompressionType_ZLIB}) {
		t.Errorf("encoding = %v, want zlib", enc)
	}
	want := new(mlpb.ManagedLedgerInfo)
	if err := proto.Unmarshal(raw, want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(info, want) {
		t.Error("decoded info differs from the original")
	}
}

// FuzzDecompressPayload: no codec panics on any body and declared size, and
// a success yields exactly the declared size.
func FuzzDecompressPayload(f *testing.F) {
	raw := []byte("pulsar message payload pulsar message payload")
	for c := range pulsarpb.CompressionType_SNAPPY + 1 {
		packed, err := CompressPayload(c, raw)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(c), packed, len(raw))
	}
	f.Add(byte(codecZLIB), []byte{0x78, 0x9c, 0xca, 0xc8, 0x04, 0x00, 0x00, 0x00, 0xff, 0xff}, 2)
	f.Add(byte(codecLZ4), []byte{0x1f, 0x00, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff}, 1<<20)
	f.Fuzz(func(t *testing.T, codec byte, body []byte, size int) {
		c := pulsarpb.CompressionType(codec % 5)
		if c == pulsarpb.CompressionType_NONE {
			return // returned as is, no size to check
		}
		out, err := DecompressPayload(c, body, size)
		if err == nil && len(out) != size {
			t.Fatalf("%v: %d bytes, want %d", c, len(out), size)
		}
	})
}

// freshCompress is compress with new codec state for every call, as it was
// before the state was pooled: the reference for TestCompressReuseSameBytes.
func freshCompress(t *testing.T, codec int32, src []byte) []byte {
	t.Helper()
	switch codec {
	case codecLZ4:
		var c lz4.Compressor
		dst := make([]byte, lz4.CompressBlockBound(len(src)))
		n, err := c.CompressBlock(src, dst)
		if err != nil {
			t.Fatal(err)
		}
		return dst[:n]
	case codecZLIB:
		var buf bytes.Buffer
		w := newZlibWriter(&buf)
		if _, err := w.Write(src); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	case codecSNAPPY:
		return snappy.Encode(nil, src)
	}
	out, err := compress(codec, src) // none, and zstd (EncodeAll keeps no state between calls)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Reused codec state gives the bytes fresh state gives, whatever came before
// (a large input fills the LZ4 table and zlib window first), and
// appendCompressed keeps what dst held.
func TestCompressReuseSameBytes(t *testing.T) {
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte(i*7 + i/1000)
	}
	inputs := [][]byte{big, {}, []byte("a"), bytes.Repeat([]byte("ledger 17 firstEntryIndex 4200 "), 40), big[:5000], []byte("x")}
	for _, codec := range []int32{codecNone, codecLZ4, codecZLIB, codecZSTD, codecSNAPPY} {
		for round := range 3 {
			for i, in := range inputs {
				want := freshCompress(t, codec, in)
				got, err := appendCompressed([]byte("prefix"), codec, in)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
					t.Fatalf("codec %d round %d input %d (%d bytes): reused state wrote other bytes than fresh state", codec, round, i, len(in))
				}
				back, err := decompress(codec, want, len(in))
				if err != nil || !bytes.Equal(back, in) {
					t.Fatalf("codec %d input %d: round trip: %v", codec, i, err)
				}
			}
		}
	}
}
