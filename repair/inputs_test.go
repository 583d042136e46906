package repair

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// The definitions the golden inputs in testdata/inputs stand for, as the registry stored them.
const (
	eventDef   = `{"type":"record","name":"Event","namespace":"com.example","doc":"a = b & <c>","fields":[{"name":"id","type":"string"},{"name":"amount","type":["null","double"],"default":null},{"name":"ratio","type":"float","default":1.0}]}`
	invoiceDef = `{"type":"record","name":"Invoice","fields":[{"name":"total","type":"long"}]}`
	brokenDef  = `{"type":"record","name":"Broken","fields":[{"name":"x","type":"no.such.Type"}]}`
)

var invoiceKV = formats.JoinKeyValueSchema([]byte{}, []byte(invoiceDef))

func TestParsePulsarAdminShapes(t *testing.T) {
	tests := []struct {
		file       string
		format     string
		version    int64 // -1: the input names none
		typ        schemapb.SchemaInfo_SchemaType
		definition []byte
		name       string
		props      int
	}{
		{"admin-get-version.json", FormatAdminInfo, -1, schemapb.SchemaInfo_AVRO, []byte(eventDef), "events", 2},
		{"admin-get.json", FormatAdminGet, 1, schemapb.SchemaInfo_AVRO, []byte(eventDef), "events", 2},
		{"rest-response.json", FormatRESTResponse, 1, schemapb.SchemaInfo_AVRO, []byte(eventDef), "", 2},
		{"upload.json", FormatUpload, -1, schemapb.SchemaInfo_AVRO, []byte(eventDef), "", 2},
		{"admin-all-versions.json", FormatAdminInfo, -1, schemapb.SchemaInfo_AVRO, []byte(eventDef), "events", 1},
		{"admin-get-keyvalue.json", FormatAdminInfo, -1, schemapb.SchemaInfo_KEYVALUE, invoiceKV, "invoices", 7},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			cands := loadCands(t, filepath.Join("testdata", "inputs", tc.file))
			if len(cands) != 1 {
				t.Fatalf("%d candidates", len(cands))
			}
			c := cands[0]
			if c.Format != tc.format || c.Type != tc.typ || c.Name != tc.name || len(c.Properties) != tc.props {
				t.Errorf("format %q type %v name %q props %v", c.Format, c.Type, c.Name, c.Properties)
			}
			if (tc.version >= 0) != c.HasVersion || (c.HasVersion && c.Version != tc.version) {
				t.Errorf("version %d (has %v), want %d", c.Version, c.HasVersion, tc.version)
			}
			if _, ok := matchingDefinition(&c, formats.SchemaHash(tc.definition)); !ok {
				t.Errorf("no rendering hashes to the stored definition; renderings:\n%q", c.Definitions)
			}
			if err := validateDefinition(c.Type, tc.definition, c.Properties); err != nil {
				t.Errorf("valid definition refused: %v", err)
			}
		})
	}
}

func TestInputErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"not json", "{nope", "not JSON"},
		{"unknown shape", `{"foo":1}`, "unrecognised input"},
		{"bad type", `{"type":"AVRO2","schema":"x"}`, "unknown schema type"},
		{"capture hash", `{"schema_key":"a/b/c","version":0,"type":"AVRO","definition":"x","definition_encoding":"text","hash":"00"}`, "does not match"},
		{"capture key", `{"schema_key":"a/b","version":0,"type":"AVRO","definition":"x","definition_encoding":"text"}`, "schema_key"},
		{"capture encoding", `{"schema_key":"a/b/c","version":0,"type":"AVRO","definition":"x","definition_encoding":"hex"}`, "definition_encoding"},
		{"negative version", `{"version":-1,"type":"AVRO","data":"x"}`, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cands, bad := ParseCandidates("in", []byte(tc.data))
			if len(cands) != 0 || len(bad) != 1 || !strings.Contains(bad[0].Error(), tc.want) {
				t.Fatalf("candidates %d, errors %v; want one error containing %q", len(cands), bad, tc.want)
			}
			if !strings.HasPrefix(bad[0].Source, "in:1") {
				t.Errorf("source %q", bad[0].Source)
			}
		})
	}
}

