package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
)

// DataDirBuilder writes a hand-made data dir, node by node and entry by entry,
// for the cases the fixture generator does not plant. It encodes with the same
// formats functions the tool reads with; every failure fails the test.
type DataDirBuilder struct {
	t  testing.TB
	DD *datadir.DataDir
	W  *badgerdir.BulkWriter // for what the helpers do not cover (deletes)
}

// NewDataDir creates an empty data dir in a new temp dir.
func NewDataDir(t testing.TB) *DataDirBuilder {
	t.Helper()
	dd, err := datadir.Create(filepath.Join(t.TempDir(), "dd"))
	if err != nil {
		t.Fatal(err)
	}
	return &DataDirBuilder{t: t, DD: dd, W: badgerdir.NewBulkWriter(dd.Metadata, dd.Ledgers)}
}

// EditDataDir opens an existing data dir writable, to add to it or damage it.
func EditDataDir(t testing.TB, dir string) *DataDirBuilder {
	t.Helper()
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &DataDirBuilder{t: t, DD: dd, W: badgerdir.NewBulkWriter(dd.Metadata, dd.Ledgers)}
}

// Node writes a metadata node.
func (b *DataDirBuilder) Node(path string, v []byte) {
	b.t.Helper()
	if err := b.W.PutNode(path, v); err != nil {
		b.t.Fatal(err)
	}
}

// Entry writes a ledger entry.
func (b *DataDirBuilder) Entry(ledger, entry int64, v []byte) {
	b.t.Helper()
	if err := b.W.PutEntry(ledger, entry, v); err != nil {
		b.t.Fatal(err)
	}
}

// Flush writes what the builder holds so far.
func (b *DataDirBuilder) Flush() {
	b.t.Helper()
	if err := b.W.Flush(); err != nil {
		b.t.Fatal(err)
	}
}

// Close flushes, closes the data dir and returns its path.
func (b *DataDirBuilder) Close() string {
	b.t.Helper()
	b.Flush()
	if err := b.DD.Close(); err != nil {
		b.t.Fatal(err)
	}
	return b.DD.Path
}

// Open flushes and returns the data dir, still open and writable; the test's
// cleanup closes it.
func (b *DataDirBuilder) Open() *datadir.DataDir {
	b.t.Helper()
	b.Flush()
	b.t.Cleanup(func() { b.DD.Close() })
	return b.DD
}

// LedgerNode writes ledger id's metadata node.
func (b *DataDirBuilder) LedgerNode(id int64, m *bkpb.LedgerMetadataFormat) {
	b.t.Helper()
	v, err := formats.EncodeLedgerMetadata(m)
	if err != nil {
		b.t.Fatal(err)
	}
	b.Node(formats.LedgerPath(id), v)
}

// ManagedLedger writes a managed-ledger node in the given encoding.
func (b *DataDirBuilder) ManagedLedger(path string, info *mlpb.ManagedLedgerInfo, enc formats.Encoding) {
	b.t.Helper()
	v, err := formats.EncodeManagedLedgerInfo(info, enc)
	if err != nil {
		b.t.Fatal(err)
	}
	b.Node(path, v)
}

// SchemaLocator writes a schema locator whose latest version is the last of index.
func (b *DataDirBuilder) SchemaLocator(path string, index []*schemapb.IndexEntry) {
	b.t.Helper()
	loc := &schemapb.SchemaLocator{Index: index}
	if len(index) > 0 {
		loc.Info = index[len(index)-1]
	}
	v, err := formats.EncodeSchemaLocator(loc)
	if err != nil {
		b.t.Fatal(err)
	}
	b.Node(path, v)
}

// SchemaVersion writes a schema version the way the registry does: a SchemaEntry
// holding info (and the index as it stood before this version) as entry 0 of its
// own ledger. It returns the entry's bytes.
func (b *DataDirBuilder) SchemaVersion(ledger int64, info *schemapb.SchemaInfo, index []*schemapb.IndexEntry) []byte {
	b.t.Helper()
	data, err := formats.EncodeSchemaInfo(info)
	if err != nil {
		b.t.Fatal(err)
	}
	prior := make([]*schemapb.IndexEntry, len(index))
	for i, ie := range index {
		prior[i] = proto.Clone(ie).(*schemapb.IndexEntry)
	}
	v, err := formats.EncodeSchemaEntry(&schemapb.SchemaEntry{SchemaData: data, Index: prior})
	if err != nil {
		b.t.Fatal(err)
	}
	b.Entry(ledger, 0, v)
	return v
}

