package index

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func generate(t testing.TB, opts fixtures.Options) (*datadir.DataDir, *fixtures.Manifest) {
	t.Helper()
	dir, m := testutil.Fixture(t, opts)
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd.Close() })
	return dd, m
}

func backfill(t testing.TB, dd *datadir.DataDir, opts BackfillOptions) *BackfillResult {
	t.Helper()
	res, err := Backfill(context.Background(), dd, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// snapshot returns every metadata node's bytes.
func snapshot(t testing.TB, dd *datadir.DataDir) map[string][]byte {
	t.Helper()
	return testutil.DumpStore(t, dd).Nodes
}

func findingsOf(res *BackfillResult, kind string) []report.Finding {
	var out []report.Finding
	for _, f := range res.Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

func TestBackfillMatchesFixtureManifest(t *testing.T) {
	dd, m := generate(t, fixtures.Options{Seed: 11, LoseTopicLedger: true, LoseEntriesOnly: true})
	before := snapshot(t, dd)
	res := backfill(t, dd, BackfillOptions{Apply: true, Workers: 3})
	if res.Written == 0 || res.Written != res.Planned || len(res.Runs) == 0 {
		t.Fatalf("planned %d written %d runs %v", res.Planned, res.Written, res.Runs)
	}
	var checked int
	for _, ml := range m.ManagedLedgers {
		info, enc, node := loadInfo(t, dd, ml.Path)
		if enc.String() != ml.Encoding {
			t.Errorf("%s: encoding %s, fixture wrote %s", ml.Path, enc, ml.Encoding)
		}
		if !ml.Indexed {
			if !bytes.Equal(node.Value, before[ml.Path]) {
				t.Errorf("%s: topic is not indexed but its node changed", ml.Path)
			}
			continue
		}
		for i, l := range ml.Ledgers {
			li := info.GetLedgerInfo()[i]
			v, ok := formats.LedgerProperty(li, cluster.FirstEntryIndexKey)
			writable := !l.Offloaded && l.Lost == "" && l.Entries > 0
			switch {
			case writable && (!ok || v != strconv.FormatInt(l.FirstIndex, 10)):
				t.Errorf("%s ledger %d: %s=%q (set %v), manifest first index %d", ml.Path, l.ID, cluster.FirstEntryIndexKey, v, ok, l.FirstIndex)
			case !writable && ok:
				t.Errorf("%s ledger %d (offloaded=%v lost=%q): got %s=%s, want none", ml.Path, l.ID, l.Offloaded, l.Lost, cluster.FirstEntryIndexKey, v)
			}
			if writable {
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no ledger checked")
	}
	// The faults the fixture planted are reported, not guessed.
	var lost, offloaded int
	for _, ml := range m.ManagedLedgers {
		for _, l := range ml.Ledgers {
			if !ml.Indexed {
				continue
			}
			if l.Lost != "" {
				lost++
			}
			if l.Offloaded {
				offloaded++
			}
		}
	}
	got := len(findingsOf(res, KindLostLedger)) + len(findingsOf(res, KindEntriesLost))
	if got != lost {
		t.Errorf("%d lost-ledger findings, fixture lost %d indexed ledgers", got, lost)
	}
	if n := len(findingsOf(res, KindNotInferred)); n != offloaded {
		t.Errorf("%d offloaded-not-inferred findings, fixture offloaded %d first ledgers", n, offloaded)
	}
	if len(findingsOf(res, KindNotIndexed)) == 0 || len(findingsOf(res, KindOpenLedger)) == 0 {
		t.Errorf("want not-indexed and open-ledger findings, got %+v", res.Findings)
	}

	// Idempotent: a second run plans and writes nothing.
	after := snapshot(t, dd)
	again := backfill(t, dd, BackfillOptions{Apply: true})
	if again.Planned != 0 || again.Written != 0 || len(again.Runs) != 0 {
		t.Fatalf("re-run planned %d written %d runs %v", again.Planned, again.Written, again.Runs)
	}
	if !maps.EqualFunc(after, snapshot(t, dd), bytes.Equal) {
		t.Fatal("re-run changed metadata")
	}
}

func TestBackfillAgreesWithGeneratorProperty(t *testing.T) {
	// A fixture generated with the property and one back-filled must agree byte for
	// byte on every ledger the back-fill could compute.
	opts := fixtures.Options{Seed: 5, Topics: 3}
	dd, _ := generate(t, opts)
	backfill(t, dd, BackfillOptions{Apply: true})
	opts.WithFirstEntryIndex = true
	want, m := generate(t, opts)
	for _, ml := range m.ManagedLedgers {
		gotInfo, _, _ := loadInfo(t, dd, ml.Path)
		wantInfo, _, _ := loadInfo(t, want, ml.Path)
		for i, wli := range wantInfo.GetLedgerInfo() {
			gv, gok := formats.LedgerProperty(gotInfo.GetLedgerInfo()[i], cluster.FirstEntryIndexKey)
			wv, _ := formats.LedgerProperty(wli, cluster.FirstEntryIndexKey)
			if gok && gv != wv {
				t.Errorf("%s ledger %d: back-fill %s, generator %s", ml.Path, wli.GetLedgerId(), gv, wv)
			}
		}
	}
	// And back-filling the generator's output changes nothing.
	snap := snapshot(t, want)
	res := backfill(t, want, BackfillOptions{Apply: true, Verify: true})
	if res.Written != 0 || !maps.EqualFunc(snap, snapshot(t, want), bytes.Equal) {
		t.Fatalf("back-fill of a fully indexed fixture wrote %d ledgers", res.Written)
	}
	if n := len(findingsOf(res, KindContinuity)) + len(findingsOf(res, KindMismatch)); n != 0 {
		t.Fatalf("verify of generator output: %d continuity/mismatch findings: %+v", n, res.Findings)
	}
}

func TestBackfillSpecialCases(t *testing.T) {
	u := func(n int) []int { return uniform(n, 3) }
	topics := []tTopic{
		{name: "offloaded-middle", mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(5), offloaded: true}, {batches: u(3)}}},
		{name: "offloaded-twice", mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(2), offloaded: true}, {batches: u(2), offloaded: true}, {batches: u(3)}}},
		{name: "lost", mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(4), lost: "node+entries"}, {batches: u(4), lost: "entries"}, {batches: u(2)}}},
		{name: "no-index-ledger", mlIndex: true, ledgers: []tLedger{{batches: u(4), noIndex: true}, {batches: u(4)}}},
		{name: "not-indexed", ledgers: []tLedger{{batches: u(4), noIndex: true}, {batches: u(4), noIndex: true}}},
		{name: "empty", mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: nil}, {batches: u(4)}}},
		{name: "open", open: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(4)}}},
		{name: "mismatch", mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(4), prop: "999"}, {batches: u(4)}}},
		{name: "invalid", mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(4), prop: "x12"}}},
		{name: "entry0-missing", mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(4), noEntry0: true}}},
		{name: "done", mlIndex: true, ledgers: []tLedger{{batches: u(4), prop: "auto"}, {batches: u(4), prop: "auto"}}},
	}
	dd, truth := buildDir(t, topics)
	before := snapshot(t, dd)
	res := backfill(t, dd, BackfillOptions{Apply: true})

	prop := func(name string, i int) (string, bool) {
		info, _, _ := loadInfo(t, dd, tPath(name))
		return formats.LedgerProperty(info.GetLedgerInfo()[i], cluster.FirstEntryIndexKey)
	}
	want := func(name string, i int) string { return strconv.FormatInt(truth[tPath(name)][i].First, 10) }
	expect := []struct {
		topic  string
		ledger int
		value  string // "" none
	}{
		{"offloaded-middle", 0, want("offloaded-middle", 0)},
		{"offloaded-middle", 1, want("offloaded-middle", 1)}, // inferred from ledger 0's last entry
		{"offloaded-middle", 2, want("offloaded-middle", 2)},
		{"offloaded-twice", 1, want("offloaded-twice", 1)},
		{"offloaded-twice", 2, ""}, // previous ledger is offloaded too
		{"lost", 1, ""},
		{"lost", 2, ""},
		{"lost", 3, want("lost", 3)},
		{"no-index-ledger", 0, ""},
		{"no-index-ledger", 1, want("no-index-ledger", 1)},
		{"not-indexed", 0, ""},
		{"empty", 1, ""},
		{"empty", 2, want("empty", 2)},
		{"open", 1, want("open", 1)},
		{"mismatch", 1, "999"}, // never overwritten without Force
		{"mismatch", 2, want("mismatch", 2)},
		{"invalid", 1, "x12"},
		{"entry0-missing", 1, ""},
	}
	for _, e := range expect {
		v, ok := prop(e.topic, e.ledger)
		if e.value == "" && ok || e.value != "" && v != e.value {
			t.Errorf("%s ledger #%d: %s=%q (set %v), want %q", e.topic, e.ledger, cluster.FirstEntryIndexKey, v, ok, e.value)
		}
	}
	for _, name := range []string{"not-indexed", "done"} {
		if n, _ := dd.Metadata.Get(tPath(name)); !bytes.Equal(n.Value, before[tPath(name)]) {
			t.Errorf("%s: node changed", name)
		}
	}
	for kind, n := range map[string]int{
		KindInferred: 2, KindNotInferred: 1, KindLostLedger: 1, KindEntriesLost: 2, KindNoBrokerIndex: 1,
		KindNotIndexed: 1, KindOpenLedger: 1, KindMismatch: 0, KindInvalid: 1,
	} {
		if got := len(findingsOf(res, kind)); got != n {
			t.Errorf("%d %s findings, want %d: %+v", got, kind, n, res.Findings)
		}
	}
	// The planted 999 sits between 11 and 23: continuity says so without reading it.
	if len(findingsOf(res, KindContinuity)) == 0 {
		t.Errorf("no continuity finding for the planted value: %+v", res.Findings)
	}
	for reason, n := range map[string]int64{SkipEmpty: 1, SkipNotIndexed: 2, SkipLost: 1, SkipEntriesLost: 1,
		SkipEntry0Missing: 1, SkipOffloaded: 1, SkipNoBrokerIndex: 1} {
		if res.Skipped[reason] != n {
			t.Errorf("skipped[%s] = %d, want %d (all: %v)", reason, res.Skipped[reason], n, res.Skipped)
		}
	}

	// Verify reads the planted values and reports them; Force rewrites them.
	res = backfill(t, dd, BackfillOptions{Apply: true, Verify: true})
	if len(findingsOf(res, KindMismatch)) != 1 || len(findingsOf(res, KindInvalid)) != 1 || res.Written != 0 {
		t.Fatalf("verify: %d mismatch, %d invalid findings, %d written", len(findingsOf(res, KindMismatch)), len(findingsOf(res, KindInvalid)), res.Written)
	}
	res = backfill(t, dd, BackfillOptions{Apply: true, Force: true})
	if res.Written != 2 {
		t.Fatalf("force wrote %d ledgers, want 2", res.Written)
	}
	for _, e := range [][2]any{{"mismatch", 1}, {"invalid", 1}} {
		if v, _ := prop(e[0].(string), e[1].(int)); v != want(e[0].(string), e[1].(int)) {
			t.Errorf("%s after force: %s, want %s", e[0], v, want(e[0].(string), e[1].(int)))
		}
	}
	res = backfill(t, dd, BackfillOptions{Apply: true, Verify: true})
	if n := len(findingsOf(res, KindContinuity)) + len(findingsOf(res, KindMismatch)); n != 0 {
		t.Fatalf("after force, verify still finds %d problems: %+v", n, res.Findings)
	}
}

