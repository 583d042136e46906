package inspect

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// everyFault is a fixture with every fault the generator makes, spread over
// enough topics that each of four shards gets some.
var everyFault = fixtures.Options{Seed: 31, Topics: 24, LedgersPerTopic: 3, EntriesPerLedger: 4,
	LoseSchemaLedgers: 3, LoseSchemaEntries: 2, LoseTopicLedger: true, LoseEntriesOnly: true,
	OrphanLedger: true, CorruptCRC: true, DeleteSchemaHistory: 1, ResetSchemaHistory: 1, RustProducers: true}

// TestShardsMergeToTheWholeCheck: n sharded checks, merged, give the findings
// of one check in its order and its stats and coverage rows, and no finding is
// reported by two shards.
func TestShardsMergeToTheWholeCheck(t *testing.T) {
	dir, m := testutil.Fixture(t, everyFault)
	damageEveryLayer(t, dir, m)
	dd := openRO(t, dir)
	ctx := context.Background()
	opts := CheckOptions{SchemaUsage: true}
	want, wantStats, err := Check(ctx, dd, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, f := range want {
		kinds[f.Kind] = true
	}
	t.Logf("%d findings of %d kinds", len(want), len(kinds))
	for _, k := range []string{KindNodeUndecodable, KindEntriesWithoutNode, KindOrphanLedger, KindEntryCRCMismatch} {
		if !kinds[k] {
			t.Errorf("the fixture gives no %s finding", k)
		}
	}
	if len(kinds) < 10 {
		t.Fatalf("the fixture gives only the kinds %v", kinds)
	}
	for _, n := range []int{1, 2, 4, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var all []report.Finding
			var stats []*CheckStats
			for i := range n {
				o := opts
				o.Shard = cluster.Shard{I: i, N: n}
				fs, st, err := Check(ctx, dd, o, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					if f.Order == "" {
						t.Fatalf("shard %d/%d: finding without an order: %+v", i, n, f)
					}
				}
				if n == 4 && len(fs) == 0 {
					t.Errorf("shard %d/4 found nothing: the test does not cut the faults", i)
				}
				all = append(all, fs...)
				stats = append(stats, st)
			}
			MergeShardFindings(all)
			if !reflect.DeepEqual(all, want) {
				t.Errorf("merged %d findings differ from the whole check's %d", len(all), len(want))
				for i := range max(len(all), len(want)) {
					var g, w report.Finding
					if i < len(all) {
						g = all[i]
					}
					if i < len(want) {
						w = want[i]
					}
					if !reflect.DeepEqual(g, w) {
						t.Logf("%d: got  %s %s\n   want %s %s", i, g.Kind, g.Location, w.Kind, w.Location)
					}
				}
			}
			got, err := MergeShardStats(stats)
			if err != nil {
				t.Fatal(err)
			}
			got.Fingerprint = ""
			if !reflect.DeepEqual(got, wantStats) {
				t.Errorf("merged stats\n %+v\nwant\n %+v", got, wantStats)
			}
		})
	}
}

// damageEveryLayer adds to a fixture what the generator does not make:
// undecodable managed-ledger, cursor, schema-locator and ledger nodes of topics
// and ledgers spread over the shards, entries without a ledger node, and
// managed ledgers that name another topic's ledgers (a shard reads ledgers it
// does not own).
func damageEveryLayer(t *testing.T, dir string, m *fixtures.Manifest) {
	t.Helper()
	b := testutil.EditDataDir(t, dir)
	garbage := []byte{0x08, 0xff, 0xff, 0x12, 0x99}
	for i, ml := range m.ManagedLedgers {
		switch i % 9 {
		case 1:
			b.Node(ml.Path, garbage)
		case 2:
			if len(ml.Cursors) > 0 {
				b.Node(ml.Cursors[0].Path, garbage)
			}
		case 3:
			v, err := b.DD.Metadata.Get(ml.Path)
			if err != nil {
				t.Fatal(err)
			}
			b.Node(ml.Path+"-copy", v.Value) // the same ledgers, another topic
		case 4:
			if len(ml.Ledgers) > 1 {
				b.Node(ml.Ledgers[0].NodePath, garbage)
			}
		}
	}
	for i, sc := range m.Schemas {
		if i%4 == 1 {
			b.Node(sc.LocatorPath, garbage)
		}
	}
	for id := int64(900_000); id < 900_040; id += 7 {
		for e := range int64(3) {
			b.Entry(id, e, []byte("not a ledger anyone knows"))
		}
	}
	b.Close()
}

// TestMergeRefusesOtherMetadata: shards that walked different metadata do not merge.
func TestMergeRefusesOtherMetadata(t *testing.T) {
	a := &CheckStats{Fingerprint: "1", Nodes: 5}
	for _, b := range []*CheckStats{{Fingerprint: "2", Nodes: 5}, {Fingerprint: "1", Nodes: 6}} {
		if _, err := MergeShardStats([]*CheckStats{a, b}); err == nil {
			t.Errorf("%+v and %+v merged", a, b)
		}
	}
}
