package inspect

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/bookkeeper"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestLiveFindings: check against real bookies (--ledgers bk:) gives the
// findings only a live cluster makes possible, each on a ledger set up for it
// on one cluster (ZooKeeper and three bookies, started once).
func TestLiveFindings(t *testing.T) {
	c := testutil.StartBookKeeper(t, testutil.BKOptions{Bookies: 3, Storage: []string{"sorted", "interleaved"}})
	b0, b1 := c.Bookies[0].ID, c.Bookies[1].ID
	ms := openLiveMeta(t, c)
	adder := openLive(t, c)

	// A ledger whose metadata exists (CLOSED, one entry) but no bookie holds.
	putLiveLedger(t, ms, 7000, []string{b0, b1}, bkpb.LedgerMetadataFormat_CLOSED, 0, nil)
	// Entry 0 added to b0 only: under-replicated, b1 missing it.
	putLiveLedger(t, ms, 7001, []string{b0, b1}, bkpb.LedgerMetadataFormat_OPEN, -1, nil)
	payload := []byte("only on one bookie")
	if err := adder.Ledgers.(*bookkeeper.Store).AddEntry(context.Background(), b0, 7001, 0, -1, int64(len(payload)), "CRC32C", nil, payload); err != nil {
		t.Fatal(err)
	}
	closeLiveLedger(t, ms, 7001, 0, int64(len(payload)))
	// OPEN ledgers: 7101 a LedgerInfo but not the last (crashed writer), 7102 the
	// managed ledger's last (normal), 7103 referenced by nothing.
	for _, id := range []int64{7101, 7102, 7103} {
		putLiveLedger(t, ms, id, []string{b0, b1}, bkpb.LedgerMetadataFormat_OPEN, -1, nil)
	}
	topic, _ := formats.ParseTopic("persistent://public/default/live")
	mli, _ := proto.Marshal(&mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{
		{LedgerId: proto.Int64(7101), Entries: proto.Int64(0)}, {LedgerId: proto.Int64(7102)}}})
	if _, err := ms.CompareAndSet(topic.ManagedLedgerPath(), 0, mli); err != nil {
		t.Fatal(err)
	}
	// An unreferenced schema ledger the Java client wrote, as a broker does.
	orphan := c.WriteLedger(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2,
		Meta: map[string]string{"application": "pulsar", "component": "schema", "pulsar/schemaId": "public/default/gone"}},
		[][]byte{[]byte("a schema entry")})
	// A byte flipped in the entry log of the second bookie of entry 0's write
	// set: a read is served by the first, only the probe of every bookie sees it.
	good := []byte("a payload whose one copy is flipped 0123456789")
	flipped := c.WriteLedger(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}, [][]byte{good})
	bad := flipped.Ensemble[1]
	c.Bookie(bad).FlipInEntryLog(good)
	adder.Close()

	dd := openLive(t, c)
	fs, _, err := Check(context.Background(), dd, CheckOptions{Sources: []FindingSource{ReplicaFindings}}, nil)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	find := func(kind string, ledger int64) *report.Finding {
		for i := range fs {
			if fs[i].Kind == kind && fs[i].LedgerID != nil && *fs[i].LedgerID == ledger {
				return &fs[i]
			}
		}
		return nil
	}
	must := func(kind string, ledger int64, sev report.Severity, words ...string) {
		t.Helper()
		f := find(kind, ledger)
		if f == nil {
			t.Errorf("no %s finding for ledger %d in %+v", kind, ledger, fs)
			return
		}
		if f.Severity != sev {
			t.Errorf("%s ledger %d: severity %s, want %s", kind, ledger, f.Severity, sev)
		}
		for _, w := range words {
			if !strings.Contains(f.Location+" "+f.Message, w) {
				t.Errorf("%s ledger %d: %q does not name %q", kind, ledger, f.Location+" "+f.Message, w)
			}
		}
	}
	mustNot := func(kind string, ledger int64) {
		t.Helper()
		if f := find(kind, ledger); f != nil {
			t.Errorf("unexpected %s finding for ledger %d: %+v", kind, ledger, *f)
		}
	}
	must(KindLedgerNotOnBookies, 7000, report.SeverityError, "ledger 7000", b0, b1)
	mustNot(KindLedgerNodeWithoutEntries, 7000)
	must(KindUnderReplicated, 7001, report.SeverityWarning, "ledger 7001 entry 0", "missing on "+b1)
	mustNot(KindLedgerNotOnBookies, 7001)
	must(KindLedgerOpen, 7101, report.SeverityWarning, "not the last ledger")
	must(KindLedgerOpen, 7103, report.SeverityWarning, "nothing references it")
	mustNot(KindLedgerOpen, 7102)
	mustNot(KindLedgerOpen, orphan.LedgerID)
	must(KindOrphanSchemaLedger, orphan.LedgerID, report.SeverityInfo, "pulsar#25514", "public/default/gone")
	mustNot(KindOrphanLedger, orphan.LedgerID)
	must(KindReplicaCorrupt, flipped.LedgerID, report.SeverityWarning, "entry 0", bad)
	// The good copy is served, byte-identical.
	got, err := dd.Ledgers.Entry(flipped.LedgerID, 0)
	if err != nil || !bytes.Equal(got, good) {
		t.Fatalf("entry 0 of the ledger with a flipped copy: %q, %v; want the good copy", got, err)
	}
	for _, l := range []int64{flipped.LedgerID, orphan.LedgerID} {
		mustNot(KindUnderReplicated, l)
	}
}

