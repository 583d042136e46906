package bookkeeper

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/bkwirepb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestLive runs every test that needs real bookies against one cluster
// (ZooKeeper and three bookies start once: about 20 s on a loaded machine).
func TestLive(t *testing.T) {
	c := testutil.StartBookKeeper(t, testutil.BKOptions{Bookies: 3, Storage: []string{"sorted", "interleaved"}})
	t.Run("Digests", func(t *testing.T) { testDigests(t, c) })
	t.Run("MetadataServiceURI", func(t *testing.T) { testMetadataServiceURI(t, c) })
	t.Run("OpenLedgerNotFenced", func(t *testing.T) { testOpenLedger(t, c) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, c) })
	t.Run("WrongRoot", func(t *testing.T) { testWrongRoot(t, c) })
	t.Run("AuthRequired", func(t *testing.T) { testAuthRequired(t, c) })
	t.Run("AddEntryReadByJava", func(t *testing.T) { testAddEntry(t, c) })
	t.Run("MetadataRoundTrip", func(t *testing.T) { testMetadataRoundTrip(t, c) })
	t.Run("IDGenerator", func(t *testing.T) { testIDGenerator(t, c) })
	t.Run("BookieStopped", func(t *testing.T) { testBookieStopped(t, c) }) // last: stops a bookie
}

func openBK(t *testing.T, c *testutil.BKCluster, ledgers string, remote store.RemoteOptions) *datadir.DataDir {
	t.Helper()
	mu, err := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	if err != nil {
		t.Fatal(err)
	}
	lu, err := store.ParseLedgersURL(ledgers)
	if err != nil {
		t.Fatal(err)
	}
	if remote.Timeout == 0 {
		remote.Timeout = 5 * time.Second
	}
	dd, err := datadir.Open("", store.Options{ReadOnly: true, Metadata: &mu, Ledgers: &lu, Remote: remote})
	if err != nil {
		t.Fatalf("open %s: %v", ledgers, err)
	}
	t.Cleanup(func() { dd.Close() })
	return dd
}

func readAll(t *testing.T, ls store.LedgerStore, id int64) [][]byte {
	t.Helper()
	var got [][]byte
	next := int64(0)
	err := ls.Entries(context.Background(), id, 0, -1, func(e int64, v []byte) error {
		if e != next {
			return fmt.Errorf("entry %d delivered, want %d", e, next)
		}
		next++
		got = append(got, bytes.Clone(v))
		return nil
	})
	if err != nil {
		t.Fatalf("ledger %d: %v", id, err)
	}
	return got
}

func sameEntries(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: entry %d: %d bytes differ from the %d written", what, i, len(got[i]), len(want[i]))
		}
	}
}

func payloads() [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	return [][]byte{[]byte("hello"), {}, []byte{0x00, 0xff, 0x10}, big, []byte(`{"k":"v"}`)}
}

// testDigests: ledgers the Java client wrote with each digest type (MAC with a
// password), ensemble 3/2/2, an empty and a 1 MiB entry, read byte-identical.
func testDigests(t *testing.T, c *testutil.BKCluster) {
	want := payloads()
	var ids []int64
	for _, d := range []struct{ digest, password string }{{"CRC32", ""}, {"CRC32C", ""}, {"MAC", "s3cret"}, {"DUMMY", ""}} {
		w := c.WriteLedger(testutil.BKWriteArg{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Digest: d.digest, Password: d.password,
			Meta: map[string]string{"application": "pulsar"}}, want)
		if !w.Closed || w.LastEntryID != int64(len(want)-1) {
			t.Fatalf("%s: bk tool write: %+v", d.digest, w)
		}
		ids = append(ids, w.LedgerID)
	}
	dd := openBK(t, c, "bk:", store.RemoteOptions{})
	for i, id := range ids {
		sameEntries(t, fmt.Sprintf("ledger %d", id), readAll(t, dd.Ledgers, id), want)
		if last, err := dd.Ledgers.LastEntry(id); err != nil || last != int64(len(want)-1) {
			t.Fatalf("ledger %d: LastEntry %d, %v", id, last, err)
		}
		e := int64(i % len(want))
		got, err := dd.Ledgers.Entry(id, e)
		if err != nil || !bytes.Equal(got, want[e]) {
			t.Fatalf("ledger %d entry %d: %v", id, e, err)
		}
		if _, err := dd.Ledgers.Entry(id, int64(len(want))); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ledger %d: entry past the end: %v, want ErrNotFound", id, err)
		}
	}
	counts := map[int64]int64{}
	if err := dd.Ledgers.LedgerIDs(context.Background(), func(id, n int64) error { counts[id] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if counts[id] != int64(len(want)) {
			t.Fatalf("LedgerIDs: ledger %d has %d entries, want %d (all: %v)", id, counts[id], len(want), counts)
		}
	}
	// The Java client reads the same bytes (the oracle the other way round).
	r, err := c.ReadLedger(ids[2], "s3cret", true)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "bk tool read", r.Entries, want)
	if f, _ := dd.Ledgers.(store.ReplicaReporter).ReplicaFindings(context.Background()); len(f) != 0 {
		t.Fatalf("replica findings on a healthy cluster: %+v", f)
	}
}

