package inspect

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// The hand-built data dir used by the view and check tests (fixtures cover the
// realistic, generated ones):
//
//	persistent://public/default/orders      plain node, ML property index, ledgers 10 (5 entries), 11 (4), 12 (open, empty)
//	                                        cursor "sub1" with cursor ledger 50 (1 entry)
//	persistent://acme/ns/events-partition-0  zstd node, ledgers 20 (3 entries), 21 (2 entries)
//	persistent://acme/ns/events-partition-1  lz4 node, ledger 30 (3 entries), no broker index
//	schema public/default/orders            versions 0 (ledger 40, AVRO) and 1 (ledger 41, JSON)
//	schema acme/ns/events                   version 0 (ledger 42, STRING)
const (
	ordersPath  = "/managed-ledgers/public/default/persistent/orders"
	events0Path = "/managed-ledgers/acme/ns/persistent/events-partition-0"
	events1Path = "/managed-ledgers/acme/ns/persistent/events-partition-1"
	cursorPath  = ordersPath + "/sub1"
	ordersLoc   = "/schemas/public/default/orders"
	eventsLoc   = "/schemas/acme/ns/events"
	baseTime    = int64(1_700_000_000_000)
)

type testLedger struct {
	id       int64
	batches  []int32 // num_messages_in_batch of each entry
	indexed  bool    // entries carry broker entry metadata
	firstIdx int64   // broker index of the ledger's first message
	open     bool    // open last ledger: no entries, metadata lastEntryId -1
}

// testBuilder is testutil.DataDirBuilder with this package's topic and schema shapes.
type testBuilder struct {
	t *testing.T
	*testutil.DataDirBuilder
}

// must keeps test setup short; a failure panics, which fails the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func (b *testBuilder) node(path string, v []byte)          { b.t.Helper(); b.Node(path, v) }
func (b *testBuilder) entry(ledger, entry int64, v []byte) { b.t.Helper(); b.Entry(ledger, entry, v) }

func ledgerMeta(t *testing.T, lastEntryID, length int64, closed bool, custom ...string) []byte {
	t.Helper()
	m := testutil.LedgerMetadata(testutil.LedgerSpec{LastEntryID: lastEntryID, Length: length, Open: !closed, Custom: custom, Ctime: baseTime})
	return must(formats.EncodeLedgerMetadata(m))
}

// topicEntry builds entry e of a topic ledger.
func topicEntry(t *testing.T, l testLedger, e int, index int64) []byte {
	t.Helper()
	m := testutil.Message{HasIndex: l.indexed, Index: index, Payload: []byte(fmt.Sprintf("payload %d/%d", l.id, e))}
	if l.indexed {
		m.BrokerTime = uint64(baseTime + int64(e))
	}
	m.Meta = &pulsarpb.MessageMetadata{
		ProducerName: proto.String("producer-a"), SequenceId: proto.Uint64(uint64(l.id*100 + int64(e))),
		PublishTime: proto.Uint64(uint64(baseTime + l.id*1000 + int64(e))), NumMessagesInBatch: proto.Int32(l.batches[e]),
		SchemaVersion: formats.EncodeSchemaVersion(int64(e % 2)),
	}
	if e == 1 {
		m.Meta.SchemaId = []byte{0x00, 0, 0, 0, 7}
	}
	return testutil.TopicEntry(t, m)
}

// writeTopic writes a managed ledger node with its ledgers (nodes and entries).
func (b *testBuilder) writeTopic(path, mlName string, enc formats.Encoding, indexProp bool, ledgers []testLedger) {
	t := b.t
	info := &mlpb.ManagedLedgerInfo{}
	var last int64 = -1
	for _, l := range ledgers {
		li := &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(l.id), Timestamp: proto.Int64(baseTime + l.id)}
		if l.open {
			li.Entries, li.Size = proto.Int64(0), proto.Int64(0)
			b.node(formats.LedgerPath(l.id), ledgerMeta(t, -1, 0, false, testutil.TopicLedgerCustom(mlName)...))
			info.LedgerInfo = append(info.LedgerInfo, li)
			continue
		}
		var size int64
		index := l.firstIdx - 1
		for e := range l.batches {
			index += int64(l.batches[e])
			v := topicEntry(t, l, e, index)
			size += int64(len(v))
			b.entry(l.id, int64(e), v)
		}
		last = index
		li.Entries, li.Size = proto.Int64(int64(len(l.batches))), proto.Int64(size)
		if l.indexed {
			formats.SetLedgerProperty(li, cluster.FirstEntryIndexKey, fmt.Sprint(l.firstIdx))
		}
		b.node(formats.LedgerPath(l.id), ledgerMeta(t, int64(len(l.batches))-1, size, true, testutil.TopicLedgerCustom(mlName)...))
		info.LedgerInfo = append(info.LedgerInfo, li)
	}
	if indexProp {
		formats.SetMLProperty(info, cluster.MLIndexProperty, fmt.Sprint(last))
	}
	b.ManagedLedger(path, info, enc)
}

