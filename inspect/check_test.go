package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// want is one expected finding: kind at location.
type want struct{ kind, location string }

func got(fs []report.Finding) []want {
	out := make([]want, len(fs))
	for i, f := range fs {
		out[i] = want{f.Kind, f.Location}
	}
	return out
}

// rewriteML decodes a managed-ledger node, lets fn change it and stores it back
// in the encoding it had.
func (b *testBuilder) rewriteML(dd *datadir.DataDir, path string, fn func(*mlpb.ManagedLedgerInfo)) {
	b.t.Helper()
	n := must(dd.Metadata.Get(path))
	info, enc, err := formats.DecodeManagedLedgerInfo(n.Value)
	if err != nil {
		b.t.Fatal(err)
	}
	fn(info)
	b.node(path, must(formats.EncodeManagedLedgerInfo(info, enc)))
}

func (b *testBuilder) deleteLedger(id int64, entries int, node bool) {
	b.t.Helper()
	for e := range entries {
		if err := b.W.DeleteEntry(id, int64(e)); err != nil {
			b.t.Fatal(err)
		}
	}
	if node {
		if err := b.W.DeleteNode(formats.LedgerPath(id)); err != nil {
			b.t.Fatal(err)
		}
	}
}

// editDD is edit with access to the open data dir, for read-modify-write faults.
func editDD(t *testing.T, dir string, fn func(dd *datadir.DataDir, b *testBuilder)) {
	t.Helper()
	b := &testBuilder{t: t, DataDirBuilder: testutil.EditDataDir(t, dir)}
	fn(b.DD, b)
	b.Close()
}

