package formats

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"google.golang.org/protobuf/proto"
)

func TestSchemaVersion(t *testing.T) {
	for v, want := range map[int64][]byte{
		0:          {0, 0, 0, 0, 0, 0, 0, 0},
		1:          {0, 0, 0, 0, 0, 0, 0, 1},
		0x01020304: {0, 0, 0, 0, 1, 2, 3, 4},
		-1:         {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		if got := EncodeSchemaVersion(v); !bytes.Equal(got, want) {
			t.Errorf("EncodeSchemaVersion(%d) = % x", v, got)
		}
		if got, err := DecodeSchemaVersion(want); err != nil || got != v {
			t.Errorf("DecodeSchemaVersion(% x) = %d, %v", want, got, err)
		}
	}
	for _, b := range [][]byte{nil, {1}, {0, 0, 0, 1}, make([]byte, 9)} {
		_, err := DecodeSchemaVersion(b)
		if err == nil || !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), "legacy or unsupported") {
			t.Errorf("DecodeSchemaVersion(% x): error %v", b, err)
		}
	}
}

func TestSchemaHash(t *testing.T) {
	// FIPS 180-2 test vector: SHA-256("abc").
	want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := hex.EncodeToString(SchemaHash([]byte("abc"))); got != want {
		t.Errorf("SchemaHash(abc) = %s", got)
	}
}

func TestKeyValueSchema(t *testing.T) {
	tests := []struct {
		name       string
		key, value []byte
		want       []byte
	}{
		{"both", []byte("k"), []byte("vv"), []byte{0, 0, 0, 1, 'k', 0, 0, 0, 2, 'v', 'v'}},
		{"null key", nil, []byte("v"), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 'v'}},
		{"null both", nil, nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"empty key", []byte{}, []byte("v"), []byte{0, 0, 0, 0, 0, 0, 0, 1, 'v'}},
	}
	for _, tc := range tests {
		got := JoinKeyValueSchema(tc.key, tc.value)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: Join = % x, want % x", tc.name, got, tc.want)
		}
		k, v, err := SplitKeyValueSchema(tc.want)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(k, tc.key) || (k == nil) != (tc.key == nil) || !bytes.Equal(v, tc.value) || (v == nil) != (tc.value == nil) {
			t.Errorf("%s: Split = %q %q, want %q %q", tc.name, k, v, tc.key, tc.value)
		}
	}
	for _, bad := range [][]byte{
		nil,
		{0, 0, 0},
		{0, 0, 0, 5, 'k'},
		{0, 0, 0, 1, 'k'},
		{0, 0, 0, 1, 'k', 0, 0, 0, 1, 'v', 'x'}, // trailing byte
		{0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0},    // -2
	} {
		if k, v, err := SplitKeyValueSchema(bad); err == nil {
			t.Errorf("SplitKeyValueSchema(% x) = %q %q, want error", bad, k, v)
		}
	}
}

func sampleSchemaInfo() *schemapb.SchemaInfo {
	return &schemapb.SchemaInfo{
		SchemaId:  proto.String("public/default/orders"),
		User:      proto.String("admin"),
		Type:      schemapb.SchemaInfo_AVRO.Enum(),
		Schema:    []byte(`{"type":"record","name":"Order","fields":[]}`),
		Timestamp: proto.Int64(1700000000000),
		Deleted:   proto.Bool(false),
		Props:     []*schemapb.SchemaInfo_KeyValuePair{{Key: proto.String("__alwaysAllowNull"), Value: proto.String("true")}},
	}
}

func TestSchemaStorageRoundTrip(t *testing.T) {
	info := sampleSchemaInfo()
	data, err := EncodeSchemaInfo(info)
	if err != nil {
		t.Fatal(err)
	}
	idx := &schemapb.IndexEntry{
		Version:  proto.Int64(0),
		Position: &schemapb.PositionInfo{LedgerId: proto.Int64(42), EntryId: proto.Int64(0)},
		Hash:     SchemaHash(info.Schema),
	}
	entryBytes, err := EncodeSchemaEntry(&schemapb.SchemaEntry{SchemaData: data})
	if err != nil {
		t.Fatal(err)
	}
	entry, err := DecodeSchemaEntry(entryBytes)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSchemaInfo(entry.SchemaData)
	if err != nil || !proto.Equal(back, info) {
		t.Fatalf("schema info round trip: %v", err)
	}
	locBytes, err := EncodeSchemaLocator(&schemapb.SchemaLocator{Info: idx, Index: []*schemapb.IndexEntry{idx}})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := DecodeSchemaLocator(withUnknownField99(locBytes))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(loc.GetInfo().GetHash(), SchemaHash(back.Schema)) {
		t.Error("locator hash does not prove the stored definition")
	}
	again, err := EncodeSchemaLocator(loc)
	if err != nil || !bytes.Equal(again, withUnknownField99(locBytes)) {
		t.Errorf("locator rewrite changed bytes: %v", err)
	}
}

func TestSchemaEncodeRequiresFields(t *testing.T) {
	if _, err := EncodeSchemaLocator(&schemapb.SchemaLocator{}); err == nil {
		t.Error("locator without info: no error")
	}
	if _, err := EncodeSchemaEntry(&schemapb.SchemaEntry{}); err == nil {
		t.Error("entry without schema_data: no error")
	}
	if _, err := EncodeSchemaInfo(&schemapb.SchemaInfo{SchemaId: proto.String("x")}); err == nil {
		t.Error("info missing fields: no error")
	}
	// Decoding is lenient so damaged values can still be shown.
	if _, err := DecodeSchemaLocator([]byte{0x0a, 0x05, 0x08}); err == nil {
		t.Error("truncated locator: no error")
	}
	if loc, err := DecodeSchemaLocator(nil); err != nil || loc.Info != nil {
		t.Errorf("empty locator: %v %v", loc, err)
	}
}

// FuzzSplitKeyValueSchema: no input panics, and whatever splits joins back
// to exactly the input.
func FuzzSplitKeyValueSchema(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 'k', 0, 0, 0, 2, 'v', 'v'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 'v'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, v, err := SplitKeyValueSchema(b)
		if err != nil {
			return
		}
		if got := JoinKeyValueSchema(k, v); !bytes.Equal(got, b) {
			t.Fatalf("Join(Split(% x)) = % x", b, got)
		}
	})
}
