package app

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/internal/testutil"
	"github.com/ledgermedic/ledgermedic/store"
)

// TestBKLiveReadCommands runs the read commands not covered by
// TestBKLiveCommands from the CLI on --ledgers bk: against real bookies: a
// topic of two ledgers and a schema version the Java client wrote, whose
// managed-ledger and locator nodes are in the bookies' ZooKeeper. Each command
// must get its answer from entries read through the bookies.
func TestBKLiveReadCommands(t *testing.T) {
	c := testutil.StartBookKeeper(t, testutil.BKOptions{Bookies: 3})
	topic, _ := formats.ParseTopic("persistent://public/default/bkread")
	ml := strings.TrimPrefix(topic.ManagedLedgerPath(), "/managed-ledgers/")

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
	var lids []int64
	for l := range 2 {
		var entries [][]byte
		for e := range 3 {
			i := int64(3*l + e)
			entries = append(entries, testutil.TopicEntry(t, testutil.Message{HasIndex: true, Index: i, Payload: []byte(fmt.Sprint("m", i)),
				Meta: &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(uint64(i)),
					PublishTime: proto.Uint64(1700000000000 + uint64(i)), SchemaVersion: make([]byte, 8)}}))
		}
		w := c.WriteLedger(testutil.BKWriteArg{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2,
			Meta: customMap(testutil.TopicLedgerCustom(ml))}, entries)
		lids = append(lids, w.LedgerID)
	}

	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	ms, err := store.OpenMetadata(mu, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	info := &mlpb.ManagedLedgerInfo{}
	for _, id := range lids {
		info.LedgerInfo = append(info.LedgerInfo, &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(id),
			Entries: proto.Int64(3), Size: proto.Int64(100), Timestamp: proto.Int64(1700000000000)})
	}
	mlv, err := formats.EncodeManagedLedgerInfo(info, formats.Encoding{})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := formats.EncodeSchemaLocator(&schemapb.SchemaLocator{Info: testutil.IndexEntry(0, sl.LedgerID, formats.SchemaHash(def)),
		Index: []*schemapb.IndexEntry{testutil.IndexEntry(0, sl.LedgerID, formats.SchemaHash(def))}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		path  string
		value []byte
	}{{"/admin", nil}, {"/managed-ledgers", nil}, {"/managed-ledgers/public", nil}, {"/managed-ledgers/public/default", nil},
		{"/managed-ledgers/public/default/persistent", nil}, {topic.ManagedLedgerPath(), mlv},
		{"/schemas", nil}, {"/schemas/public", nil}, {"/schemas/public/default", nil}, {topic.SchemaLocatorPath(), loc}} {
		if _, err := ms.CompareAndSet(n.path, 0, n.value); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}

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
}

func customMap(kv []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
