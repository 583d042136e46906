package inspect

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
	"github.com/ledgermedic/ledgermedic/testutil/golden"
)

// golden compares the document printed as text and as JSON with
// testdata/<name>.txt and testdata/<name>.json.
func checkGolden(t *testing.T, name string, doc *report.Document) {
	t.Helper()
	for _, asJSON := range []bool{false, true} {
		var buf bytes.Buffer
		if err := report.Print(&buf, doc, asJSON); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join("testdata", name+".txt")
		if asJSON {
			p = filepath.Join("testdata", name+".json")
		}
		golden.Check(t, p, buf.Bytes())
	}
}

func doc(ts ...*report.Table) *report.Document {
	d := &report.Document{}
	d.Add(ts...)
	return d
}

func topic(t *testing.T, s string) formats.TopicName {
	t.Helper()
	tn, err := formats.ParseTopic(s)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestViewsGolden(t *testing.T) {
	dir := buildTestDir(t)
	dd := openRO(t, dir)
	ctx := context.Background()

	t.Run("topics", func(t *testing.T) {
		checkGolden(t, "topics", doc(must(Topics(ctx, dd, ""))))
	})
	t.Run("ledgers", func(t *testing.T) {
		checkGolden(t, "ledgers-orders", doc(must(Ledgers(ctx, dd, topic(t, "persistent://public/default/orders")))))
		// A partitioned topic by its base name lists every partition.
		checkGolden(t, "ledgers-events", doc(must(Ledgers(ctx, dd, topic(t, "acme/ns/events")))))
		one := must(Ledgers(ctx, dd, topic(t, "acme/ns/events-partition-1")))
		if len(one.Rows) != 1 {
			t.Errorf("one partition: %d rows, want 1", len(one.Rows))
		}
		if _, err := Ledgers(ctx, dd, topic(t, "acme/ns/nope")); !errors.Is(err, ErrNoSuchTopic) {
			t.Errorf("unknown topic: %v, want ErrNoSuchTopic", err)
		}
	})
	t.Run("schemas", func(t *testing.T) {
		checkGolden(t, "schemas", doc(must(Schemas(ctx, dd, nil))))
		orders := topic(t, "public/default/orders-partition-3") // partitions share the base topic's schema
		one := must(Schemas(ctx, dd, &orders))
		if len(one.Rows) != 2 {
			t.Errorf("orders schemas: %d rows, want 2", len(one.Rows))
		}
		nope := topic(t, "acme/ns/nope")
		if _, err := Schemas(ctx, dd, &nope); !errors.Is(err, ErrNoSuchTopic) {
			t.Errorf("unknown topic: %v, want ErrNoSuchTopic", err)
		}
	})
	t.Run("node", func(t *testing.T) {
		for name, p := range map[string]string{
			"node-ml-plain": ordersPath, "node-ml-zstd": events0Path, "node-cursor": cursorPath,
			"node-locator": ordersLoc, "node-ledger": formats.LedgerPath(40), "node-other": "/ledgers/LAYOUT",
		} {
			tbl, undecodable, err := Node(dd, p)
			if err != nil || undecodable {
				t.Fatalf("%s: %v, undecodable %v", p, err, undecodable)
			}
			checkGolden(t, name, doc(tbl))
		}
		if _, _, err := Node(dd, "/no/such/node"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing node: %v, want ErrNotFound", err)
		}
	})
	t.Run("entries", func(t *testing.T) {
		all, more, err := Entries(ctx, dd, EntriesOptions{Ledger: 10, To: -1})
		if err != nil || more {
			t.Fatal(err, more)
		}
		checkGolden(t, "entries-10", doc(all))
		some, more, err := Entries(ctx, dd, EntriesOptions{Ledger: 10, From: 1, To: 3, Limit: 2})
		if err != nil || !more || len(some.Rows) != 2 || some.Rows[0][0] != int64(1) || some.Rows[1][0] != int64(2) {
			t.Fatalf("from 1 to 3 limit 2: rows %v more %v err %v", some.Rows, more, err)
		}
		// A schema ledger's entries are SchemaEntry values, decoded as such.
		checkGolden(t, "entries-schema-40", doc(must(drop(Entries(ctx, dd, EntriesOptions{Ledger: 40, To: -1})))))
		if _, _, err := Entries(ctx, dd, EntriesOptions{Ledger: 999, To: -1}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown ledger: %v, want ErrNotFound", err)
		}
	})
}

func drop(t *report.Table, _ bool, err error) (*report.Table, error) { return t, err }

// TestCheckGolden pins the check document (summary, stats, findings) of a dir
// with a few faults, as the CLI prints it.
func TestCheckGolden(t *testing.T) {
	dir := buildTestDir(t)
	edit(t, dir, func(b *testBuilder) {
		b.deleteLedger(40, 1, true)
		b.deleteLedger(20, 3, false)
		b.node(formats.LedgerPath(60), ledgerMeta(t, 0, 5, true, "application", "pulsar", "component", "schema", "pulsar/schemaId", "public/default/orders"))
		b.entry(60, 0, []byte("x"))
	})
	dd := openRO(t, dir)
	fs, stats, err := Check(context.Background(), dd, CheckOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := doc(report.SummaryTable(fs), stats.Table(), stats.CoverageTable())
	d.Findings = fs
	checkGolden(t, "check", d)
}

// TestInspectionLeavesDirUntouched runs every view and check on a fixture and
// compares every file of the data dir before and after.
func TestInspectionLeavesDirUntouched(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 7, LoseSchemaLedgers: 1, CorruptCRC: true, OrphanLedger: true})
	before := testutil.HashTree(t, dir)
	dd := mustOpen(t, dir)
	ctx := context.Background()
	if _, _, err := Check(ctx, dd, CheckOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Topics(ctx, dd, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := Schemas(ctx, dd, nil); err != nil {
		t.Fatal(err)
	}
	for _, ml := range m.ManagedLedgers {
		if _, err := Ledgers(ctx, dd, topic(t, ml.Topic)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Node(dd, ml.Path); err != nil {
			t.Fatal(err)
		}
		for _, l := range ml.Ledgers {
			if l.Lost == "" && !l.Offloaded && !l.Open {
				if _, _, err := Entries(ctx, dd, EntriesOptions{Ledger: l.ID, To: -1}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
	after := testutil.HashTree(t, dir)
	if !maps.Equal(before, after) {
		t.Fatalf("inspection changed the data dir:\nbefore %v\nafter  %v", before, after)
	}
}

func mustOpen(t *testing.T, dir string) *datadir.DataDir {
	t.Helper()
	dd, err := datadir.Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	return dd
}

// TestSchemasStates shows each state a schema version can be in.
func TestSchemasStates(t *testing.T) {
	dir := buildTestDir(t)
	edit(t, dir, func(b *testBuilder) {
		b.deleteLedger(40, 1, true)                                    // ledger-lost
		if err := b.W.DeleteNode(formats.LedgerPath(41)); err != nil { // node-lost
			t.Fatal(err)
		}
		b.entry(42, 0, []byte{0xff}) // undecodable
	})
	tbl := must(Schemas(context.Background(), openRO(t, dir), nil))
	var states []string
	for _, r := range tbl.Rows {
		states = append(states, r[6].(string))
	}
	want := []string{StateUndecodable, StateLedgerLost, StateNodeLost}
	if !slices.Equal(states, want) {
		t.Fatalf("states %v, want %v", states, want)
	}
}

// TestEntriesSchemaLedger: a schema ledger is known by its node's custom
// metadata or, without a node, by a locator naming it; its entries are decoded
// as SchemaEntry values, and a topic ledger keeps the entry-frame view.
func TestEntriesSchemaLedger(t *testing.T) {
	dir := buildTestDir(t)
	edit(t, dir, func(b *testBuilder) {
		if err := b.W.DeleteNode(formats.LedgerPath(41)); err != nil {
			t.Fatal(err)
		}
		b.entry(42, 1, []byte{0xff})
	})
	dd := openRO(t, dir)
	def41 := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"]}]}`
	tests := []struct {
		name   string
		ledger int64
		table  string
		rows   [][]any
	}{
		{"by locator, no node", 41, "schema_entries", [][]any{
			{int64(0), "public/default/orders", "JSON", false, len(def41), formats.SchemaHash([]byte(def41)), 1, ""},
		}},
		{"by custom metadata, one bad entry", 42, "schema_entries", [][]any{
			{int64(0), "acme/ns/events", "STRING", false, 0, formats.SchemaHash(nil), 0, ""},
			{int64(1), nil, nil, nil, nil, nil, nil, "schema entry: "}, // protobuf's own text follows
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl, _, err := Entries(context.Background(), dd, EntriesOptions{Ledger: tt.ledger, To: -1})
			if err != nil {
				t.Fatal(err)
			}
			if tbl.Name != tt.table || len(tbl.Rows) != len(tt.rows) {
				t.Fatalf("table %q with %d rows %v, want %q with %d", tbl.Name, len(tbl.Rows), tbl.Rows, tt.table, len(tt.rows))
			}
			for i, want := range tt.rows {
				got := tbl.Rows[i]
				for c := range want {
					g, w := report.Cell(got[c]), report.Cell(want[c])
					if c == len(want)-1 && w != "-" { // the error column: its start is ours
						g = g[:min(len(g), len(w))]
					}
					if g != w {
						t.Errorf("row %d column %s: %v, want %v", i, tbl.Columns[c].Key, report.Cell(got[c]), w)
					}
				}
			}
		})
	}
	topicTbl, _, err := Entries(context.Background(), dd, EntriesOptions{Ledger: 10, To: -1})
	if err != nil || topicTbl.Name != "entries" {
		t.Fatalf("topic ledger 10: table %v, %v", topicTbl, err)
	}
}
