package inspect

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/schemaid"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func usageOpen(t testing.TB, dir string, readOnly bool) *datadir.DataDir {
	t.Helper()
	dd, err := datadir.Open(dir, store.Options{ReadOnly: readOnly, NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd.Close() })
	return dd
}

func usageRun(t testing.TB, dir string, opts UsageOptions) *UsageReport {
	t.Helper()
	dd := usageOpen(t, dir, true)
	r, err := SchemaUsage(context.Background(), dd, opts, report.NoProgress{})
	if err != nil {
		t.Fatal(err)
	}
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
	return r
}

// usageLine is one schema reference in a form both the manifest and the report give.
type usageLine struct {
	field, hex, id                string
	messages, entries             int64
	first, last                   Position
	firstPublishMs, lastPublishMs uint64
}

// wantUsage is what the generator says it wrote, per base topic.
func wantUsage(m *fixtures.Manifest) map[string][]usageLine {
	out := map[string][]usageLine{}
	for _, tu := range m.Topics {
		var ls []usageLine
		for _, u := range tu.Usage {
			ls = append(ls, usageLine{field: u.Field, hex: u.Hex, id: u.ID, messages: u.Messages, entries: u.Entries,
				first: u.First.Position, last: u.Last.Position,
				firstPublishMs: u.FirstPublishTime, lastPublishMs: u.LastPublishTime})
		}
		out[tu.Topic] = ls
	}
	return out
}

// gotUsage is the report in the same form; messages without a schema reference
// are left out, as the manifest does not count them.
func gotUsage(r *UsageReport) map[string][]usageLine {
	out := map[string][]usageLine{}
	for _, tu := range r.Topics {
		var ls []usageLine
		for _, u := range tu.Uses {
			if u.Status == UseNoSchema {
				continue
			}
			ls = append(ls, usageLine{field: u.Field.String(), hex: hex.EncodeToString(u.ID.Raw), id: u.ID.String(),
				messages: u.Messages, entries: u.Entries, first: u.First, last: u.Last,
				firstPublishMs: u.FirstPublishMs, lastPublishMs: u.LastPublishMs})
		}
		out[tu.Topic] = ls
	}
	return out
}

func compareUsage(t *testing.T, got, want map[string][]usageLine) {
	t.Helper()
	for topic, w := range want {
		g, ok := got[topic]
		if !ok {
			t.Errorf("topic %s: not in the report", topic)
			continue
		}
		gm := map[string]usageLine{}
		for _, l := range g {
			gm[l.field+"/"+l.hex] = l
		}
		for _, wl := range w {
			gl, ok := gm[wl.field+"/"+wl.hex]
			if !ok {
				t.Errorf("topic %s: %s %s (%s) not reported", topic, wl.field, wl.id, wl.hex)
				continue
			}
			if gl != wl {
				t.Errorf("topic %s %s:\n got %+v\nwant %+v", topic, wl.id, gl, wl)
			}
			delete(gm, wl.field+"/"+wl.hex)
		}
		for _, l := range gm {
			t.Errorf("topic %s: reported %s %s the generator never wrote", topic, l.field, l.id)
		}
	}
	for topic, g := range got {
		if _, ok := want[topic]; !ok && len(g) > 0 {
			t.Errorf("topic %s: reported, but the generator wrote no schema usage for it", topic)
		}
	}
}