func TestBackfillVerifyReportsContinuityBreak(t *testing.T) {
	// Ledger 1's value is planted one too high: consistent with its own count but
	// not with ledger 0's last entry. Only --verify can see it.
	dd, truth := buildDir(t, []tTopic{{name: "gap", mlIndex: true, ledgers: []tLedger{
		{batches: uniform(4, 2), prop: "auto"}, {batches: uniform(4, 2), prop: "9"}, {batches: uniform(4, 2), prop: "auto"},
	}}})
	if truth[tPath("gap")][1].First != 8 {
		t.Fatalf("test setup: ledger 1 starts at %d", truth[tPath("gap")][1].First)
	}
	res := backfill(t, dd, BackfillOptions{})
	if n := len(findingsOf(res, KindContinuity)); n != 0 {
		t.Fatalf("without verify: %d continuity findings", n)
	}
	res = backfill(t, dd, BackfillOptions{Verify: true})
	if n := len(findingsOf(res, KindContinuity)); n == 0 {
		t.Fatalf("verify missed the planted break: %+v", res.Findings)
	}
}

func TestBackfillKeepsEncodingAndUnknownFields(t *testing.T) {
	encs := []formats.Encoding{formats.Plain, {Compressed: true, Codec: mlpb.CompressionType_NONE}}
	for c := mlpb.CompressionType_LZ4; c <= mlpb.CompressionType_SNAPPY; c++ {
		encs = append(encs, formats.Encoding{Compressed: true, Codec: c})
	}
	var topics []tTopic
	for _, enc := range encs {
		topics = append(topics, tTopic{name: "enc-" + enc.String(), enc: enc, mlIndex: true,
			ledgers: []tLedger{{batches: uniform(3, 2)}, {batches: uniform(3, 2)}}})
	}
	dd, _ := buildDir(t, topics)
	// Add unknown fields (a future LedgerInfo field 99, ML field 98) to every node.
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	mlUnknown := protowire.AppendVarint(protowire.AppendTag(nil, 98, protowire.VarintType), 8)
	w := badgerdir.NewBulkWriter(dd.Metadata, dd.Ledgers)
	for _, tt := range topics {
		info, enc, _ := loadInfo(t, dd, tPath(tt.name))
		for _, li := range info.LedgerInfo {
			li.ProtoReflect().SetUnknown(unknown)
		}
		info.ProtoReflect().SetUnknown(mlUnknown)
		v, err := formats.EncodeManagedLedgerInfo(info, enc)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.PutNode(tPath(tt.name), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	res := backfill(t, dd, BackfillOptions{Apply: true})
	if res.Written != int64(2*len(topics)) {
		t.Fatalf("wrote %d ledgers, want %d", res.Written, 2*len(topics))
	}
	for i, tt := range topics {
		info, enc, _ := loadInfo(t, dd, tPath(tt.name))
		if enc != encs[i] {
			t.Errorf("%s: encoding now %s", tt.name, enc)
		}
		if !bytes.Equal(info.ProtoReflect().GetUnknown(), mlUnknown) {
			t.Errorf("%s: ML unknown fields lost", tt.name)
		}
		for _, li := range info.LedgerInfo {
			if !bytes.Equal(li.ProtoReflect().GetUnknown(), unknown) {
				t.Errorf("%s ledger %d: unknown fields lost", tt.name, li.GetLedgerId())
			}
			if _, ok := formats.LedgerProperty(li, cluster.FirstEntryIndexKey); !ok {
				t.Errorf("%s ledger %d: no property", tt.name, li.GetLedgerId())
			}
		}
	}
}

func TestBackfillBatchesAreUndoableRuns(t *testing.T) {
	var topics []tTopic
	for i := range 5 {
		topics = append(topics, tTopic{name: "t" + strconv.Itoa(i), mlIndex: true,
			ledgers: []tLedger{{batches: uniform(3, 2)}, {batches: uniform(2, 1)}}})
	}
	dd, _ := buildDir(t, topics)
	before := snapshot(t, dd)
	res := backfill(t, dd, BackfillOptions{Apply: true, BatchTopics: 2, Key: "kafka.base.offset"})
	if len(res.Runs) != 3 || res.Written != 10 {
		t.Fatalf("runs %v written %d, want 3 runs and 10 ledgers", res.Runs, res.Written)
	}
	info, _, _ := loadInfo(t, dd, tPath("t0"))
	if v, ok := formats.LedgerProperty(info.LedgerInfo[1], "kafka.base.offset"); !ok || v != "6" {
		t.Fatalf("custom key: %q %v, want 6", v, ok)
	}
	runs, err := mutate.List(mutate.JournalDir(dd.Path))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].Command != "index backfill" || runs[0].State != mutate.StateCommitted {
		t.Fatalf("journal: %+v", runs)
	}
	eng, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(res.Runs) - 1; i >= 0; i-- {
		if _, err := eng.Undo(context.Background(), res.Runs[i], mutate.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if !maps.EqualFunc(before, snapshot(t, dd), bytes.Equal) {
		t.Fatal("undoing every batch run did not restore the metadata")
	}
}

func TestBackfillDryRunWritesNothing(t *testing.T) {
	dd, _ := buildDir(t, []tTopic{{name: "a", mlIndex: true, ledgers: []tLedger{{batches: uniform(3, 2)}, {batches: uniform(2, 1)}}}})
	before := snapshot(t, dd)
	var planned []PlannedLedger
	res := backfill(t, dd, BackfillOptions{OnPlanned: func(p PlannedLedger) { planned = append(planned, p) }})
	if res.Planned != 2 || res.Written != 0 || len(planned) != 2 || planned[1].Value != 6 || planned[1].Source != SourceEntry0 {
		t.Fatalf("planned %d written %d rows %+v", res.Planned, res.Written, planned)
	}
	if !maps.EqualFunc(before, snapshot(t, dd), bytes.Equal) {
		t.Fatal("dry run changed metadata")
	}
}

func TestBackfillCancelledWritesNothing(t *testing.T) {
	dd, _ := buildDir(t, []tTopic{{name: "a", mlIndex: true, ledgers: []tLedger{{batches: uniform(3, 2)}}}})
	before := snapshot(t, dd)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Backfill(ctx, dd, BackfillOptions{Apply: true})
	if err == nil || res == nil || !res.Interrupted {
		t.Fatalf("cancelled back-fill: res %+v err %v", res, err)
	}
	if !maps.EqualFunc(before, snapshot(t, dd), bytes.Equal) {
		t.Fatal("cancelled back-fill changed metadata")
	}
}

func TestBackfillSelectedPaths(t *testing.T) {
	dd, _ := buildDir(t, []tTopic{
		{name: "a", mlIndex: true, ledgers: []tLedger{{batches: uniform(3, 2)}}},
		{name: "b", mlIndex: true, ledgers: []tLedger{{batches: uniform(3, 2)}}},
	})
	res := backfill(t, dd, BackfillOptions{Apply: true, Paths: []string{tPath("b")}})
	if len(res.Topics) != 1 || res.Written != 1 {
		t.Fatalf("topics %+v", res.Topics)
	}
	info, _, _ := loadInfo(t, dd, tPath("a"))
	if _, ok := formats.LedgerProperty(info.LedgerInfo[0], cluster.FirstEntryIndexKey); ok {
		t.Fatal("topic a was not selected but was written")
	}
}

func TestBackfillBackupAndRate(t *testing.T) {
	dd, _ := buildDir(t, []tTopic{
		{name: "a", mlIndex: true, ledgers: []tLedger{{batches: uniform(3, 2)}, {batches: uniform(3, 2)}}},
		{name: "b", mlIndex: true, ledgers: []tLedger{{batches: uniform(3, 2)}}},
	})
	backup := filepath.Join(t.TempDir(), "meta.bak")
	// A generous rate still goes through the token bucket for every ledger.
	res := backfill(t, dd, BackfillOptions{Apply: true, Backup: backup, BatchTopics: 1, Rate: 10000, Workers: 2})
	if res.Written != 3 || len(res.Runs) != 2 {
		t.Fatalf("written %d in %d runs", res.Written, len(res.Runs))
	}
	st, err := os.Stat(backup)
	if err != nil || st.Size() == 0 {
		t.Fatalf("backup: %v", err)
	}
}

func TestLimiterStopsOnCancel(t *testing.T) {
	l := newLimiter(0.001, 1) // one token, then one every 1000 s
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.wait(ctx); err != nil {
		t.Fatalf("first token: %v", err)
	}
	cancel()
	if err := l.wait(ctx); err == nil {
		t.Fatal("wait without a token returned nil after cancel")
	}
	if newLimiter(0, 1) != nil {
		t.Fatal("rate 0 must mean no limiter")
	}
}

func TestBackfillDoesNotInferAcrossMissingTail(t *testing.T) {
	// Ledger 0 says 4 entries but the store lost its last one: its stored last
	// index is not where ledger 1 starts, so ledger 1 must not be inferred from it.
	dd, _ := buildDir(t, []tTopic{{name: "tail", mlIndex: true, ledgers: []tLedger{
		{batches: uniform(4, 2), dropTail: 1}, {batches: uniform(3, 2), offloaded: true}, {batches: uniform(3, 2)},
	}}})
	for _, verify := range []bool{false, true} {
		res := backfill(t, dd, BackfillOptions{Verify: verify, OnPlanned: func(p PlannedLedger) {
			if p.Source == SourceInferred {
				t.Errorf("verify=%v: inferred %s %d for ledger %d from a ledger whose tail is missing", verify, cluster.FirstEntryIndexKey, p.Value, p.LedgerID)
			}
		}})
		if len(findingsOf(res, KindNotInferred)) != 1 || res.Skipped[SkipOffloaded] != 1 {
			t.Errorf("verify=%v: want one not-inferred finding, got skipped %v findings %+v", verify, res.Skipped, res.Findings)
		}
	}
}

func TestBackfillOffloadedInvalidNeedsForce(t *testing.T) {
	// An offloaded ledger's invalid value is, like any existing value, replaced only with Force.
	dd, truth := buildDir(t, []tTopic{{name: "offinv", mlIndex: true, ledgers: []tLedger{
		{batches: uniform(4, 2)}, {batches: uniform(3, 2), offloaded: true, prop: "x"}, {batches: uniform(3, 2)},
	}}})
	prop := func() string {
		info, _, _ := loadInfo(t, dd, tPath("offinv"))
		v, _ := formats.LedgerProperty(info.GetLedgerInfo()[1], cluster.FirstEntryIndexKey)
		return v
	}
	res := backfill(t, dd, BackfillOptions{Apply: true})
	if v := prop(); v != "x" {
		t.Fatalf("without force the invalid value became %q", v)
	}
	if len(findingsOf(res, KindInvalid)) != 1 || res.Skipped[SkipInvalid] != 1 {
		t.Errorf("want one invalid finding and skip, got skipped %v findings %+v", res.Skipped, res.Findings)
	}
	backfill(t, dd, BackfillOptions{Apply: true, Force: true})
	if v, want := prop(), strconv.FormatInt(truth[tPath("offinv")][1].First, 10); v != want {
		t.Fatalf("with force: %q, want %q", v, want)
	}
}

func TestBackfillCorruptNewestEntryDoesNotHideTopic(t *testing.T) {
	// No ML "index" property: whether the topic is indexed comes from the newest
	// ledger's entry 0. That entry being corrupt must be reported, not make the
	// whole topic look unindexed.
	dd, truth := buildDir(t, []tTopic{{name: "corrupt", ledgers: []tLedger{
		{batches: uniform(3, 2)}, {batches: uniform(3, 2)},
	}}})
	w := badgerdir.NewBulkWriter(dd.Metadata, dd.Ledgers)
	if err := w.PutEntry(truth[tPath("corrupt")][1].ID, 0, []byte{0x0e, 0x02, 0xff}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	res := backfill(t, dd, BackfillOptions{})
	if len(findingsOf(res, KindNotIndexed)) != 0 || len(findingsOf(res, KindCorruptEntry)) != 1 || res.Planned != 1 {
		t.Fatalf("planned %d, skipped %v, findings %+v", res.Planned, res.Skipped, res.Findings)
	}
}

func TestBackfillVerifyMissingTailIsNotAContinuityBreak(t *testing.T) {
	// Ledger 0's last stored entry is not its last entry (the tail is lost), so
	// its stored last index says nothing about where ledger 1 starts.
	dd, _ := buildDir(t, []tTopic{{name: "tailv", mlIndex: true, ledgers: []tLedger{
		{batches: uniform(4, 2), dropTail: 1, prop: "auto"}, {batches: uniform(3, 2), prop: "auto"},
	}}})
	res := backfill(t, dd, BackfillOptions{Verify: true})
	if n := len(findingsOf(res, KindContinuity)); n != 0 {
		t.Fatalf("%d continuity findings for correct values: %+v", n, res.Findings)
	}
}

// The open last ledger's count is what the store holds; back-fill looks it up
// only when entry 0 is not there. Every case plans as with the count known.
func TestBackfillOpenLedgerCount(t *testing.T) {
	u := func(n int) []int { return uniform(n, 2) }
	topics := []tTopic{
		{name: "open-entries", open: true, mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(4)}}},
		{name: "open-empty", open: true, mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: nil}}},
		{name: "open-entry0-missing", open: true, mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(4), noEntry0: true}}},
		{name: "open-offloaded", open: true, mlIndex: true, ledgers: []tLedger{{batches: u(4)}, {batches: u(3), offloaded: true}}},
	}
	dd, truth := buildDir(t, topics)
	res := backfill(t, dd, BackfillOptions{Apply: true})
	for _, c := range []struct {
		topic  string
		ledger int
		set    bool
	}{
		{"open-entries", 1, true}, {"open-empty", 0, true}, {"open-empty", 1, false},
		{"open-entry0-missing", 1, false}, {"open-offloaded", 1, false},
	} {
		info, _, _ := loadInfo(t, dd, tPath(c.topic))
		v, ok := formats.LedgerProperty(info.GetLedgerInfo()[c.ledger], cluster.FirstEntryIndexKey)
		want := strconv.FormatInt(truth[tPath(c.topic)][c.ledger].First, 10)
		if ok != c.set || ok && v != want {
			t.Errorf("%s ledger #%d: %s=%q (set %v), want set %v (%s)", c.topic, c.ledger, cluster.FirstEntryIndexKey, v, ok, c.set, want)
		}
	}
	for reason, n := range map[string]int64{SkipEmpty: 2, SkipEntry0Missing: 1} {
		if res.Skipped[reason] != n {
			t.Errorf("skipped[%s] = %d, want %d (all: %v)", reason, res.Skipped[reason], n, res.Skipped)
		}
	}
	if len(res.Skipped) != 2 {
		t.Errorf("skipped %v, want only empty and entry0-missing", res.Skipped)
	}
	for kind, n := range map[string]int{KindOpenLedger: 1, KindEntriesLost: 1, KindLostLedger: 0, KindNotInferred: 0} {
		if got := len(findingsOf(res, kind)); got != n {
			t.Errorf("%d %s findings, want %d: %+v", got, kind, n, res.Findings)
		}
	}
	if res.Planned != 5 || res.Written != 5 { // ledger 0 of each topic and the open one with entries
		t.Errorf("planned %d written %d, want 5 and 5", res.Planned, res.Written)
	}
}