func TestCheckCleanDir(t *testing.T) {
	dir := buildTestDir(t)
	dd := openRO(t, dir)
	fs, stats, err := Check(context.Background(), dd, CheckOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 0 {
		t.Fatalf("clean dir: findings %+v", fs)
	}
	// 5+4+3+2+3 topic entries, 1 cursor entry, 3 schema entries.
	if stats.Entries != 21 || stats.TopicEntries != 17 || stats.ManagedLedgers != 3 || stats.Cursors != 1 ||
		stats.SchemaLocators != 2 || stats.SchemaVersions != 3 || stats.LedgerNodes != 10 {
		t.Fatalf("stats %+v", stats)
	}
}

// TestCheckFindings plants one fault per case in the clean dir and checks that
// exactly the planted findings are reported, at the right locations.
func TestCheckFindings(t *testing.T) {
	badSchemaInfo := func(b *testBuilder) []byte {
		info := &schemapb.SchemaInfo{SchemaId: proto.String("acme/ns/events"), User: proto.String("x"),
			Type: schemapb.SchemaInfo_STRING.Enum(), Schema: []byte("not the original"), Timestamp: proto.Int64(1), Deleted: proto.Bool(false)}
		return must(formats.EncodeSchemaEntry(&schemapb.SchemaEntry{SchemaData: must(formats.EncodeSchemaInfo(info))}))
	}
	cases := []struct {
		name  string
		plant func(dd *datadir.DataDir, b *testBuilder)
		want  []want
	}{
		{"schema ledger lost", func(_ *datadir.DataDir, b *testBuilder) { b.deleteLedger(40, 1, true) },
			[]want{{KindSchemaLedgerLost, "schema public/default/orders version 0"}}},
		{"schema entry lost", func(_ *datadir.DataDir, b *testBuilder) { b.deleteLedger(41, 1, false) },
			[]want{{KindSchemaEntryLost, "schema public/default/orders version 1"}}},
		{"schema ledger node lost, entry intact", func(_ *datadir.DataDir, b *testBuilder) {
			if err := b.W.DeleteNode(formats.LedgerPath(41)); err != nil {
				b.t.Fatal(err)
			}
		}, []want{{KindEntriesWithoutNode, "ledger 41"}}},
		{"schema entry undecodable", func(_ *datadir.DataDir, b *testBuilder) { b.entry(41, 0, []byte{0xff, 0xff, 0xff}) },
			[]want{{KindSchemaEntryUndecodable, "schema public/default/orders version 1"}}},
		{"schema hash mismatch", func(_ *datadir.DataDir, b *testBuilder) { b.entry(42, 0, badSchemaInfo(b)) },
			[]want{{KindSchemaHashMismatch, "schema acme/ns/events version 0"}}},
		{"ledger missing", func(_ *datadir.DataDir, b *testBuilder) { b.deleteLedger(11, 4, true) },
			[]want{{KindLedgerMissing, "persistent://public/default/orders ledger 11"}}},
		{"offloaded and deleted ledger is fine", func(dd *datadir.DataDir, b *testBuilder) {
			b.deleteLedger(11, 4, true)
			b.rewriteML(dd, ordersPath, func(info *mlpb.ManagedLedgerInfo) {
				info.LedgerInfo[1].OffloadContext = &mlpb.OffloadContext{Complete: proto.Bool(true), BookkeeperDeleted: proto.Bool(true)}
			})
		}, nil},
		{"offloaded but not deleted ledger missing", func(dd *datadir.DataDir, b *testBuilder) {
			b.deleteLedger(11, 4, true)
			b.rewriteML(dd, ordersPath, func(info *mlpb.ManagedLedgerInfo) {
				info.LedgerInfo[1].OffloadContext = &mlpb.OffloadContext{Complete: proto.Bool(false)}
			})
		}, []want{{KindLedgerMissing, "persistent://public/default/orders ledger 11"}}},
		{"ledger node without entries", func(_ *datadir.DataDir, b *testBuilder) { b.deleteLedger(20, 3, false) },
			[]want{{KindLedgerNodeWithoutEntries, "ledger 20"}}},
		{"ledger entries missing", func(_ *datadir.DataDir, b *testBuilder) {
			if err := b.W.DeleteEntry(10, 2); err != nil {
				b.t.Fatal(err)
			}
		}, []want{{KindLedgerEntriesMissing, "ledger 10"}}},
		{"entries without node", func(_ *datadir.DataDir, b *testBuilder) {
			if err := b.W.DeleteNode(formats.LedgerPath(30)); err != nil {
				b.t.Fatal(err)
			}
		}, []want{{KindEntriesWithoutNode, "ledger 30"}}},
		{"orphan schema ledger", func(_ *datadir.DataDir, b *testBuilder) {
			b.node(formats.LedgerPath(60), ledgerMeta(b.t, 0, 5, true, "application", "pulsar", "component", "schema", "pulsar/schemaId", "public/default/orders"))
			b.entry(60, 0, badSchemaInfo(b))
		}, []want{{KindOrphanLedger, "ledger 60"}}},
		{"orphan managed ledger ledger", func(_ *datadir.DataDir, b *testBuilder) {
			b.node(formats.LedgerPath(61), ledgerMeta(b.t, -1, 0, false, "application", "pulsar", "component", "managed-ledger", "pulsar/managed-ledger", "acme/ns/persistent/events-partition-1"))
		}, []want{{KindOrphanLedger, "ledger 61"}}},
		{"entry crc mismatch", func(dd *datadir.DataDir, b *testBuilder) {
			v := must(dd.Ledgers.Entry(10, 3))
			v[len(v)-1] ^= 0x01 // flip a payload bit
			b.entry(10, 3, v)
		}, []want{{KindEntryCRCMismatch, "ledger 10 entry 3"}}},
		{"entry undecodable", func(_ *datadir.DataDir, b *testBuilder) { b.entry(21, 1, []byte{0, 0, 0, 99, 1}) },
			[]want{{KindEntryUndecodable, "ledger 21 entry 1"}}},
		{"managed ledger node undecodable", func(_ *datadir.DataDir, b *testBuilder) { b.node(events0Path, []byte{0x47, 0x78, 0, 0, 0, 9, 1}) },
			[]want{{KindNodeUndecodable, "node " + events0Path}}},
		{"cursor node undecodable", func(_ *datadir.DataDir, b *testBuilder) { b.node(cursorPath, []byte("garbage\xff")) },
			[]want{{KindNodeUndecodable, "node " + cursorPath}}},
		{"schema locator undecodable", func(_ *datadir.DataDir, b *testBuilder) { b.node(ordersLoc, []byte{0x0a, 0xff}) },
			[]want{{KindNodeUndecodable, "node " + ordersLoc}}},
		{"ledger metadata undecodable", func(_ *datadir.DataDir, b *testBuilder) {
			b.node(formats.LedgerPath(10), []byte("BookieMetadataFormatVersion\t2\n"))
		},
			[]want{{KindNodeUndecodable, "node " + formats.LedgerPath(10)}}},
		{"locator missing required fields", func(_ *datadir.DataDir, b *testBuilder) {
			b.node(eventsLoc, must(proto.MarshalOptions{AllowPartial: true}.Marshal(&schemapb.SchemaLocator{Index: []*schemapb.IndexEntry{{Version: proto.Int64(0)}}})))
		}, []want{{KindNodeUndecodable, "node " + eventsLoc}}},
		{"first entry index missing", func(dd *datadir.DataDir, b *testBuilder) {
			b.rewriteML(dd, ordersPath, func(info *mlpb.ManagedLedgerInfo) {
				for _, li := range info.LedgerInfo {
					li.Properties = nil
				}
			})
			b.rewriteML(dd, events0Path, func(info *mlpb.ManagedLedgerInfo) { info.LedgerInfo[1].Properties = nil })
		}, []want{
			{KindFirstEntryIndexMissing, "persistent://acme/ns/events-partition-0"},
			{KindFirstEntryIndexMissing, "persistent://public/default/orders"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := buildTestDir(t)
			editDD(t, dir, tc.plant)
			fs := runCheck(t, dir, CheckOptions{})
			g := got(fs)
			slices.SortFunc(g, func(a, b want) int { return strings.Compare(a.location, b.location) })
			if !slices.Equal(g, tc.want) {
				t.Fatalf("findings:\n got  %v\n want %v\n all: %+v", g, tc.want, fs)
			}
			for _, f := range fs {
				if f.Severity != kindSeverity[f.Kind] || f.Message == "" || f.Hint == "" {
					t.Errorf("finding %+v: severity, message and hint must be set", f)
				}
			}
		})
	}
}

func TestCheckCoversEveryKind(t *testing.T) {
	// Every kind has a fixed severity; value-truncated is covered by TestCheckTruncatedValues.
	for _, k := range Kinds() {
		if _, ok := kindSeverity[k]; !ok {
			t.Errorf("kind %s has no severity", k)
		}
	}
	if len(kindSeverity) != len(Kinds()) {
		t.Errorf("Kinds() lists %d kinds, severities %d", len(Kinds()), len(kindSeverity))
	}
}

func TestCheckInfoOnlyIsNotActionable(t *testing.T) {
	dir := buildTestDir(t)
	editDD(t, dir, func(dd *datadir.DataDir, b *testBuilder) {
		b.rewriteML(dd, ordersPath, func(info *mlpb.ManagedLedgerInfo) { info.LedgerInfo[0].Properties = nil })
	})
	fs := runCheck(t, dir, CheckOptions{})
	if len(fs) != 1 || fs[0].Severity != report.SeverityInfo || report.Actionable(fs) {
		t.Fatalf("want one info finding, got %+v", fs)
	}
	if !strings.Contains(fs[0].Message, "1 of 2") {
		t.Errorf("message %q should count 1 of 2 ledgers", fs[0].Message)
	}
	// A custom key that no ledger carries: both ledgers lack it.
	fs = runCheck(t, dir, CheckOptions{FirstEntryIndexKey: "kafka.base.offset"})
	if len(fs) != 2 {
		t.Fatalf("custom key: %+v", fs)
	}
}

func TestCheckExtraSources(t *testing.T) {
	dir := buildTestDir(t)
	extra := report.Finding{Kind: "dangling-schema-version", Severity: report.SeverityWarning, Location: "x", Message: "m"}
	var calls int
	opts := CheckOptions{Sources: []FindingSource{func(ctx context.Context, dd *datadir.DataDir) ([]report.Finding, error) {
		calls++
		if _, err := dd.Metadata.Get(ordersPath); err != nil {
			return nil, err
		}
		return []report.Finding{extra}, nil
	}}}
	fs := runCheck(t, dir, opts)
	if calls != 1 || len(fs) != 1 || fs[0] != extra {
		t.Fatalf("calls %d, findings %+v", calls, fs)
	}
	opts.Sources = append(opts.Sources, func(context.Context, *datadir.DataDir) ([]report.Finding, error) {
		return nil, fmt.Errorf("boom")
	})
	if _, _, err := Check(context.Background(), openRO(t, dir), opts, nil); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("source error not returned: %v", err)
	}
}

func TestCheckGarbageNodesNeverPanic(t *testing.T) {
	garbage := [][]byte{nil, {0}, {0x47, 0x78}, {0x47, 0x78, 0xff, 0xff, 0xff, 0xff}, {0x47, 0x78, 0, 0, 0, 2, 8, 3, 0xde, 0xad},
		[]byte("BookieMetadataFormatVersion\t3\n\xff\xff\xff\xff\x0f"), {0x0a, 0x80}, []byte(strings.Repeat("\xff", 64))}
	paths := []string{ordersPath, cursorPath, ordersLoc, formats.LedgerPath(10)}
	for i, g := range garbage {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			dir := buildTestDir(t)
			edit(t, dir, func(b *testBuilder) {
				for _, p := range paths {
					b.node(p, g)
				}
			})
			fs := runCheck(t, dir, CheckOptions{})
			for _, f := range fs {
				if f.Kind != KindNodeUndecodable {
					continue
				}
				if !strings.Contains(f.Message, "does not decode") || f.Path == "" {
					t.Errorf("unclear finding %+v", f)
				}
			}
			// The views show the damage instead of failing.
			dd := openRO(t, dir)
			for _, p := range paths {
				tbl, undecodable, err := Node(dd, p)
				if err != nil {
					t.Errorf("node view %s: %v", p, err)
					continue
				}
				// Garbage either decodes (by chance) or is shown raw with its error.
				if undecodable && tbl.Rows[len(tbl.Rows)-1][0] != "raw" {
					t.Errorf("node view %s: undecodable node without raw bytes: %v", p, tbl.Rows)
				}
			}
			if _, err := Topics(context.Background(), dd, ""); err != nil {
				t.Errorf("topics view: %v", err)
			}
			if _, err := Schemas(context.Background(), dd, nil); err != nil {
				t.Errorf("schemas view: %v", err)
			}
		})
	}
}