func TestJSONLinesSourcesNameTheLine(t *testing.T) {
	data := "\n" + `{"type":"STRING","schema":""}` + "\n\n" + `{"oops":true}` + "\n"
	cands, bad := ParseCandidates("f", []byte(data))
	if len(cands) != 1 || cands[0].Source != "f:2" || len(bad) != 1 || bad[0].Source != "f:4" {
		t.Fatalf("cands %+v bad %v", cands, bad)
	}
}

// handVersion is one version of a hand-built locator.
type handVersion struct {
	version int64
	def     []byte
	typ     schemapb.SchemaInfo_SchemaType
	props   Properties
	deleted bool
	lost    bool // write only the locator's index entry
	ledger  int64
}

// buildDir writes schema locators (key -> versions) into a new data dir.
func buildDir(t *testing.T, schemas map[string][]handVersion) string {
	t.Helper()
	b := testutil.NewDataDir(t)
	for key, vs := range schemas {
		var index []*schemapb.IndexEntry
		for _, v := range vs {
			hash := formats.SchemaHash(v.def)
			if v.deleted {
				hash = []byte{}
			}
			if !v.lost {
				info := &schemapb.SchemaInfo{SchemaId: proto.String(key), User: proto.String("alice"), Type: v.typ.Enum(),
					Schema: v.def, Timestamp: proto.Int64(1000 + v.version), Deleted: proto.Bool(v.deleted), Props: v.props.toInfo()}
				entry := b.SchemaVersion(v.ledger, info, index)
				md := &bkpb.LedgerMetadataFormat{QuorumSize: proto.Int32(1), EnsembleSize: proto.Int32(1), Length: proto.Int64(int64(len(entry))),
					LastEntryId: proto.Int64(0), State: bkpb.LedgerMetadataFormat_CLOSED.Enum(),
					Segment: []*bkpb.LedgerMetadataFormat_Segment{{EnsembleMember: []string{"bk1:3181"}, FirstEntryId: proto.Int64(0)}}}
				formats.SetCustomMetadata(md, cluster.CustomComponent, cluster.ComponentSchema)
				b.LedgerNode(v.ledger, md)
			}
			index = append(index, testutil.IndexEntry(v.version, v.ledger, hash))
		}
		b.SchemaLocator(formats.SchemasRoot+"/"+key, index)
	}
	return b.Close()
}

func goldenDir(t *testing.T) string {
	return buildDir(t, map[string][]handVersion{
		"public/default/events": {
			{version: 0, def: []byte(`{"type":"record","name":"E0","fields":[]}`), typ: schemapb.SchemaInfo_AVRO, ledger: 5},
			{version: 1, def: []byte(eventDef), typ: schemapb.SchemaInfo_AVRO, lost: true, ledger: 6},
		},
		"acme/billing/invoices": {
			{version: 0, def: invoiceKV, typ: schemapb.SchemaInfo_KEYVALUE, lost: true, ledger: 7},
		},
		"acme/billing/broken": {
			{version: 0, def: []byte(brokenDef), typ: schemapb.SchemaInfo_AVRO, lost: true, ledger: 8},
		},
	})
}

func TestRepairFromEachPulsarAdminShape(t *testing.T) {
	files := map[string]string{
		"admin-get-version.json":  "public/default/events",
		"admin-get.json":          "public/default/events",
		"rest-response.json":      "public/default/events",
		"upload.json":             "public/default/events",
		"admin-all-versions.json": "public/default/events",
		"admin-get-keyvalue.json": "acme/billing/invoices",
	}
	for file, key := range files {
		t.Run(file, func(t *testing.T) {
			dir := goldenDir(t)
			cands := loadCands(t, filepath.Join("testdata", "inputs", file))
			dd := testutil.OpenReadOnly(t, dir)
			defer closeDD(t, dd)
			rp, err := Plan(context.Background(), dd, cands, Options{})
			if err != nil {
				t.Fatal(err)
			}
			restored := 0
			for _, v := range rp.Versions {
				if v.Action == ActionRestore {
					restored++
					if v.SchemaKey != key || v.HashMatch != HashMatchYes || v.NewLedgerID != 9+int64(restored-1) {
						t.Errorf("restored %+v", v)
					}
				}
			}
			if restored != 1 || rp.Unresolved() != 2 {
				t.Fatalf("restored %d unresolved %d: %+v", restored, rp.Unresolved(), rp.Versions)
			}
		})
	}
}