// IndexEntry is a schema locator's entry for a version stored in entry 0 of ledger.
func IndexEntry(version, ledger int64, hash []byte) *schemapb.IndexEntry {
	return &schemapb.IndexEntry{Version: proto.Int64(version),
		Position: &schemapb.PositionInfo{LedgerId: proto.Int64(ledger), EntryId: proto.Int64(0)}, Hash: hash}
}

// LedgerSpec is a BookKeeper ledger's metadata as a test wants it.
type LedgerSpec struct {
	LastEntryID int64 // -1: the ledger holds nothing yet
	Length      int64
	Open        bool     // state OPEN, else CLOSED
	Custom      []string // custom metadata, key, value, ...
	Ctime       int64
}

// LedgerMetadata is a realistic ledger node (two bookies, CRC32C digest) for spec.
func LedgerMetadata(s LedgerSpec) *bkpb.LedgerMetadataFormat {
	state := bkpb.LedgerMetadataFormat_CLOSED
	if s.Open {
		state = bkpb.LedgerMetadataFormat_OPEN
	}
	m := &bkpb.LedgerMetadataFormat{
		QuorumSize: proto.Int32(2), EnsembleSize: proto.Int32(2), AckQuorumSize: proto.Int32(2),
		Length: proto.Int64(s.Length), LastEntryId: proto.Int64(s.LastEntryID), State: state.Enum(),
		Segment:    []*bkpb.LedgerMetadataFormat_Segment{{EnsembleMember: []string{"bookie-1:3181", "bookie-2:3181"}, FirstEntryId: proto.Int64(0)}},
		DigestType: bkpb.LedgerMetadataFormat_CRC32C.Enum(), Password: []byte{}, Ctime: proto.Int64(s.Ctime),
	}
	for i := 0; i+1 < len(s.Custom); i += 2 {
		formats.SetCustomMetadata(m, s.Custom[i], s.Custom[i+1])
	}
	return m
}

// TopicLedgerCustom is the custom metadata a broker gives a managed ledger's ledgers.
func TopicLedgerCustom(mlName string) []string {
	return []string{"application", "pulsar", cluster.CustomComponent, cluster.ComponentML, cluster.CustomManagedLedger, mlName}
}

// SchemaLedgerCustom is the custom metadata the schema registry gives a version's ledger.
func SchemaLedgerCustom(key string) []string {
	return []string{"application", "pulsar", cluster.CustomComponent, cluster.ComponentSchema, cluster.CustomSchemaID, key}
}

// Message is one topic entry to build: its MessageMetadata, and the broker
// entry metadata when HasIndex or BrokerTime is set.
type Message struct {
	Meta       *pulsarpb.MessageMetadata
	HasIndex   bool
	Index      int64 // broker index of the entry's last message
	BrokerTime uint64
	Payload    []byte
	NoChecksum bool
}

// TopicEntry builds a topic entry's bytes as the broker stores them.
func TopicEntry(t testing.TB, m Message) []byte {
	t.Helper()
	var bm *pulsarpb.BrokerEntryMetadata
	if m.HasIndex || m.BrokerTime != 0 {
		bm = &pulsarpb.BrokerEntryMetadata{}
		if m.BrokerTime != 0 {
			bm.BrokerTimestamp = proto.Uint64(m.BrokerTime)
		}
		if m.HasIndex {
			bm.Index = proto.Uint64(uint64(m.Index))
		}
	}
	v, err := formats.BuildEntry(bm, !m.NoChecksum, m.Meta, m.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TruncateValueLogs cuts cut bytes off the end of every value-log file of the
// data dir's sub store (datadir.MetadataDirName, datadir.LedgersDirName) that is
// bigger than twice cut: the big values stored there lose their tails, as when
// a disk fills or a copy is interrupted. The data dir must be closed.
func TruncateValueLogs(t testing.TB, dir, sub string, cut int64) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, sub, "*.vlog"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no value log under %s (%v)", filepath.Join(dir, sub), err)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 2*cut {
			if err := os.Truncate(f, st.Size()-cut); err != nil {
				t.Fatal(err)
			}
		}
	}
}