func findingsOf(fs []report.Finding, kind string) []report.Finding {
	var out []report.Finding
	for _, f := range fs {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

func TestSchemaUsageMatchesManifest(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 7})
	want := wantUsage(m)
	if len(want) == 0 {
		t.Fatal("the manifest records no schema usage")
	}
	var reports []*UsageReport
	for _, workers := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			r := usageRun(t, dir, UsageOptions{Workers: workers})
			compareUsage(t, gotUsage(r), want)
			if r.BadEntries != 0 {
				t.Errorf("clean fixture: %d bad entries", r.BadEntries)
			}
			if a := report.Actionable(r.Findings); a {
				t.Errorf("clean fixture has actionable findings: %+v", r.Findings)
			}
			// Every registry version used has its count for the repair feature.
			for _, tu := range m.Topics {
				for _, u := range tu.Usage {
					if u.Version == nil {
						continue
					}
					if n := r.MessagesNeeding(tu.SchemaKey, *u.Version); n != u.Messages {
						t.Errorf("MessagesNeeding(%s, %d) = %d, want %d", tu.SchemaKey, *u.Version, n, u.Messages)
					}
					var n int64
					r.TopicUses(tu.Topic, *u.Version, func(su SchemaUse) { n += su.Messages })
					if n != u.Messages {
						t.Errorf("TopicUses(%s, %d): %d messages, want %d", tu.Topic, *u.Version, n, u.Messages)
					}
				}
			}
			reports = append(reports, r)
		})
	}
	// Parallel decoding must not change a single number.
	for i := 1; i < len(reports); i++ {
		if !reflect.DeepEqual(reports[0], reports[i]) {
			t.Errorf("report with %d workers differs from the one with 1", []int{1, 2, 5}[i])
		}
	}
}

// One info finding per topic and external id; registry versions are checked.
func TestSchemaUsageExternalIDsAreInfo(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 3})
	r := usageRun(t, dir, UsageOptions{})
	wantExt := 0
	for _, tu := range m.Topics {
		for _, u := range tu.Usage {
			if u.Field == "schema_id" {
				wantExt++
			}
		}
	}
	if wantExt == 0 {
		t.Fatal("fixture writes no external ids")
	}
	got := findingsOf(r.Findings, KindSchemaRefUnchecked)
	if len(got) != wantExt {
		t.Errorf("%d %s findings, want one per topic and id: %d", len(got), KindSchemaRefUnchecked, wantExt)
	}
	seen := map[string]bool{}
	for _, f := range got {
		if f.Severity != report.SeverityInfo {
			t.Errorf("%s has severity %s, want info", f.Location, f.Severity)
		}
		if seen[f.Location] {
			t.Errorf("duplicate finding for %s", f.Location)
		}
		seen[f.Location] = true
	}
	for _, tu := range r.Topics {
		for _, u := range tu.Uses {
			wantStatus := UseOK
			switch {
			case u.Status == UseNoSchema:
				continue
			case u.Field == schemaid.FieldSchemaID:
				wantStatus = UseUnchecked
			}
			if u.Status != wantStatus {
				t.Errorf("%s %s: status %s, want %s", tu.Topic, u.ID, u.Status, wantStatus)
			}
		}
	}
}

// Key/value schema ids in both layouts are counted as key/value ids, each
// layout under its own bytes, and reported as external ids: pulsar-rs's layout
// (no value length) is not "bytes that fit no layout". Check's pass counts
// them the same.
func TestSchemaUsageCountsBothKVLayouts(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 7, RustProducers: true})
	r := usageRun(t, dir, UsageOptions{Workers: 2})
	compareUsage(t, gotUsage(r), wantUsage(m))
	messages := map[schemaid.KVLayout]int64{}
	for _, tu := range r.Topics {
		for _, u := range tu.Uses {
			if u.ID.Kind == schemaid.KindUnknown {
				t.Errorf("%s: %s read as unknown", tu.Topic, u.ID)
			}
			if u.ID.Kind == schemaid.KindExternalKV {
				messages[u.ID.Layout] += u.Messages
			}
		}
	}
	if messages[schemaid.LayoutJava] == 0 || messages[schemaid.LayoutRust] == 0 {
		t.Fatalf("messages per key/value layout %v: want both java and rust", messages)
	}
	var rustFindings int
	for _, f := range findingsOf(r.Findings, KindSchemaRefUnchecked) {
		if strings.Contains(f.Message, "fit no known") {
			t.Errorf("%s: %s", f.Location, f.Message)
		}
		if strings.Contains(f.Location, "layout=rust") {
			rustFindings++
		}
	}
	if rustFindings != 2 {
		t.Errorf("%d unchecked-id findings for Rust-layout ids, want 2 (the fixture's two)", rustFindings)
	}

	dd := usageOpen(t, dir, true)
	var fromCheck *UsageReport
	if _, _, err := Check(context.Background(), dd, CheckOptions{SchemaUsage: true,
		OnUsage: func(u *UsageRun) {
			var err error
			if fromCheck, err = u.Report(context.Background()); err != nil {
				t.Error(err)
			}
		}}, report.NoProgress{}); err != nil {
		t.Fatal(err)
	}
	if fromCheck == nil {
		t.Fatal("check made no usage report")
	}
	compareUsage(t, gotUsage(fromCheck), wantUsage(m))
}

