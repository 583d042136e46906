package app

import (
	"errors"
	"fmt"
	"github.com/ledgermedic/ledgermedic/datadir"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestBKLiveReadCommands runs the read commands not covered by
// TestBKLiveCommands from the CLI on --ledgers bk: against real bookies: a
// topic of two ledgers and a schema version the Java client wrote, whose
// managed-ledger and locator nodes are in the bookies' ZooKeeper. Each command
// must get its answer from entries read through the bookies.
func TestBKLiveReadCommands(t *testing.T) {
	c := testutil.StartBookKeeper(t, testutil.BKOptions{Bookies: 3})
	topic, _ := formats.ParseTopic("persistent://public/default/bkread")

	// The schema version: a SchemaEntry as entry 0 of its own ledger.
	def := []byte(`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`)
	data, err := formats.EncodeSchemaInfo(&schemapb.SchemaInfo{SchemaId: proto.String("public/default/bkread"),
		User: proto.String("admin"), Type: schemapb.SchemaInfo_AVRO.Enum(), Schema: def,
		Timestamp: proto.Int64(1700000000000), Deleted: proto.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	sentry, err := formats.EncodeSchemaEntry(&schemapb.SchemaEntry{SchemaData: data})
	if err != nil {
		t.Fatal(err)
	}
	sl := c.WriteLedger(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2,
		Meta: customMap(testutil.SchemaLedgerCustom("public/default/bkread"))}, [][]byte{sentry})

	// Two ledgers of three messages each, broker indexes 0..5, schema version 0.
	ms := openLiveMetadata(t, c)
	lids := putBKTopic(t, c, ms, topic, 2, 3, nil)
	loc, err := formats.EncodeSchemaLocator(&schemapb.SchemaLocator{Info: testutil.IndexEntry(0, sl.LedgerID, formats.SchemaHash(def)),
		Index: []*schemapb.IndexEntry{testutil.IndexEntry(0, sl.LedgerID, formats.SchemaHash(def))}})
	if err != nil {
		t.Fatal(err)
	}
	putNode(t, ms, topic.SchemaLocatorPath(), loc)

	live := []string{"--metadata", "zk://" + c.ZK.Addr, "--ledgers", "bk:", "-o", "json"}
	run := func(args ...string) string {
		t.Helper()
		out, stderr, code := runApp(t, append(live, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d, %s\n%s", strings.Join(args, " "), code, stderr, out)
		}
		return out
	}
	match := func(what, out string, res ...string) {
		t.Helper()
		for _, re := range res {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Fatalf("%s: no match for %s in\n%s", what, re, out)
			}
		}
	}

	// inspect ledgers: each ledger's entries counted from the bookies.
	out := run("inspect", "ledgers", "--topic", topic.String())
	for _, id := range lids {
		match("inspect ledgers", out, fmt.Sprintf(`"ledger_id": %d,[^}]*"stored_entries": 3\b`, id))
	}
	// index find: offset 4 is entry 1 of the second ledger, found by reading entries.
	out = run("index", "find", "--topic", topic.String(), "--offset", "4")
	match("index find", out, fmt.Sprintf(`"ledger_id": %d`, lids[1]), `"entry_id": 1\b`)
	// index backfill (a dry run): entry 0 of each ledger gives its firstEntryIndex.
	for _, apply := range []bool{false, true} {
		args := []string{"index", "backfill"}
		if apply {
			args = append(args, "--apply", "-d", t.TempDir()) // the data dir holds the journal
		}
		out = run(args...)
		if !apply {
			match("index backfill", out, fmt.Sprintf(`"ledger_id": %d,\s*"value": 0,\s*"source": "entry0"`, lids[0]),
				fmt.Sprintf(`"ledger_id": %d,\s*"value": 3,\s*"source": "entry0"`, lids[1]))
		} else {
			match("index backfill --apply", out, `"planned": 2,\s*"written": 2,`)
		}
	}
	n, err := ms.Get(topic.ManagedLedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := formats.DecodeManagedLedgerInfo(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	for i, li := range got.GetLedgerInfo() {
		if v, _, ok := cluster.FirstEntryIndex(li, cluster.FirstEntryIndexKey); !ok || v != int64(3*i) {
			t.Fatalf("after back-fill --apply: ledger %d firstEntryIndex %d, want %d", li.GetLedgerId(), v, 3*i)
		}
	}
	// schema-usage: the six messages all use version 0, read from the bookies.
	out = run("inspect", "schema-usage")
	match("inspect schema-usage", out, `"messages": 6\b`)
	// report: the HTML names the topic and both ledgers.
	html := filepath.Join(t.TempDir(), "r.html")
	run("report", "--out", html)
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bkread", fmt.Sprint(lids[0]), fmt.Sprint(lids[1])} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("report: %q missing from the HTML", want)
		}
	}

	// Bad input: ledgers on a closed port, on a port that answers garbage, on a
	// bookie id the registry does not know, and metadata that does not decode.
	// Reading one is exit 3 naming the ledger and what failed; check reports
	// them and goes on (exit 1); nothing panics.
	l := testutil.Listen(t)
	dead := l.Addr().String()
	l.Close()
	bad := map[int64]string{900: dead, 901: garbagePort(t), 902: "no-such-bookie:3181", 903: "metadata that does not decode"}
	for id, bookie := range bad {
		v := []byte("BookieMetadataFormatVersion\t3\n\xff\xff")
		if id != 903 {
			md := testutil.LedgerMetadata(testutil.LedgerSpec{LastEntryID: 0, Length: 5})
			md.Segment[0].EnsembleMember = []string{bookie}
			md.EnsembleSize, md.QuorumSize, md.AckQuorumSize = proto.Int32(1), proto.Int32(1), proto.Int32(1)
			if v, err = formats.EncodeLedgerMetadata(md); err != nil {
				t.Fatal(err)
			}
		}
		putNode(t, ms, formats.LedgerPath(id), v)
	}
	for id, bookie := range bad {
		start := time.Now()
		_, stderr, code := runApp(t, append(live, "--timeout", "2s", "inspect", "entries", "--ledger", fmt.Sprint(id))...)
		if code != 3 || !strings.Contains(stderr, fmt.Sprintf("ledger %d", id)) || !strings.Contains(stderr, strings.Fields(bookie)[0]) ||
			strings.Contains(stderr, "panic") {
			t.Fatalf("inspect entries --ledger %d (%s): exit %d, want 3 naming it and %q: %s", id, bookie, code, bookie, stderr)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("inspect entries --ledger %d (%s): the error took %v", id, bookie, took)
		}
	}
	out, stderr, code := runApp(t, append(live, "--timeout", "2s", "check")...)
	if code != 1 || strings.Contains(stderr, "panic") {
		t.Fatalf("check with bad ledgers: exit %d, want 1: %s\n%s", code, stderr, out)
	}
	// An unreachable ledger is not called lost: its entries are unknown.
	if strings.Contains(out, `"kind": "ledger-node-without-entries"`) {
		t.Fatalf("check with bad ledgers: a ledger no bookie answered for is reported without entries:\n%s", out)
	}
	for id := range bad {
		if id == 903 {
			match("check with bad ledgers", out, `"kind": "node-undecodable",\s*"severity": "error",\s*"location": "node /ledgers/00/0000/L0903"`)
			continue
		}
		// Nothing of the ledger could be read: an error naming the bookie.
		match("check with bad ledgers", out, fmt.Sprintf(`"kind": "bookie-unavailable",\s*"severity": "error",\s*"location": "ledger %d entry 0",\s*"message": "bookie %s[^"]*no bookie of the write set could serve ledger %d from entry 0 on`,
			id, regexp.QuoteMeta(bad[id]), id))
	}

	// One bookie of the first ledger's write sets stopped: check names it, and
	// the entries come from the other replicas.
	stopped := c.Bookies[0]
	stopped.Stop()
	out, stderr, code = runApp(t, append(live, "--timeout", "2s", "check")...)
	if code != 1 || !regexp.MustCompile(`(?s)"kind": "bookie-unavailable".{0,300}`+regexp.QuoteMeta(stopped.ID)).MatchString(out) {
		t.Fatalf("check with bookie %s stopped: exit %d, %s\n%s", stopped.ID, code, stderr, out)
	}
	for _, id := range lids {
		out = run("--timeout", "2s", "inspect", "entries", "--ledger", fmt.Sprint(id))
		if strings.Count(out, `"producer": "p"`) != 3 {
			t.Fatalf("inspect entries --ledger %d with bookie %s stopped:\n%s", id, stopped.ID, out)
		}
	}
}

// garbagePort answers every connection with random bytes.
func garbagePort(t *testing.T) string {
	l := testutil.Listen(t)
	go func() {
		r := rand.New(rand.NewPCG(3, 4))
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 4096)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			_, _ = nc.Write(b)
			go func() {
				defer nc.Close()
				_, _ = nc.Read(make([]byte, 1))
			}()
		}
	}()
	return l.Addr().String()
}