type testSchema struct {
	ledger int64
	typ    schemapb.SchemaInfo_SchemaType
	def    string
}

func (b *testBuilder) writeSchemas(locPath, key string, versions []testSchema) {
	t := b.t
	var index []*schemapb.IndexEntry
	for v, s := range versions {
		info := &schemapb.SchemaInfo{
			SchemaId: proto.String(key), User: proto.String("admin"), Type: s.typ.Enum(), Schema: []byte(s.def),
			Timestamp: proto.Int64(baseTime + int64(v)), Deleted: proto.Bool(false),
		}
		b.SchemaVersion(s.ledger, info, index)
		b.node(formats.LedgerPath(s.ledger), ledgerMeta(t, 0, int64(len(s.def)), true, testutil.SchemaLedgerCustom(key)...))
		index = append(index, testutil.IndexEntry(int64(v), s.ledger, formats.SchemaHash([]byte(s.def))))
	}
	b.SchemaLocator(locPath, index)
}

// buildTestDir writes the clean hand-built data dir and returns its path (closed).
func buildTestDir(t *testing.T) string {
	t.Helper()
	b := &testBuilder{t: t, DataDirBuilder: testutil.NewDataDir(t)}
	b.writeTopic(ordersPath, "public/default/persistent/orders", formats.Plain, true, []testLedger{
		{id: 10, batches: []int32{1, 3, 1, 2, 1}, indexed: true, firstIdx: 0},
		{id: 11, batches: []int32{2, 2, 1, 1}, indexed: true, firstIdx: 8},
		{id: 12, open: true},
	})
	cursor := &mlpb.ManagedCursorInfo{CursorsLedgerId: proto.Int64(50), MarkDeleteLedgerId: proto.Int64(10), MarkDeleteEntryId: proto.Int64(3)}
	b.node(cursorPath, must(formats.EncodeManagedCursorInfo(cursor, formats.Plain)))
	b.node(formats.LedgerPath(50), ledgerMeta(t, 0, 10, true, "application", "pulsar", "component", "managed-ledger",
		"pulsar/managed-ledger", "public/default/persistent/orders", "pulsar/cursor", "sub1"))
	b.entry(50, 0, []byte("cursor-position"))
	b.writeTopic(events0Path, "acme/ns/persistent/events-partition-0", formats.Encoding{Compressed: true, Codec: mlpb.CompressionType_ZSTD}, false, []testLedger{
		{id: 20, batches: []int32{1, 1, 1}, indexed: true, firstIdx: 0},
		{id: 21, batches: []int32{4, 1}, indexed: true, firstIdx: 3},
	})
	b.writeTopic(events1Path, "acme/ns/persistent/events-partition-1", formats.Encoding{Compressed: true, Codec: mlpb.CompressionType_LZ4}, false, []testLedger{
		{id: 30, batches: []int32{1, 1, 1}},
	})
	b.writeSchemas(ordersLoc, "public/default/orders", []testSchema{
		{ledger: 40, typ: schemapb.SchemaInfo_AVRO, def: `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`},
		{ledger: 41, typ: schemapb.SchemaInfo_JSON, def: `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"]}]}`},
	})
	b.writeSchemas(eventsLoc, "acme/ns/events", []testSchema{{ledger: 42, typ: schemapb.SchemaInfo_STRING, def: ""}})
	// Nodes Pulsar keeps that are none of ours: must be ignored.
	b.node("/ledgers/LAYOUT", []byte("2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1\n"))
	b.node("/admin/policies/public/default", []byte(`{"bundles":{}}`))
	return b.Close()
}

// edit opens dir writable and applies fn through a bulk writer.
func edit(t *testing.T, dir string, fn func(b *testBuilder)) {
	t.Helper()
	b := &testBuilder{t: t, DataDirBuilder: testutil.EditDataDir(t, dir)}
	fn(b)
	b.Close()
}

func openRO(t *testing.T, dir string) *datadir.DataDir {
	t.Helper()
	dd := must(datadir.Open(dir, store.Options{ReadOnly: true, NoSandbox: true}))
	t.Cleanup(func() { dd.Close() })
	return dd
}

func runCheck(t *testing.T, dir string, opts CheckOptions) []report.Finding {
	t.Helper()
	dd := openRO(t, dir)
	fs, _, err := Check(context.Background(), dd, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