// Without RustProducers the fixture writes only the Java layout, as before.
func TestFixtureWritesRustLayoutOnlyWhenAsked(t *testing.T) {
	_, m := testutil.Fixture(t, fixtures.Options{Seed: 7})
	for _, tu := range m.Topics {
		for _, u := range tu.Usage {
			if strings.Contains(u.ID, "layout=rust") {
				t.Errorf("%s: %s without RustProducers", tu.Topic, u.ID)
			}
		}
	}
}

func TestSchemaUsageTopicFilter(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 5, Partitions: 2})
	want := wantUsage(m)
	var partitioned fixtures.TopicUsage
	for _, tu := range m.Topics {
		if tu.Partitions > 0 {
			partitioned = tu
			break
		}
	}
	if partitioned.Topic == "" {
		t.Fatal("fixture has no partitioned topic")
	}
	base, err := formats.ParseTopic(partitioned.Topic)
	if err != nil {
		t.Fatal(err)
	}

	r := usageRun(t, dir, UsageOptions{Topic: &base})
	if len(r.Topics) != 1 || r.Topics[0].Topic != partitioned.Topic {
		t.Fatalf("topics %+v, want only %s", r.Topics, partitioned.Topic)
	}
	if r.Topics[0].ManagedLedgers != partitioned.Partitions {
		t.Errorf("managed ledgers = %d, want its %d partitions", r.Topics[0].ManagedLedgers, partitioned.Partitions)
	}
	compareUsage(t, gotUsage(r), map[string][]usageLine{partitioned.Topic: want[partitioned.Topic]})

	// One partition alone is reported under the base topic, with fewer entries.
	p1 := base.Partition(1)
	rp := usageRun(t, dir, UsageOptions{Topic: &p1})
	if len(rp.Topics) != 1 || rp.Topics[0].Topic != partitioned.Topic || rp.Topics[0].ManagedLedgers != 1 {
		t.Fatalf("partition 1: topics %+v", rp.Topics)
	}
	if rp.Topics[0].Entries == 0 || rp.Topics[0].Entries >= r.Topics[0].Entries {
		t.Errorf("partition 1 has %d entries, the topic %d", rp.Topics[0].Entries, r.Topics[0].Entries)
	}

	missing, _ := formats.ParseTopic("acme/orders/no-such-topic")
	dd := usageOpen(t, dir, true)
	if _, err := SchemaUsage(context.Background(), dd, UsageOptions{Topic: &missing}, nil); !errors.Is(err, ErrNoSuchTopic) {
		t.Errorf("unknown topic: err = %v, want ErrNoSuchTopic", err)
	}
}