// RowLimit bounds what the result lists, not what is done: the same cluster
// back-filled with and without a limit writes the same bytes and counts the same
// totals, and the limited result lists the first topics and findings of each kind
// and counts the rest.
func TestBackfillRowLimitBoundsTheResultOnly(t *testing.T) {
	opts := fixtures.Options{Seed: 11, Topics: 20}
	const limit = 3
	ddAll, _ := generate(t, opts)
	ddLim, _ := generate(t, opts)
	all := backfill(t, ddAll, BackfillOptions{Apply: true, BatchTopics: 4, RowLimit: -1})
	lim := backfill(t, ddLim, BackfillOptions{Apply: true, BatchTopics: 4, RowLimit: limit})

	if len(all.Topics) <= limit || len(findingsOf(all, KindOpenLedger)) <= limit {
		t.Fatalf("fixture too small for the test: %d topics with work, %d open-ledger findings", len(all.Topics), len(findingsOf(all, KindOpenLedger)))
	}
	type totals struct {
		topics, complete, written, ledgers, had, planned, writtenLedgers int64
		runs                                                             int
		skipped                                                          map[string]int64
	}
	of := func(r *BackfillResult) totals {
		return totals{r.TopicCount, r.TopicsComplete, r.TopicsWritten, r.Ledgers, r.Had, r.Planned, r.Written, len(r.Runs), r.Skipped}
	}
	if a, l := of(all), of(lim); !reflect.DeepEqual(a, l) {
		t.Fatalf("totals differ: without a limit %+v, with %+v", a, l)
	}
	if all.TopicCount != all.TopicsComplete+int64(len(all.Topics)) || all.TopicsNotListed != 0 || len(all.FindingsNotListed) != 0 {
		t.Fatalf("without a limit: %d topics = %d complete + %d listed, %d not listed, findings not listed %v",
			all.TopicCount, all.TopicsComplete, len(all.Topics), all.TopicsNotListed, all.FindingsNotListed)
	}
	written := 0
	for _, tr := range all.Topics {
		if tr.Written > 0 {
			written++
		}
	}
	if all.TopicsWritten != int64(written) || written == 0 {
		t.Fatalf("%d topics written, the rows say %d", all.TopicsWritten, written)
	}
	if len(lim.Topics) != limit || lim.TopicsNotListed != int64(len(all.Topics)-limit) {
		t.Fatalf("with limit %d: %d topics listed, %d not listed; want %d and %d", limit, len(lim.Topics), lim.TopicsNotListed, limit, len(all.Topics)-limit)
	}
	for i, got := range lim.Topics {
		want := all.Topics[i]
		if (got.RunID == "") != (got.Written == 0) {
			t.Errorf("listed topic %s: written %d, run %q", got.Topic, got.Written, got.RunID)
		}
		got.RunID, want.RunID = "", ""
		if got != want {
			t.Errorf("listed topic %d = %+v, want %+v", i, got, want)
		}
	}
	kinds := map[string]int{}
	for _, f := range all.Findings {
		kinds[f.Kind]++
	}
	for kind, n := range kinds {
		listed := min(n, limit)
		if got := len(findingsOf(lim, kind)); got != listed || lim.FindingsNotListed[kind] != int64(n-listed) {
			t.Errorf("%s: %d listed and %d not, want %d and %d", kind, got, lim.FindingsNotListed[kind], listed, n-listed)
		}
	}
	if a, l := snapshot(t, ddAll), snapshot(t, ddLim); !maps.EqualFunc(a, l, bytes.Equal) {
		t.Fatal("the limit changed what was written")
	}
}