// openLiveMetadata opens the cluster's ZooKeeper as a writable metadata store
// and makes its root a Pulsar cluster's (commands refuse a root without one).
func openLiveMetadata(tb testing.TB, c *testutil.BKCluster) store.MetadataStore {
	tb.Helper()
	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	ms, err := datadir.OpenMetadata(mu, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ms.Close() })
	putNode(tb, ms, "/admin", nil)
	return ms
}

// putNode creates a node and the parents it lacks.
func putNode(tb testing.TB, ms store.MetadataStore, path string, value []byte) {
	tb.Helper()
	for i := 1; i < len(path); i++ {
		if path[i] != '/' {
			continue
		}
		if _, err := ms.Get(path[:i]); errors.Is(err, store.ErrNotFound) {
			if _, err := ms.CompareAndSet(path[:i], 0, nil); err != nil {
				tb.Fatalf("create %s: %v", path[:i], err)
			}
		}
	}
	if _, err := ms.CompareAndSet(path, 0, value); err != nil {
		tb.Fatalf("create %s: %v", path, err)
	}
}

// putBKTopic writes a topic's ledgers with the Java client (ensemble 3/2/2,
// the custom metadata a broker gives them), each of perLedger messages with
// broker indexes counting from 0 across the ledgers and schema version 0 (pad
// bytes of payload beside the message's name), and creates its managed-ledger
// node listing them. It returns the ledger ids.
func putBKTopic(tb testing.TB, c *testutil.BKCluster, ms store.MetadataStore, topic formats.TopicName, ledgers, perLedger int, pad []byte) []int64 {
	tb.Helper()
	ml := strings.TrimPrefix(topic.ManagedLedgerPath(), "/managed-ledgers/")
	info := &mlpb.ManagedLedgerInfo{}
	var lids []int64
	for l := range ledgers {
		var entries [][]byte
		for e := range perLedger {
			i := int64(perLedger*l + e)
			entries = append(entries, testutil.TopicEntry(tb, testutil.Message{HasIndex: true, Index: i,
				Payload: append([]byte(fmt.Sprint("m", i)), pad...),
				Meta: &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(uint64(i)),
					PublishTime: proto.Uint64(1700000000000 + uint64(i)), SchemaVersion: make([]byte, 8)}}))
		}
		w := c.WriteLedger(testutil.BKWriteArg{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2,
			Meta: customMap(testutil.TopicLedgerCustom(ml))}, entries)
		lids = append(lids, w.LedgerID)
		info.LedgerInfo = append(info.LedgerInfo, &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(w.LedgerID),
			Entries: proto.Int64(int64(perLedger)), Size: proto.Int64(100), Timestamp: proto.Int64(1700000000000)})
	}
	v, err := formats.EncodeManagedLedgerInfo(info, formats.Encoding{})
	if err != nil {
		tb.Fatal(err)
	}
	putNode(tb, ms, topic.ManagedLedgerPath(), v)
	return lids
}

func customMap(kv []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