// Lost schema ledgers whose versions messages still use are errors naming the
// version and the repair; lost versions nobody uses are not this report's.
func TestSchemaUsageLostVersions(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 11, LoseSchemaLedgers: 2, LoseSchemaEntries: 1})
	type sv struct {
		topic   string
		version int64
	}
	byKey := map[string]fixtures.TopicUsage{}
	for _, tu := range m.Topics {
		byKey[tu.SchemaKey] = tu
	}
	wantLost := map[sv]int64{} // messages
	for _, f := range m.Faults {
		if f.Kind != fixtures.FaultLostSchemaLedger && f.Kind != fixtures.FaultLostSchemaEntries {
			continue
		}
		tu := byKey[f.SchemaKey]
		for _, u := range tu.Usage {
			if u.Version != nil && *u.Version == *f.Version && u.Messages > 0 {
				wantLost[sv{tu.Topic, *f.Version}] = u.Messages
			}
		}
	}
	if len(wantLost) == 0 {
		t.Fatal("fixture loses no schema version that messages use")
	}
	r := usageRun(t, dir, UsageOptions{})
	got := findingsOf(r.Findings, KindUsedSchemaVersionLost)
	if len(got) != len(wantLost) {
		t.Errorf("%d %s findings, want %d: %+v", len(got), KindUsedSchemaVersionLost, len(wantLost), got)
	}
	for _, f := range got {
		if f.Version == nil || f.Severity != report.SeverityError {
			t.Errorf("finding %+v: want an error with a version", f)
			continue
		}
		n, ok := wantLost[sv{f.Topic, *f.Version}]
		if !ok {
			t.Errorf("unexpected lost-version finding %s", f.Location)
			continue
		}
		if !strings.Contains(f.Message, fmt.Sprintf("%d messages", n)) {
			t.Errorf("%s: message %q does not count %d messages", f.Location, f.Message, n)
		}
		if f.Hint != schemaRepairHint(f.Topic) || !strings.Contains(f.Hint, "--from ") {
			t.Errorf("%s: hint %q", f.Location, f.Hint)
		}
	}
	// The node-kept case says so.
	for _, f := range m.Faults {
		if f.Kind != fixtures.FaultLostSchemaEntries {
			continue
		}
		for _, g := range got {
			if g.LedgerID != nil && *g.LedgerID == f.Ledger && !strings.Contains(g.Message, "node exists") {
				t.Errorf("entries-only loss of ledger %d: message %q", f.Ledger, g.Message)
			}
		}
	}
	if len(findingsOf(r.Findings, KindUsedSchemaVersionMissing)) != 0 {
		t.Errorf("no history was deleted, yet: %+v", findingsOf(r.Findings, KindUsedSchemaVersionMissing))
	}
	// Check's one pass carries them too.
	dd := usageOpen(t, dir, true)
	fs, _, err := Check(context.Background(), dd, CheckOptions{SchemaUsage: true}, report.NoProgress{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(findingsOf(fs, KindUsedSchemaVersionLost)); n != len(wantLost) {
		t.Errorf("check with schema usage: %d lost-version findings, want %d", n, len(wantLost))
	}
}

// A locator that no longer lists a version messages use (history deleted), and
// a topic whose locator is gone entirely.
func TestSchemaUsageDeletedHistory(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 13})
	// Pick two registry topics: drop version 1 from the first's locator, delete
	// the second's locator.
	var trimmed, dropped fixtures.TopicUsage
	for _, tu := range m.Topics {
		hasV1 := false
		for _, u := range tu.Usage {
			hasV1 = hasV1 || u.Version != nil && *u.Version == 1
		}
		switch {
		case !hasV1:
		case trimmed.Topic == "":
			trimmed = tu
		case dropped.Topic == "":
			dropped = tu
		}
	}
	if dropped.Topic == "" {
		t.Fatal("fixture has fewer than two topics using version 1")
	}
	locPath := func(tu fixtures.TopicUsage) string { return formats.SchemasRoot + "/" + tu.SchemaKey }

	dd := usageOpen(t, dir, false)
	n, err := dd.Metadata.Get(locPath(trimmed))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := formats.DecodeSchemaLocator(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	var kept []*schemapb.IndexEntry
	for _, ie := range loc.GetIndex() {
		if ie.GetVersion() != 1 {
			kept = append(kept, ie)
		}
	}
	loc.Index = kept
	b, err := formats.EncodeSchemaLocator(loc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Metadata.CompareAndSet(n.Path, n.Version, b); err != nil {
		t.Fatal(err)
	}
	n2, err := dd.Metadata.Get(locPath(dropped))
	if err != nil {
		t.Fatal(err)
	}
	if err := dd.Metadata.CompareAndDelete(n2.Path, n2.Version); err != nil {
		t.Fatal(err)
	}
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}

	r := usageRun(t, dir, UsageOptions{})
	got := map[string]bool{}
	for _, f := range findingsOf(r.Findings, KindUsedSchemaVersionMissing) {
		if f.Severity != report.SeverityError || f.Version == nil {
			t.Errorf("finding %+v: want an error with a version", f)
			continue
		}
		got[fmt.Sprintf("%s v%d", f.Topic, *f.Version)] = true
	}
	want := map[string]bool{trimmed.Topic + " v1": true}
	for _, u := range dropped.Usage {
		if u.Version != nil {
			want[fmt.Sprintf("%s v%d", dropped.Topic, *u.Version)] = true
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("missing-version findings for %v, want %v", got, want)
	}
	for _, tu := range r.Topics {
		for _, u := range tu.Uses {
			if u.Field != schemaid.FieldSchemaVersion {
				continue
			}
			isMissing := want[fmt.Sprintf("%s v%d", tu.Topic, u.ID.Version)]
			if isMissing != (u.Status == UseMissing) {
				t.Errorf("%s %s: status %s", tu.Topic, u.ID, u.Status)
			}
		}
	}
}

// A CRC mismatch is listed at its position and still counted; an entry that
// does not parse is listed and counted as bad; past the cap, one finding counts
// the rest.
func TestSchemaUsageBadEntries(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 17, CorruptCRC: true})
	var crc fixtures.Fault
	for _, f := range m.Faults {
		if f.Kind == fixtures.FaultCorruptCRC {
			crc = f
		}
	}
	if crc.Kind == "" {
		t.Fatal("fixture has no corrupt-crc fault")
	}
	r := usageRun(t, dir, UsageOptions{})
	compareUsage(t, gotUsage(r), wantUsage(m))
	fs := findingsOf(r.Findings, KindEntryCRCMismatch)
	if len(fs) != 1 || *fs[0].LedgerID != crc.Ledger || *fs[0].EntryID != crc.FirstEntry {
		t.Fatalf("crc findings %+v, want ledger %d entry %d", fs, crc.Ledger, crc.FirstEntry)
	}
	if r.BadEntries != 1 {
		t.Errorf("bad entries = %d, want 1", r.BadEntries)
	}

	// Overwrite entries of one topic ledger with garbage.
	var ledger int64
	for _, ml := range m.ManagedLedgers {
		for _, l := range ml.Ledgers {
			if !l.Offloaded && l.Lost == "" && l.Entries >= 12 && ledger == 0 && l.ID != crc.Ledger {
				ledger = l.ID
			}
		}
	}
	if ledger == 0 {
		t.Fatal("no stored topic ledger with 12 entries")
	}
	dd := usageOpen(t, dir, false)
	for e := int64(0); e < 12; e++ {
		if err := dd.Ledgers.PutEntry(ledger, e, []byte{0, 0, 0, 99, 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
	r = usageRun(t, dir, UsageOptions{MaxListedBadEntries: 5})
	if r.BadEntries != 13 {
		t.Errorf("bad entries = %d, want 13", r.BadEntries)
	}
	undec := findingsOf(r.Findings, KindEntryUndecodable)
	crcs := findingsOf(r.Findings, KindEntryCRCMismatch)
	if len(undec)+len(crcs) != 5 {
		t.Errorf("%d entries listed, want the cap of 5", len(undec)+len(crcs))
	}
	for _, f := range undec {
		if *f.LedgerID != ledger || !strings.Contains(f.Message, "metadata size 99") {
			t.Errorf("undecodable finding %+v", f)
		}
	}
	more := findingsOf(r.Findings, KindBadEntriesNotListed)
	if len(more) != 1 || !strings.Contains(more[0].Message, "8 more") {
		t.Errorf("not-listed finding %+v, want one counting 8 more", more)
	}
	var perTopic int64
	for _, tu := range r.Topics {
		perTopic += tu.BadEntries
	}
	if perTopic != 13 {
		t.Errorf("per-topic bad entries add up to %d, want 13", perTopic)
	}
	// Check already reports unreadable entries: the usage findings it adds do not
	// repeat them.
	for _, f := range checkUsageFindings(r) {
		if f.LedgerID != nil && f.EntryID != nil {
			t.Errorf("check source repeats an entry finding: %+v", f)
		}
	}
}

func TestSchemaUsageTables(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 7})
	r := usageRun(t, dir, UsageOptions{})
	tbl := r.Table()
	rows := 0
	for _, tu := range r.Topics {
		rows += len(tu.Uses)
	}
	if len(tbl.Rows) != rows {
		t.Errorf("usage table has %d rows, want %d", len(tbl.Rows), rows)
	}
	if got := len(r.TopicsTable().Rows); got != len(r.Topics) || got < len(m.Topics) {
		t.Errorf("topics table has %d rows for %d topics (manifest %d)", got, len(r.Topics), len(m.Topics))
	}
}