// FuzzCheckNode feeds arbitrary bytes to the node classification and decoding of
// check and to the node view's flattening: findings, never panics.
func FuzzCheckNode(f *testing.F) {
	f.Add([]byte{0x47, 0x78, 0, 0, 0, 4, 8, 3, 16, 10, 1, 2})
	f.Add([]byte("BookieMetadataFormatVersion\t3\n\x04\x08\x01\x10\x01"))
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01})
	paths := []string{ordersPath, cursorPath, ordersLoc, formats.LedgerPath(10)}
	f.Fuzz(func(t *testing.T, v []byte) {
		c := fuzzChecker(t, CheckOptions{FirstEntryIndexKey: cluster.FirstEntryIndexKey})
		for _, p := range paths {
			if err := c.node(store.Node{Path: p, Value: v}); err != nil {
				t.Fatal(err)
			}
			if d, err := formats.DecodeNode(p, v); err == nil && d.Message != nil {
				flatten(d.Message.ProtoReflect(), "", func(string, string) {})
			}
		}
		for _, fd := range sinkFindings(t, c) {
			if fd.Kind != KindNodeUndecodable || fd.Path == "" {
				t.Fatalf("unexpected finding %+v", fd)
			}
		}
	})
}

// FuzzEntryRow feeds arbitrary entry bytes to the entries view's row builder,
// to check's entry check and to schema-usage's entry decoder.
func FuzzEntryRow(f *testing.F) {
	f.Add([]byte{0x0e, 0x02, 0, 0, 0, 2, 0x10, 1, 0x0e, 0x01, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 99, 1})
	f.Fuzz(func(t *testing.T, v []byte) {
		var e formats.Entry
		row := entryRow(7, v, &e)
		// Either the entry parsed (its CRC state is known) or the row says why not.
		if row.EntryID != 7 || (row.Error == "") == (row.CRC == "") {
			t.Fatalf("row %+v: want entry 7 with a CRC state or an error, not both", row)
		}
		// One worker of a pass that checks and counts, as check runs it.
		c := fuzzChecker(t, CheckOptions{})
		if err := c.facts.Finish(); err != nil {
			t.Fatal(err)
		}
		p := &entryPass{prog: report.NoProgress{}, check: c, usage: newUsageScan(c.spill, 2)}
		w, err := p.newWorker()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.ledger(7); err != nil {
			t.Fatal(err)
		}
		r, err := w.decode(v)
		w.usage.account([]usageRef{{base: "persistent://t/ns/x", partition: -1}}, Position{LedgerID: 7, EntryID: 0}, v, r, err)
		w.topicEntry(7, 0, v, r, err)
		findings := sinkFindings(t, c)
		// One entry gives at most one finding, at that entry.
		if len(findings) > 1 {
			t.Fatalf("%d findings for one entry: %+v", len(findings), findings)
		}
		for _, fd := range findings {
			if fd.LedgerID == nil || *fd.LedgerID != 7 || fd.EntryID == nil || *fd.EntryID != 0 {
				t.Fatalf("finding not at ledger 7 entry 0: %+v", fd)
			}
		}
		// schema-usage's count takes the entry once, and as bad exactly when
		// check found it bad.
		if tot := w.usage.tot; tot.entries != 1 || tot.bad != int64(len(findings)) {
			t.Fatalf("usage totals %+v, check findings %d", tot, len(findings))
		}
	})
}