func openLiveMeta(t *testing.T, c *testutil.BKCluster) store.MetadataBackend {
	t.Helper()
	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	ms, err := datadir.OpenMetadata(mu, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	return ms
}

func openLive(t *testing.T, c *testutil.BKCluster) *datadir.DataDir {
	t.Helper()
	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	lu, _ := store.ParseLedgersURL("bk:")
	dd, err := datadir.Open("", store.Options{ReadOnly: true, Metadata: &mu, Ledgers: &lu, Remote: store.RemoteOptions{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd.Close() })
	return dd
}

// putLiveLedger creates ledger metadata (2/2/2 CRC32C, empty password).
func putLiveLedger(t *testing.T, ms store.MetadataStore, id int64, ens []string, state bkpb.LedgerMetadataFormat_State, last int64, custom map[string]string) {
	t.Helper()
	length := int64(0)
	if last >= 0 {
		length = 5
	}
	md := &bkpb.LedgerMetadataFormat{
		QuorumSize: proto.Int32(int32(len(ens))), EnsembleSize: proto.Int32(int32(len(ens))), AckQuorumSize: proto.Int32(int32(len(ens))),
		Length: proto.Int64(length), LastEntryId: proto.Int64(last), State: state.Enum(),
		DigestType: bkpb.LedgerMetadataFormat_CRC32C.Enum(), Password: []byte{}, Ctime: proto.Int64(time.Now().UnixMilli()),
		Segment: []*bkpb.LedgerMetadataFormat_Segment{{EnsembleMember: ens, FirstEntryId: proto.Int64(0)}},
	}
	for k, v := range custom {
		formats.SetCustomMetadata(md, k, v)
	}
	v, err := formats.EncodeLedgerMetadata(md)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.CompareAndSet(formats.LedgerPath(id), 0, v); err != nil {
		t.Fatal(err)
	}
}

// closeLiveLedger closes an OPEN ledger's metadata at lastEntryId last.
func closeLiveLedger(t *testing.T, ms store.MetadataStore, id, last, length int64) {
	t.Helper()
	n, err := ms.Get(formats.LedgerPath(id))
	if err != nil {
		t.Fatal(err)
	}
	md, err := formats.DecodeLedgerMetadata(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	md.State, md.LastEntryId, md.Length = bkpb.LedgerMetadataFormat_CLOSED.Enum(), proto.Int64(last), proto.Int64(length)
	v, _ := formats.EncodeLedgerMetadata(md)
	if _, err := ms.CompareAndSet(n.Path, n.Version, v); err != nil {
		t.Fatal(err)
	}
}
