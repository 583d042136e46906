package formats

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestLedgerMetadataHandVector(t *testing.T) {
	m := &bkpb.LedgerMetadataFormat{QuorumSize: proto.Int32(2), EnsembleSize: proto.Int32(3), Length: proto.Int64(0)}
	want := []byte("BookieMetadataFormatVersion\t3\n")
	want = append(want, 0x06, 0x08, 0x02, 0x10, 0x03, 0x18, 0x00)
	got, err := EncodeLedgerMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeLedgerMetadata = %q\nwant                   %q", got, want)
	}
	back, err := DecodeLedgerMetadata(want)
	if err != nil || !proto.Equal(back, m) {
		t.Fatalf("DecodeLedgerMetadata = %v, %v", back, err)
	}
}

func sampleLedgerMetadata() *bkpb.LedgerMetadataFormat {
	m := &bkpb.LedgerMetadataFormat{
		QuorumSize:    proto.Int32(2),
		AckQuorumSize: proto.Int32(2),
		EnsembleSize:  proto.Int32(3),
		Length:        proto.Int64(123456),
		LastEntryId:   proto.Int64(999),
		State:         bkpb.LedgerMetadataFormat_CLOSED.Enum(),
		DigestType:    bkpb.LedgerMetadataFormat_CRC32C.Enum(),
		Password:      []byte{},
		Ctime:         proto.Int64(1700000000000),
		CToken:        proto.Int64(7),
		Segment: []*bkpb.LedgerMetadataFormat_Segment{{
			EnsembleMember: []string{"bookie-0:3181", "bookie-1:3181", "bookie-2:3181"},
			FirstEntryId:   proto.Int64(0),
		}},
	}
	SetCustomMetadata(m, "application", "pulsar")
	SetCustomMetadata(m, "component", "managed-ledger")
	SetCustomMetadata(m, "pulsar/managed-ledger", "public/default/persistent/orders")
	return m
}

func TestLedgerMetadataTwoByteLength(t *testing.T) {
	m := sampleLedgerMetadata()
	body, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) < 128 || len(body) > 16383 {
		t.Fatalf("sample body is %d bytes, want a two-byte varint length", len(body))
	}
	want := []byte("BookieMetadataFormatVersion\t3\n")
	want = append(want, byte(len(body)&0x7f|0x80), byte(len(body)>>7))
	want = append(want, body...)
	got, err := EncodeLedgerMetadata(m)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("EncodeLedgerMetadata: %v\n got % x\nwant % x", err, got, want)
	}
	back, err := DecodeLedgerMetadata(got)
	if err != nil || !proto.Equal(back, m) {
		t.Fatalf("round trip: %v", err)
	}
	if v, ok := CustomMetadata(back, "pulsar/managed-ledger"); !ok || v != "public/default/persistent/orders" {
		t.Errorf("CustomMetadata = %q, %v", v, ok)
	}
	if _, ok := CustomMetadata(back, "absent"); ok {
		t.Error("CustomMetadata found an absent key")
	}
	SetCustomMetadata(back, "component", "schema")
	if v, _ := CustomMetadata(back, "component"); v != "schema" || len(back.CustomMetadata) != 3 {
		t.Errorf("SetCustomMetadata did not replace in place: %v", back.CustomMetadata)
	}
}

func TestLedgerMetadataKeepsUnknownFields(t *testing.T) {
	body, err := proto.Marshal(sampleLedgerMetadata())
	if err != nil {
		t.Fatal(err)
	}
	body = withUnknownField99(body)
	in := append([]byte(LedgerMetadataVersionKey+"3\n"), protowire.AppendVarint(nil, uint64(len(body)))...)
	in = append(in, body...)
	m, err := DecodeLedgerMetadata(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := EncodeLedgerMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, in) {
		t.Fatal("decode→encode changed the bytes (unknown field lost?)")
	}
}

func TestDecodeLedgerMetadataErrors(t *testing.T) {
	good, err := EncodeLedgerMetadata(sampleLedgerMetadata())
	if err != nil {
		t.Fatal(err)
	}
	key := LedgerMetadataVersionKey
	tests := []struct {
		name string
		in   []byte
		want string
		is   error
	}{
		{"empty", nil, "header ends at byte 0", ErrTruncated},
		{"key cut", []byte("Bookie"), "header ends at byte 6", ErrTruncated},
		{"key wrong", []byte("BookieMetadataFormatVersiox\t3\n"), "header corrupt at byte 26", nil},
		{"no tab", []byte("BookieMetadataFormatVersion 3\n"), "header corrupt at byte 27", nil},
		{"version 1", []byte(key + "1\nquorumSize:2\n"), "unsupported metadata format version 1", ErrUnsupportedVersion},
		{"version 2", []byte(key + "2\nquorumSize: 2\n"), "unsupported metadata format version 2", ErrUnsupportedVersion},
		{"version 4", []byte(key + "4\n\x00"), "unsupported metadata format version 4", ErrUnsupportedVersion},
		{"version not a number", []byte(key + "x\n"), `offset 28: version "x" is not a number`, nil},
		{"no newline", []byte(key + "3"), "no newline", nil},
		{"overlong version", []byte(key + "00000000003\n"), "no newline within 10 bytes", nil},
		{"length missing", []byte(key + "3\n"), "offset 30: message length varint", nil},
		{"length beyond value", append([]byte(key+"3\n"), 0x7f, 0x08), "offset 30: message length 127 exceeds the 1 bytes left", ErrTruncated},
		{"bad protobuf", append([]byte(key+"3\n"), 0x01, 0xff), "offset 31", nil},
		{"body cut", good[:len(good)-1], "exceeds", ErrTruncated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeLedgerMetadata(tc.in)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
		})
	}
	// BookKeeper's readHeader reads at most MAX_VERSION_DIGITS (10) bytes
	// looking for the newline, so nine digits fit and ten do not.
	body := good[len(key)+2:]
	if _, err := DecodeLedgerMetadata(append([]byte(key+"000000003\n"), body...)); err != nil {
		t.Errorf("nine-digit version: %v", err)
	}
	_, err = DecodeLedgerMetadata(append([]byte(key+"0000000003\n"), body...))
	if err == nil || !strings.Contains(err.Error(), "no newline within 10 bytes") {
		t.Errorf("ten-digit version: error %v, want no newline within 10 bytes", err)
	}
}

func TestEncodeLedgerMetadataRequiresFields(t *testing.T) {
	if _, err := EncodeLedgerMetadata(&bkpb.LedgerMetadataFormat{QuorumSize: proto.Int32(1)}); err == nil {
		t.Error("missing ensembleSize and length: no error")
	}
}

func FuzzDecodeLedgerMetadata(f *testing.F) {
	good, err := EncodeLedgerMetadata(sampleLedgerMetadata())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(LedgerMetadataVersionKey + "3\n\x00"))
	f.Add([]byte(LedgerMetadataVersionKey + "2\nquorumSize: 2\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeLedgerMetadata(b)
		if err != nil {
			return
		}
		out, err := EncodeLedgerMetadata(m)
		if err != nil {
			return // partial message
		}
		back, err := DecodeLedgerMetadata(out)
		if err != nil || !proto.Equal(back, m) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