func testMetadataServiceURI(t *testing.T, c *testutil.BKCluster) {
	w := c.WriteLedger(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}, [][]byte{[]byte("uri")})
	for _, u := range []string{"bk:zk+hierarchical://" + c.ZK.Addr + "/ledgers", "bk:metadata-store:zk:" + c.ZK.Addr + "/ledgers"} {
		lu, err := store.ParseLedgersURL(u)
		if err != nil {
			t.Fatal(err)
		}
		// No --metadata: the ledger store opens its own ZooKeeper session.
		lb, err := Open(lu, nil, store.Options{ReadOnly: true, Remote: store.RemoteOptions{Timeout: 5 * time.Second}})
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		got, err := lb.Entry(w.LedgerID, 0)
		lb.Close()
		if err != nil || string(got) != "uri" {
			t.Fatalf("%s: entry 0 = %q, %v", u, got, err)
		}
	}
}

// testOpenLedger: an open ledger is read up to the LAC the Java client's
// no-recovery open sees, and its writer can still add entries afterwards.
func testOpenLedger(t *testing.T, c *testutil.BKCluster) {
	h := c.HoldWriter(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}, [][]byte{[]byte("a"), []byte("b")})
	if _, err := h.Add([]byte("c")); err != nil {
		t.Fatal(err)
	}
	java, err := c.ReadLedger(h.LedgerID, "", true)
	if err != nil {
		t.Fatal(err)
	}
	dd := openBK(t, c, "bk:", store.RemoteOptions{})
	last, err := dd.Ledgers.LastEntry(h.LedgerID)
	if err != nil || last != java.LAC || last < 1 {
		t.Fatalf("LastEntry %d, %v; the Java client's LAC is %d", last, err, java.LAC)
	}
	got := readAll(t, dd.Ledgers, h.LedgerID)
	sameEntries(t, "open ledger", got, java.Entries)
	if !bytes.Equal(got[0], []byte("a")) {
		t.Fatalf("entry 0 = %q", got[0])
	}
	// No fencing: the writer adds more after our reads.
	for _, p := range []string{"d", "e"} {
		if _, err := h.Add([]byte(p)); err != nil {
			t.Fatalf("the held writer cannot add after our reads (fenced?): %v", err)
		}
	}
	dd2 := openBK(t, c, "bk:", store.RemoteOptions{})
	if last2, err := dd2.Ledgers.LastEntry(h.LedgerID); err != nil || last2 <= last {
		t.Fatalf("after more adds: LastEntry %d, %v, want > %d", last2, err, last)
	}
}