func TestInvalidAvroRefused(t *testing.T) {
	dir := goldenDir(t)
	cands := loadCands(t, filepath.Join("testdata", "inputs", "invalid-avro.json"))
	dd := testutil.OpenReadOnly(t, dir)
	defer closeDD(t, dd)
	// The broken definition matches the locator's hash of acme/billing/broken
	// version 0 only when the candidate names that version's key: --topic.
	rp, err := Plan(context.Background(), dd, cands, Options{KeyFilter: "acme/billing/broken"})
	if err != nil {
		t.Fatal(err)
	}
	if rp.Unresolved() != 1 || rp.Plan != nil {
		t.Fatalf("unresolved %d, plan %v", rp.Unresolved(), rp.Plan)
	}
	if len(rp.Refusals) != 1 || !strings.Contains(rp.Refusals[0].Reason, "invalid AVRO schema") {
		t.Fatalf("refusals %+v", rp.Refusals)
	}
	if !strings.Contains(rp.Versions[0].Reason, "invalid AVRO") {
		t.Errorf("unresolved reason %q does not say why", rp.Versions[0].Reason)
	}
}

func TestKeyValueSideValidated(t *testing.T) {
	props := Properties{{"key.schema.type", "STRING"}, {"value.schema.type", "AVRO"}}
	if err := validateDefinition(schemapb.SchemaInfo_KEYVALUE, invoiceKV, props); err != nil {
		t.Fatal(err)
	}
	bad := formats.JoinKeyValueSchema(nil, []byte(brokenDef))
	if err := validateDefinition(schemapb.SchemaInfo_KEYVALUE, bad, props); err == nil || !strings.Contains(err.Error(), "value") {
		t.Fatalf("broken value side: %v", err)
	}
}

func TestTombstoneRebuiltWithoutInput(t *testing.T) {
	dir := buildDir(t, map[string][]handVersion{
		"t/ns/topic": {
			{version: 0, def: []byte(`"string"`), typ: schemapb.SchemaInfo_AVRO, ledger: 3},
			{version: 1, typ: schemapb.SchemaInfo_NONE, deleted: true, lost: true, ledger: 4},
		},
	})
	rp, res, err := planAndApply(t, dir, nil, Options{})
	if err != nil || res == nil {
		t.Fatalf("apply: %v", err)
	}
	if rp.Versions[0].Action != ActionRebuildTombstone || rp.Versions[0].NewLedgerID != 5 {
		t.Fatalf("%+v", rp.Versions[0])
	}
	dd := testutil.OpenReadOnly(t, dir)
	defer closeDD(t, dd)
	assertAllReadable(t, dd)
	got := storedInfo(t, dd, "t/ns/topic", 1)
	want := &schemapb.SchemaInfo{SchemaId: proto.String("t/ns/topic"), User: proto.String("alice"), Type: schemapb.SchemaInfo_NONE.Enum(),
		Schema: []byte{}, Timestamp: proto.Int64(1000), Deleted: proto.Bool(true)}
	if !proto.Equal(got, want) {
		t.Fatalf("tombstone %v, want %v", got, want)
	}
	// The latest version was the tombstone: info moved too.
	n, err := dd.Metadata.Get(formats.SchemasRoot + "/t/ns/topic")
	if err != nil {
		t.Fatal(err)
	}
	loc, err := formats.DecodeSchemaLocator(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	if loc.GetInfo().GetPosition().GetLedgerId() != 5 || !bytes.Equal(loc.GetInfo().GetHash(), []byte{}) {
		t.Fatalf("info %v", loc.GetInfo())
	}
}
