package formats

import (
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

func TestClassifyPath(t *testing.T) {
	for p, want := range map[string]NodeKind{
		"/managed-ledgers/public/default/persistent/orders":     NodeManagedLedger,
		"/managed-ledgers/public/default/persistent/orders/sub": NodeCursor,
		"/managed-ledgers/public/default/persistent":            NodeOther,
		"/managed-ledgers/public/default/persistent/orders/s/x": NodeOther,
		"/schemas/public/default/orders":                        NodeSchemaLocator,
		"/schemas/public/default":                               NodeOther,
		"/ledgers/00/0000/L0012":                                NodeLedgerMetadata,
		"/ledgers/000/0000/0021/4748/L3647":                     NodeLedgerMetadata,
		"/ledgers/LAYOUT":                                       NodeOther,
		"/ledgers/idgen/ID-0000000001":                          NodeOther,
		"/admin/policies/public/default":                        NodeOther,
		"":                                                      NodeOther,
	} {
		if got := ClassifyPath(p); got != want {
			t.Errorf("ClassifyPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestDecodeNode(t *testing.T) {
	ml, err := EncodeManagedLedgerInfo(mustDecodeML(t, sampleMLInfoBytes(t)), Encoding{Compressed: true, Codec: mlpb.CompressionType_ZSTD})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := EncodeLedgerMetadata(sampleLedgerMetadata())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, enc string
		value     []byte
		kind      NodeKind
		check     func(DecodedNode) bool
	}{
		{"/managed-ledgers/t/ns/persistent/x", "zstd", ml, NodeManagedLedger, func(d DecodedNode) bool {
			return len(d.Message.(*mlpb.ManagedLedgerInfo).LedgerInfo) == 20
		}},
		{"/managed-ledgers/t/ns/persistent/x/c", "plain", sampleCursorInfoBytes(t), NodeCursor, func(d DecodedNode) bool {
			return d.Message.(*mlpb.ManagedCursorInfo).GetMarkDeleteLedgerId() == 104
		}},
		{"/schemas/t/ns/x", "protobuf", nil, NodeSchemaLocator, func(d DecodedNode) bool {
			_, ok := d.Message.(*schemapb.SchemaLocator)
			return ok
		}},
		{"/ledgers/00/0000/L0012", "bookkeeper-v3", bk, NodeLedgerMetadata, func(d DecodedNode) bool {
			return d.Message.(*bkpb.LedgerMetadataFormat).GetEnsembleSize() == 3
		}},
		{"/ledgers/LAYOUT", "", []byte("2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1\n"), NodeOther, func(d DecodedNode) bool {
			return d.Message == nil
		}},
	}
	for _, tc := range tests {
		d, err := DecodeNode(tc.path, tc.value)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if d.Kind != tc.kind || d.Encoding != tc.enc || !tc.check(d) {
			t.Errorf("%s: DecodeNode = %v %q %v", tc.path, d.Kind, d.Encoding, d.Message)
		}
	}
	_, err = DecodeNode("/ledgers/00/0000/L0012", []byte("garbage"))
	if err == nil || !strings.Contains(err.Error(), "node /ledgers/00/0000/L0012") {
		t.Errorf("bad ledger metadata: error %v", err)
	}
}

func FuzzDecodeNode(f *testing.F) {
	bk, err := EncodeLedgerMetadata(sampleLedgerMetadata())
	if err != nil {
		f.Fatal(err)
	}
	f.Add("/ledgers/00/0000/L0012", bk)
	f.Add("/managed-ledgers/t/ns/persistent/x", sampleMLInfoBytes(f))
	f.Add("/managed-ledgers/t/ns/persistent/x/c", sampleCursorInfoBytes(f))
	f.Add("/schemas/t/ns/x", []byte{0x0a, 0x00})
	f.Add("/other", []byte("x"))
	f.Fuzz(func(t *testing.T, path string, value []byte) {
		d, err := DecodeNode(path, value)
		if err != nil {
			return
		}
		if d.Kind != ClassifyPath(path) || (d.Kind == NodeOther) != (d.Message == nil) {
			t.Fatalf("DecodeNode(%q) = %+v", path, d)
		}
	})
}