// fuzzChecker is a checker of no data dir, for its decoders.
func fuzzChecker(t *testing.T, opts CheckOptions) *checker {
	opts.SpillDir = t.TempDir()
	c, err := newChecker(nil, opts, report.NoProgress{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.spill.Close() })
	return c
}

// sinkFindings are the findings a checker added so far, in order.
func sinkFindings(t *testing.T, c *checker) []report.Finding {
	var out []report.Finding
	err := c.out.sorter.Sorted(context.Background(), func(_, v []byte) error {
		f, err := decodeFinding(v)
		out = append(out, f)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheckCapsEntryFindings: a ledger full of bad entries lists the first
// maxEntryFindingsPerLedger and sums up the rest in one finding.
func TestCheckCapsEntryFindings(t *testing.T) {
	dir := buildTestDir(t)
	const bad = maxEntryFindingsPerLedger + 5
	editDD(t, dir, func(dd *datadir.DataDir, b *testBuilder) {
		b.rewriteML(dd, events1Path, func(info *mlpb.ManagedLedgerInfo) {
			info.LedgerInfo = append(info.LedgerInfo, &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(80), Entries: proto.Int64(bad)})
		})
		b.node(formats.LedgerPath(80), ledgerMeta(t, bad-1, 100, true))
		for e := range int64(bad) {
			b.entry(80, e, []byte{0, 0, 0, 99})
		}
	})
	fs := runCheck(t, dir, CheckOptions{})
	if len(fs) != maxEntryFindingsPerLedger+1 {
		t.Fatalf("%d findings, want %d: %v", len(fs), maxEntryFindingsPerLedger+1, got(fs))
	}
	last := fs[len(fs)-1]
	if last.Kind != KindEntryUndecodable || last.Location != "ledger 80" || !strings.Contains(last.Message, "5 more entries") {
		t.Errorf("summary finding %+v", last)
	}
}

// TestCheckLedgerPresenceKindsAreDistinct plants, in one dir, the three cases of
// docs/formats.md §7 at once: a node without entries, entries without a node,
// and references (a LedgerInfo, an IndexEntry) to ledgers that have neither.
// Each is one finding of its own kind, and no ledger is reported twice.
func TestCheckLedgerPresenceKindsAreDistinct(t *testing.T) {
	dir := buildTestDir(t)
	edit(t, dir, func(b *testBuilder) {
		b.deleteLedger(20, 3, false) // node only
		if err := b.W.DeleteNode(formats.LedgerPath(30)); err != nil {
			t.Fatal(err) // entries only
		}
		b.deleteLedger(11, 4, true) // neither; a LedgerInfo names it
		b.deleteLedger(40, 1, true) // neither; an IndexEntry names it
	})
	fs := runCheck(t, dir, CheckOptions{})
	g := got(fs)
	slices.SortFunc(g, func(a, b want) int { return strings.Compare(a.kind, b.kind) })
	w := []want{
		{"entries-without-node", "ledger 30"},
		{"ledger-missing", "persistent://public/default/orders ledger 11"},
		{"ledger-node-without-entries", "ledger 20"},
		{"schema-ledger-lost", "schema public/default/orders version 0"},
	}
	if !slices.Equal(g, w) {
		t.Fatalf("findings:\n got  %v\n want %v", g, w)
	}
	perLedger := map[int64]int{}
	for _, f := range fs {
		if f.LedgerID == nil {
			t.Fatalf("finding %+v names no ledger", f)
		}
		perLedger[*f.LedgerID]++
	}
	for id, n := range perLedger {
		if n != 1 {
			t.Errorf("ledger %d reported %d times", id, n)
		}
	}
}
