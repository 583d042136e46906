package bookkeeper

import (
	"bytes"
	"context"
	"github.com/ledgermedic/ledgermedic/datadir"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// openBKWritable is openBK with a writable ZooKeeper store (writes need a dir
// for the journal; nothing here journals).
func openBKWritable(t *testing.T, c *testutil.BKCluster) *datadir.DataDir {
	t.Helper()
	mu, err := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	if err != nil {
		t.Fatal(err)
	}
	lu, err := store.ParseLedgersURL("bk:")
	if err != nil {
		t.Fatal(err)
	}
	dd, err := datadir.Open(t.TempDir(), store.Options{Metadata: &mu, Ledgers: &lu})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd.Close() })
	return dd
}

// testMetadataRoundTrip decodes ledger metadata nodes the Java client wrote
// (CLOSED with Pulsar's custom metadata, and OPEN as a crashed writer leaves
// it) and re-encodes them: our encoder gives the same bytes.
func testMetadataRoundTrip(t *testing.T, c *testutil.BKCluster) {
	dd := openBK(t, c, "bk:", store.RemoteOptions{})
	meta := map[string]string{"application": "pulsar", "component": "schema", "pulsar/schemaId": "public/default/t"}
	for _, a := range []testutil.BKWriteArg{
		{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2, Digest: "CRC32C", Meta: meta},
		{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Digest: "MAC", Password: "secret", NoClose: true},
		{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1, Digest: "DUMMY", Meta: meta},
	} {
		w := c.WriteLedger(a, [][]byte{[]byte("x")})
		n, err := dd.Metadata.Get(ledgerPath("/ledgers", w.LedgerID))
		if err != nil {
			t.Fatal(err)
		}
		md, err := formats.DecodeLedgerMetadata(n.Value)
		if err != nil {
			t.Fatalf("ledger %d: %v", w.LedgerID, err)
		}
		again, err := formats.EncodeLedgerMetadata(md)
		if err != nil {
			t.Fatal(err)
		}
		// An OPEN node holds lastEntryId -1 and length 0, as ours does when
		// created (repair's openOf).
		if a.NoClose && (md.GetState() != bkpb.LedgerMetadataFormat_OPEN || md.LastEntryId == nil || md.GetLastEntryId() != -1 ||
			md.Length == nil || md.GetLength() != 0) {
			t.Fatalf("ledger %d: the Java client's OPEN node: %v", w.LedgerID, md)
		}
		if !bytes.Equal(again, n.Value) {
			t.Fatalf("ledger %d (%+v): re-encoded\n%x\nJava wrote\n%x", w.LedgerID, a, again, n.Value)
		}
	}
}

// testIDGenerator takes ids from the cluster's generator between ids the Java
// client takes: one sequence, no id twice.
func testIDGenerator(t *testing.T, c *testutil.BKCluster) {
	dd := openBKWritable(t, c)
	bw := dd.Ledgers.(store.BookieWriter)
	first := c.WriteLedger(testutil.BKWriteArg{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1}, [][]byte{[]byte("a")}).LedgerID
	ours, err := bw.NewLedgerID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again, err := bw.NewLedgerID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	next := c.WriteLedger(testutil.BKWriteArg{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1}, [][]byte{[]byte("b")}).LedgerID
	if !(first < ours && ours < again && again < next) {
		t.Fatalf("ids: Java %d, ours %d and %d, Java %d: not one increasing sequence", first, ours, again, next)
	}
	kids, err := dd.Metadata.(store.SequentialCreator).Children("/ledgers/idgen")
	if err != nil || len(kids) != 0 {
		t.Fatalf("/ledgers/idgen after taking ids: %v %v (the generator nodes must be deleted)", kids, err)
	}
	bookies, err := bw.WritableBookies(context.Background())
	if err != nil || len(bookies) != len(c.Bookies) {
		t.Fatalf("writable bookies: %v %v, want %d", bookies, err, len(c.Bookies))
	}
}
