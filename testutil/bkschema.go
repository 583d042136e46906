package testutil

import (
	"crypto/sha256"
	"github.com/ledgermedic/ledgermedic/datadir"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/store"
)

// BKSchemaVersion is one schema version a bkSchemaCluster wrote.
type BKSchemaVersion struct {
	Key     string
	Version int64
	Def     []byte
	Ledger  int64 // the ledger the Java client wrote it to
}

// WriteSchemas writes schema versions as BookkeeperSchemaStorage does, with
// the real Java client: one ledger per version (2/2/2, CRC32C, empty password,
// Pulsar's custom metadata) holding the SchemaEntry, and each key's locator in
// ZooKeeper. It returns the versions and a metadata store on the ZooKeeper.
func (c *BKCluster) WriteSchemas(t testing.TB) ([]BKSchemaVersion, store.MetadataStore) {
	t.Helper()
	mu, err := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := datadir.OpenMetadata(mu, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	vs := []BKSchemaVersion{
		{Key: "public/default/orders", Version: 0, Def: []byte(`{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`)},
		{Key: "public/default/orders", Version: 1, Def: []byte(`{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"],"default":null}]}`)},
		{Key: "public/default/users", Version: 0, Def: []byte(`{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`)},
	}
	locs := map[string]*schemapb.SchemaLocator{}
	var keys []string
	for i := range vs {
		v := &vs[i]
		loc := locs[v.Key]
		if loc == nil {
			loc = &schemapb.SchemaLocator{}
			locs[v.Key] = loc
			keys = append(keys, v.Key)
		}
		info, err := proto.Marshal(&schemapb.SchemaInfo{SchemaId: proto.String(v.Key), User: proto.String("admin"),
			Type: schemapb.SchemaInfo_AVRO.Enum(), Schema: v.Def, Timestamp: proto.Int64(1700000000000 + v.Version),
			Deleted: proto.Bool(false)})
		if err != nil {
			t.Fatal(err)
		}
		entry, err := formats.EncodeSchemaEntry(&schemapb.SchemaEntry{SchemaData: info, Index: loc.Index})
		if err != nil {
			t.Fatal(err)
		}
		w := c.WriteLedger(BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2, Digest: "CRC32C",
			Meta: map[string]string{"application": "pulsar", "component": "schema", "pulsar/schemaId": v.Key}}, [][]byte{entry})
		v.Ledger = w.LedgerID
		h := sha256.Sum256(v.Def)
		ie := &schemapb.IndexEntry{Version: proto.Int64(v.Version), Hash: h[:],
			Position: &schemapb.PositionInfo{LedgerId: proto.Int64(w.LedgerID), EntryId: proto.Int64(0)}}
		loc.Index = append(loc.Index, ie)
		loc.Info = ie
	}
	for _, k := range keys {
		b, err := formats.EncodeSchemaLocator(locs[k])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ms.CompareAndSet(formats.SchemasRoot+"/"+k, 0, b); err != nil {
			t.Fatal(err)
		}
	}
	return vs, ms
}