// putLedger writes ledger metadata naming bookies (for ensembles with fake or
// dead bookies) and returns its id.
func putLedger(t *testing.T, c *testutil.BKCluster, id int64, ensemble []string, wq int) {
	t.Helper()
	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	ms, err := datadir.OpenMetadata(mu, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	md := &bkpb.LedgerMetadataFormat{
		QuorumSize: proto.Int32(int32(wq)), EnsembleSize: proto.Int32(int32(len(ensemble))), AckQuorumSize: proto.Int32(int32(wq)),
		Length: proto.Int64(5), LastEntryId: proto.Int64(0), State: bkpb.LedgerMetadataFormat_CLOSED.Enum(),
		DigestType: bkpb.LedgerMetadataFormat_CRC32C.Enum(), Password: []byte{},
		Segment: []*bkpb.LedgerMetadataFormat_Segment{{EnsembleMember: ensemble, FirstEntryId: proto.Int64(0)}},
	}
	v, err := formats.EncodeLedgerMetadata(md)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.CompareAndSet(formats.LedgerPath(id), 0, v); err != nil {
		t.Fatal(err)
	}
}

// garbageServer answers every connection with random bytes.
func garbageServer(t *testing.T) string {
	r := rand.New(rand.NewPCG(3, 4))
	var mu sync.Mutex
	return fakeBookie(t, func(nc net.Conn) {
		b := make([]byte, 4096)
		mu.Lock()
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		mu.Unlock()
		_, _ = nc.Write(b)
		_, _ = nc.Read(make([]byte, 1))
	})
}

func closedPort(t *testing.T) string {
	l := testutil.Listen(t)
	addr := l.Addr().String()
	l.Close()
	return addr
}

func testBadInput(t *testing.T, c *testutil.BKCluster) {
	garbage, dead := garbageServer(t), closedPort(t)
	real := c.WriteLedger(testutil.BKWriteArg{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1}, [][]byte{[]byte("hello")})
	// The same entry copied under new ledger ids is not possible (the id is in
	// the frame), so ledgers on fake bookies only fail, and a real bookie after
	// a fake one serves.
	putLedger(t, c, 900, []string{dead}, 1)
	putLedger(t, c, 901, []string{garbage}, 1)
	putLedger(t, c, 902, []string{"no-such-bookie"}, 1)
	dd := openBK(t, c, "bk:", store.RemoteOptions{Timeout: 2 * time.Second})
	for _, tc := range []struct {
		id   int64
		want string
	}{{900, dead}, {901, garbage}, {902, "no-such-bookie"}} {
		start := time.Now()
		_, err := dd.Ledgers.Entry(tc.id, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("ledger %d entry 0", tc.id)) {
			t.Fatalf("ledger %d: error %v, want one naming the ledger and bookie %s", tc.id, err, tc.want)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("ledger %d: the error took %v", tc.id, time.Since(start))
		}
	}
	if got, err := dd.Ledgers.Entry(real.LedgerID, 0); err != nil || string(got) != "hello" {
		t.Fatalf("real ledger after the bad ones: %q, %v", got, err)
	}
	// Metadata that does not decode.
	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	ms, err := datadir.OpenMetadata(mu, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	if _, err := ms.CompareAndSet(formats.LedgerPath(903), 0, []byte("BookieMetadataFormatVersion\t3\n\xff\xff")); err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Ledgers.Entry(903, 0); err == nil || !strings.Contains(err.Error(), "ledger 903") {
		t.Fatalf("undecodable metadata: %v", err)
	}
}

func testWrongRoot(t *testing.T, c *testutil.BKCluster) {
	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	lu, _ := store.ParseLedgersURL("bk:")
	_, err := datadir.Open("", store.Options{ReadOnly: true, Metadata: &mu, Ledgers: &lu, Remote: store.RemoteOptions{BKRoot: "/nope"}})
	if err == nil || !strings.Contains(err.Error(), "/nope/LAYOUT") {
		t.Fatalf("wrong root: %v", err)
	}
}

// testBookieStopped: with one bookie of the write set stopped, entries come from
// the other replica and the stopped bookie is named.
func testBookieStopped(t *testing.T, c *testutil.BKCluster) {
	want := [][]byte{[]byte("r0"), []byte("r1"), []byte("r2"), []byte("r3")}
	w := c.WriteLedger(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}, want)
	var stopped *testutil.Bookie
	for _, b := range c.Bookies {
		if b.ID == w.Ensemble[0] {
			stopped = b
		}
	}
	if stopped == nil {
		t.Fatalf("ensemble %v names no bookie of %d", w.Ensemble, len(c.Bookies))
	}
	stopped.Stop()
	t.Cleanup(stopped.Restart)
	dd := openBK(t, c, "bk:", store.RemoteOptions{Timeout: 2 * time.Second})
	sameEntries(t, "one bookie stopped", readAll(t, dd.Ledgers, w.LedgerID), want)
	f, _ := dd.Ledgers.(store.ReplicaReporter).ReplicaFindings(context.Background())
	if len(f) == 0 || f[0].Bookie != stopped.ID || f[0].Kind != store.FindingBookieUnavailable {
		t.Fatalf("findings %+v, want %s named as unavailable", f, stopped.ID)
	}
}

// testAddEntry: an entry our ADD_ENTRY put on both bookies of a ledger whose
// metadata we created OPEN and then closed is read by the Java client with a
// recovery open, as a broker reads a schema ledger.
func testAddEntry(t *testing.T, c *testutil.BKCluster) {
	const id = 5000
	ens := []string{c.Bookies[0].ID, c.Bookies[1].ID}
	payload := []byte("a restored schema entry")
	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	ms, err := datadir.OpenMetadata(mu, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	md := &bkpb.LedgerMetadataFormat{
		QuorumSize: proto.Int32(2), EnsembleSize: proto.Int32(2), AckQuorumSize: proto.Int32(2), Length: proto.Int64(0),
		LastEntryId: proto.Int64(-1), State: bkpb.LedgerMetadataFormat_OPEN.Enum(),
		DigestType: bkpb.LedgerMetadataFormat_CRC32C.Enum(), Password: []byte{}, Ctime: proto.Int64(time.Now().UnixMilli()),
		Segment: []*bkpb.LedgerMetadataFormat_Segment{{EnsembleMember: ens, FirstEntryId: proto.Int64(0)}},
	}
	formats.SetCustomMetadata(md, "application", "pulsar")
	formats.SetCustomMetadata(md, "component", "schema")
	v, _ := formats.EncodeLedgerMetadata(md)
	ver, err := ms.CompareAndSet(formats.LedgerPath(id), 0, v)
	if err != nil {
		t.Fatal(err)
	}
	dd := openBK(t, c, "bk:", store.RemoteOptions{})
	s := dd.Ledgers.(*Store)
	for _, b := range ens {
		if err := s.AddEntry(context.Background(), b, id, 0, -1, int64(len(payload)), "CRC32C", nil, payload); err != nil {
			t.Fatal(err)
		}
	}
	md.State, md.LastEntryId, md.Length = bkpb.LedgerMetadataFormat_CLOSED.Enum(), proto.Int64(0), proto.Int64(int64(len(payload)))
	v, _ = formats.EncodeLedgerMetadata(md)
	if _, err := ms.CompareAndSet(formats.LedgerPath(id), ver, v); err != nil {
		t.Fatal(err)
	}
	r, err := c.ReadLedger(id, "", false)
	if err != nil {
		t.Fatalf("the Java client cannot read our ledger with a recovery open: %v", err)
	}
	sameEntries(t, "bk tool read (recovery)", r.Entries, [][]byte{payload})
	// A wrong master key is refused by the bookie.
	err = s.AddEntry(context.Background(), ens[0], id, 1, 0, 1, "CRC32C", []byte("wrong"), []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "bookie "+ens[0]) {
		t.Fatalf("add with a wrong master key: %v", err)
	}
}

// authServer answers every v3 request with EUA, as a bookie whose
// bookieAuthProviderFactoryClass is set answers a client that did not
// authenticate (AuthHandler.ServerSideHandler). A real bookie with auth needs a
// SASL/JAAS or TLS setup, which the test cluster does not have.
func authServer(t *testing.T) string {
	return fakeBookie(t, func(nc net.Conn) {
		for {
			b, err := readFrame(nc, nil)
			if err != nil {
				return
			}
			var req bkwirepb.Request
			if proto.Unmarshal(b, &req) != nil {
				return
			}
			h := req.GetHeader()
			body, _ := proto.Marshal(&bkwirepb.Response{Header: header(h.GetOperation(), h.GetTxnId()),
				Status: bkwirepb.StatusCode_EUA.Enum()})
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
			if _, err := nc.Write(append(frame, body...)); err != nil {
				return
			}
		}
	})
}

// testAuthRequired: a bookie requiring authentication is a clear error naming
// it, and a probe counts it as unavailable (never as missing the entry).
func testAuthRequired(t *testing.T, c *testutil.BKCluster) {
	eua := authServer(t)
	putLedger(t, c, 910, []string{eua}, 1)
	dd := openBK(t, c, "bk:", store.RemoteOptions{Timeout: 2 * time.Second})
	_, err := dd.Ledgers.Entry(910, 0)
	if err == nil || !strings.Contains(err.Error(), "EUA") || !strings.Contains(err.Error(), eua) || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("entry on a bookie requiring auth: %v, want an EUA error naming %s", err, eua)
	}
	p, err := dd.Ledgers.(store.ReplicaProber).ProbeEntry(context.Background(), 910, 0)
	if err != nil || len(p.Unavailable) != 1 || p.Unavailable[0] != eua || len(p.Missing) != 0 {
		t.Fatalf("probe: %+v, %v; want %s unavailable", p, err, eua)
	}
}