// Check with SchemaUsage adds the schema-usage findings to its own.
func TestCheckCountsSchemaUsage(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 11, LoseSchemaLedgers: 2})
	dd := usageOpen(t, dir, true)
	without, _, err := Check(context.Background(), dd, CheckOptions{}, report.NoProgress{})
	if err != nil {
		t.Fatal(err)
	}
	with, _, err := Check(context.Background(), dd, CheckOptions{SchemaUsage: true}, report.NoProgress{})
	if err != nil {
		t.Fatal(err)
	}
	if len(findingsOf(without, KindUsedSchemaVersionLost)) != 0 {
		t.Fatalf("core check already reports %s", KindUsedSchemaVersionLost)
	}
	if len(findingsOf(with, KindUsedSchemaVersionLost)) == 0 {
		t.Errorf("check with schema usage has no %s finding", KindUsedSchemaVersionLost)
	}
	if len(with) <= len(without) {
		t.Errorf("schema usage added nothing: %d findings with it, %d without", len(with), len(without))
	}
}

// TestPeekEntryTakesFixtureEntries: every topic entry the fixture generator
// writes takes formats.PeekEntry's fast path, which keeps the scans I/O-bound,
// and the fast path agrees with the full parse.
func TestPeekEntryTakesFixtureEntries(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 9, CorruptCRC: true})
	dd := usageOpen(t, dir, true)
	var n, fast, crcBad int
	err := dd.RawLedgerIteration(context.Background(), func(k, v []byte) error {
		var e formats.Entry
		if formats.ParseEntryInto(v, &e, nil, nil) != nil {
			return nil // a schema ledger's SchemaEntry
		}
		n++
		var r formats.EntryRefs
		if !formats.PeekEntry(v, &r) {
			return nil
		}
		fast++
		if want := e.Refs(); !reflect.DeepEqual(r, want) {
			return fmt.Errorf("entry %x: PeekEntry %+v, ParseEntryInto %+v", k, r, want)
		}
		if r.HasChecksum && !r.ChecksumOK {
			crcBad++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || fast != n {
		t.Errorf("%d of %d fixture entries took the fast path, want all", fast, n)
	}
	if crcBad == 0 {
		t.Errorf("CorruptCRC fixture: no entry with a bad checksum among %d", n)
	}
}

// A schema locator that cannot be used, garbage or missing a required field
// (which Check reports as undecodable too), leaves the topic's versions
// unjoined and gives one finding at the same location as Check's.
func TestSchemaUsageDamagedLocator(t *testing.T) {
	partial := &schemapb.SchemaLocator{
		Info: &schemapb.IndexEntry{Position: &schemapb.PositionInfo{LedgerId: proto.Int64(41), EntryId: proto.Int64(0)}}, // no version, no hash
		Index: []*schemapb.IndexEntry{
			{Version: proto.Int64(0), Position: &schemapb.PositionInfo{LedgerId: proto.Int64(40), EntryId: proto.Int64(0)}, Hash: []byte{1}},
			{Version: proto.Int64(1), Position: &schemapb.PositionInfo{LedgerId: proto.Int64(41), EntryId: proto.Int64(0)}, Hash: []byte{2}},
		},
	}
	tests := []struct {
		name  string
		value []byte
	}{
		{"garbage", []byte{0x0a, 0xff}},
		{"missing required fields", must(proto.MarshalOptions{AllowPartial: true}.Marshal(partial))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := buildTestDir(t)
			edit(t, dir, func(b *testBuilder) { b.node(ordersLoc, tt.value) })
			r := usageRun(t, dir, UsageOptions{})
			const orders = "persistent://public/default/orders"
			checked := 0
			for _, tu := range r.Topics {
				for _, u := range tu.Uses {
					if tu.Topic == orders && u.Field == schemaid.FieldSchemaVersion {
						checked++
						if u.Status != UseNoLocator {
							t.Errorf("%s: status %s, want %s", u.ID, u.Status, UseNoLocator)
						}
					}
				}
			}
			if checked != 2 {
				t.Errorf("%d registry versions used by %s, want 2", checked, orders)
			}
			var bad []want
			for _, f := range r.Findings {
				if f.Kind != KindSchemaRefUnchecked && (f.Topic == orders || f.Path == ordersLoc) { // the schema_id use is info
					bad = append(bad, want{f.Kind, f.Location})
					if f.Path != ordersLoc {
						t.Errorf("finding %+v: path %q, want %q", f, f.Path, ordersLoc)
					}
				}
			}
			w := []want{{KindNodeUndecodable, "node " + ordersLoc}}
			if !slices.Equal(bad, w) {
				t.Errorf("findings of %s: %v, want %v", orders, bad, w)
			}
			if cf := findingsOf(runCheck(t, dir, CheckOptions{}), KindNodeUndecodable); len(cf) != 1 || cf[0].Location != w[0].location {
				t.Errorf("check reports %+v, want one at %s", cf, w[0].location)
			}
		})
	}
}

// TestCheckJoinsUsageAsTheViewDoes: check joins stored messages with the
// locators from what its own pass read of every schema version; the
// schema-usage view reads each version's entry from the store. Both must give
// the same statuses and findings, on fixtures with every schema fault
// (lost ledgers and entries, deleted and reset histories: collisions).
func TestCheckJoinsUsageAsTheViewDoes(t *testing.T) {
	for _, o := range []fixtures.Options{
		{Seed: 11, LoseSchemaLedgers: 2, LoseSchemaEntries: 1},
		{Seed: 3, DeleteSchemaHistory: 1, ResetSchemaHistory: 2, LoseSchemaLedgers: 1},
	} {
		dir, _ := testutil.Fixture(t, o)
		dd := usageOpen(t, dir, true)
		view, err := SchemaUsage(context.Background(), dd, UsageOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var fromCheck *UsageReport
		fs, _, err := Check(context.Background(), dd, CheckOptions{SchemaUsage: true, OnUsage: func(u *UsageRun) {
			if fromCheck, err = u.Report(context.Background()); err != nil {
				t.Error(err)
			}
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var checkUsage []report.Finding
		for _, f := range fs {
			if checkAddsUsage(f.Kind) {
				checkUsage = append(checkUsage, f)
			}
		}
		if want := checkUsageFindings(view); !reflect.DeepEqual(checkUsage, want) || len(want) == 0 {
			t.Errorf("seed %d: check's usage findings %v, the view's %v", o.Seed, got(checkUsage), got(want))
		}
		if !reflect.DeepEqual(fromCheck.Topics, view.Topics) {
			t.Errorf("seed %d: check's topic usage differs from the view's", o.Seed)
		}
		collisions := 0
		for _, tu := range view.Topics {
			for _, u := range tu.Uses {
				if u.Status == UseCollision {
					collisions++
				}
			}
		}
		if o.ResetSchemaHistory > 0 && collisions == 0 {
			t.Errorf("seed %d: no collision joined: the test does not reach the registration times", o.Seed)
		}
	}
}
