package testutil

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

// What the builder writes reads back through the formats functions the tool uses.
func TestDataDirBuilderRoundTrip(t *testing.T) {
	b := NewDataDir(t)
	const mlPath = "/managed-ledgers/acme/ns/persistent/t"
	info := &mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{{LedgerId: proto.Int64(5), Entries: proto.Int64(1)}}}
	b.ManagedLedger(mlPath, info, formats.Plain)
	b.LedgerNode(5, LedgerMetadata(LedgerSpec{LastEntryID: 0, Length: 10, Custom: TopicLedgerCustom("acme/ns/persistent/t")}))
	b.Entry(5, 0, TopicEntry(t, Message{Meta: &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(0),
		PublishTime: proto.Uint64(1), NumMessagesInBatch: proto.Int32(3)}, HasIndex: true, Index: 2, BrokerTime: 9, Payload: []byte("x")}))
	si := &schemapb.SchemaInfo{SchemaId: proto.String("acme/ns/t"), User: proto.String("u"), Type: schemapb.SchemaInfo_STRING.Enum(),
		Schema: []byte{}, Timestamp: proto.Int64(1), Deleted: proto.Bool(false)}
	b.SchemaVersion(6, si, nil)
	b.SchemaLocator("/schemas/acme/ns/t", []*schemapb.IndexEntry{IndexEntry(0, 6, formats.SchemaHash(nil))})
	dir := b.Close()

	snap := Dump(t, dir)
	got, _, err := formats.DecodeManagedLedgerInfo(snap.Nodes[mlPath])
	if err != nil || got.GetLedgerInfo()[0].GetLedgerId() != 5 {
		t.Errorf("managed ledger: %v, %v", got, err)
	}
	md, err := formats.DecodeLedgerMetadata(snap.Nodes[formats.LedgerPath(5)])
	if owner, _ := formats.CustomMetadata(md, "pulsar/managed-ledger"); err != nil || owner != "acme/ns/persistent/t" || md.GetLastEntryId() != 0 {
		t.Errorf("ledger node: %v, %v", md, err)
	}
	e, err := formats.ParseEntry(snap.Entries[EntryID{5, 0}])
	if err != nil || !e.HasChecksum || e.BrokerMeta.GetIndex() != 2 || e.BrokerMeta.GetBrokerTimestamp() != 9 || e.Metadata.GetNumMessagesInBatch() != 3 {
		t.Errorf("topic entry: %+v, %v", e, err)
	}
	se, err := formats.DecodeSchemaEntry(snap.Entries[EntryID{6, 0}])
	if err != nil {
		t.Fatal(err)
	}
	if info, err := formats.DecodeSchemaInfo(se.GetSchemaData()); err != nil || info.GetType() != schemapb.SchemaInfo_STRING {
		t.Errorf("schema version: %v, %v", info, err)
	}
	loc, err := formats.DecodeSchemaLocator(snap.Nodes["/schemas/acme/ns/t"])
	if err != nil || loc.GetInfo().GetPosition().GetLedgerId() != 6 || len(loc.GetIndex()) != 1 {
		t.Errorf("locator: %v, %v", loc, err)
	}
}
