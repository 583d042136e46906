package inspect

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
	htmlreport "github.com/ledgermedic/ledgermedic/report/html"
	"github.com/ledgermedic/ledgermedic/testutil"
)

var incidentFaults = fixtures.Options{Seed: 3, LoseSchemaLedgers: 2, LoseSchemaEntries: 1, LoseTopicLedger: true,
	LoseEntriesOnly: true, OrphanLedger: true, CorruptCRC: true}

// laneLedger finds a ledger on the lane of topic, or nil.
func laneLedger(r *htmlreport.Report, topic string, id int64) *htmlreport.Ledger {
	for ti := range r.Topics {
		for li := range r.Topics[ti].Lanes {
			lane := &r.Topics[ti].Lanes[li]
			if lane.Topic != topic {
				continue
			}
			for i := range lane.Ledgers {
				if lane.Ledgers[i].ID == id {
					return &lane.Ledgers[i]
				}
			}
		}
	}
	return nil
}

// The report reads the ledger store once: its message counts come from the
// check's own pass, and skipping the message scan still reads entries once.
func TestIncidentReadsLedgersOnce(t *testing.T) {
	dir, _ := testutil.Fixture(t, incidentFaults)
	dd := openRO(t, dir)
	for _, skip := range []bool{false, true} {
		before := passesRun.Load()
		r, err := Incident(context.Background(), dd, IncidentOptions{Now: time.Unix(0, 0), SkipMessageScan: skip}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := passesRun.Load() - before; n != 1 {
			t.Errorf("skip-message-scan=%v: %d passes over the ledger store, want 1", skip, n)
		}
		counted := false
		for _, tp := range r.Topics {
			if tp.Schema == nil {
				continue
			}
			for _, v := range tp.Schema.Versions {
				counted = counted || v.Messages > 0
			}
		}
		if counted == skip {
			t.Errorf("skip-message-scan=%v: message counts shown = %v", skip, counted)
		}
	}
}

func hasFault(fs []htmlreport.Fault, kind string) bool {
	for _, f := range fs {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

// The report model puts every manifest fault on its ledger or version, with
// the numbers the manifest has: messages needing a lost version, entries, times.
func TestIncidentPlacesEveryFault(t *testing.T) {
	dir, m := testutil.Fixture(t, incidentFaults)
	dd := openRO(t, dir)
	r, err := Incident(context.Background(), dd, IncidentOptions{Now: time.Unix(0, 0)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 0 {
		t.Errorf("problems on a readable fixture: %v", r.Problems)
	}
	versions := map[string]map[int64]htmlreport.Version{}
	for _, tp := range r.Topics {
		if tp.Schema != nil {
			versions[tp.Schema.Key] = map[int64]htmlreport.Version{}
			for _, v := range tp.Schema.Versions {
				versions[tp.Schema.Key][v.Version] = v
			}
		}
	}
	needs := map[string]int64{} // schema key + version -> messages
	for _, tu := range m.Topics {
		for _, u := range tu.Usage {
			if u.Version != nil && u.Field == "schema_version" {
				needs[restoredKey(tu.SchemaKey, *u.Version)] += u.Messages
			}
		}
	}
	for _, f := range m.Faults {
		switch f.Kind {
		case fixtures.FaultLostTopicLedger, fixtures.FaultLostTopicEntries, fixtures.FaultCorruptCRC:
			kind := map[string]string{fixtures.FaultLostTopicLedger: KindLedgerMissing,
				fixtures.FaultLostTopicEntries: KindLedgerNodeWithoutEntries, fixtures.FaultCorruptCRC: KindEntryCRCMismatch}[f.Kind]
			l := laneLedger(r, f.Topic, f.Ledger)
			if l == nil || !hasFault(l.Faults, kind) {
				t.Errorf("%s: ledger %d of %s not marked %s: %+v", f.Kind, f.Ledger, f.Topic, kind, l)
				continue
			}
			if f.Kind == fixtures.FaultCorruptCRC && (l.Faults[0].EntryID == nil || *l.Faults[0].EntryID != f.FirstEntry) {
				t.Errorf("CRC fault at entry %v, manifest %d", l.Faults[0].EntryID, f.FirstEntry)
			}
			if f.NodeLost != l.StartEstimated {
				t.Errorf("ledger %d: node lost %v but start estimated %v", f.Ledger, f.NodeLost, l.StartEstimated)
			}
		case fixtures.FaultLostSchemaLedger, fixtures.FaultLostSchemaEntries:
			v, ok := versions[f.SchemaKey][*f.Version]
			if !ok || !v.Lost {
				t.Errorf("%s %s v%d not lost in the report: %+v", f.Kind, f.SchemaKey, *f.Version, v)
				continue
			}
			if want := needs[restoredKey(f.SchemaKey, *f.Version)]; v.Messages != want {
				t.Errorf("%s v%d: %d messages need it, manifest %d", f.SchemaKey, *f.Version, v.Messages, want)
			}
		}
	}
	for _, o := range m.Orphans {
		found := false
		for _, tp := range r.Topics {
			for _, lane := range tp.Lanes {
				for _, l := range lane.Ledgers {
					found = found || l.ID == o.Ledger && l.State == htmlreport.LedgerOrphan
				}
			}
			if tp.Schema != nil {
				for _, l := range tp.Schema.Orphans {
					found = found || l.ID == o.Ledger && tp.Schema.Key == o.SchemaKey
				}
			}
		}
		if !found {
			t.Errorf("orphan ledger %d not placed", o.Ledger)
		}
	}
	if len(r.Loose) != 0 {
		t.Errorf("loose ledgers on a fixture whose faults all have a place: %+v", r.Loose)
	}
}

// --topic keeps that topic's lanes, schema and findings, and counts the rest.
func TestIncidentTopicFilter(t *testing.T) {
	dir, m := testutil.Fixture(t, incidentFaults)
	dd := openRO(t, dir)
	var lost fixtures.Fault
	for _, f := range m.Faults {
		if f.Kind == fixtures.FaultLostTopicLedger {
			lost = f
		}
	}
	tn, err := formats.ParseTopic(lost.Topic)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Incident(context.Background(), dd, IncidentOptions{Topics: []formats.TopicName{tn.Base()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Topics) != 1 || r.Topics[0].Name != tn.Base().String() {
		t.Fatalf("topics %+v, want only %s", r.Topics, tn.Base())
	}
	if laneLedger(r, lost.Topic, lost.Ledger) == nil {
		t.Errorf("lost ledger %d not shown", lost.Ledger)
	}
	if r.HiddenFindings == 0 {
		t.Error("no finding hidden by the filter")
	}
	for _, f := range r.Findings {
		if f.Topic != "" {
			if ft, _ := formats.ParseTopic(f.Topic); ft.Base() != tn.Base() {
				t.Errorf("finding of another topic shown: %+v", f)
			}
		}
	}
}

// bigFaults is a fixture of more topics than the report draws, with faults.
var bigFaults = fixtures.Options{Seed: 5, Topics: htmlreport.MaxDrawnTopics + 17, LedgersPerTopic: 3, EntriesPerLedger: 2,
	LoseSchemaLedgers: 2, LoseSchemaEntries: 1, LoseTopicLedger: true, LoseEntriesOnly: true, OrphanLedger: true, CorruptCRC: true}

// wantRows is every topic's row as the manifest and check's findings make it,
// without the report's own placement: a finding is a topic's when it names
// the topic, one of the topic's ledgers (by the manifest: its managed
// ledgers', its schema versions', its orphans') or one of its nodes.
func wantRows(t *testing.T, m *fixtures.Manifest, fs []report.Finding, coverage []TopicCoverage) []htmlreport.TopicRow {
	t.Helper()
	rows := map[string]*htmlreport.TopicRow{}
	for _, tu := range m.Topics {
		rows[tu.Topic] = &htmlreport.TopicRow{Name: tu.Topic}
	}
	ledgerTopic := map[int64]string{}
	mlTopic := map[string]string{}
	for _, ml := range m.ManagedLedgers {
		r := rows[ml.BaseTopic]
		r.Partitions++
		r.Ledgers += int64(len(ml.Ledgers))
		for _, l := range ml.Ledgers {
			if !l.Open { // the open ledger's LedgerInfo says 0 entries
				r.Entries += l.Entries
			}
			ledgerTopic[l.ID] = ml.BaseTopic
		}
		mlTopic[ml.Name] = ml.BaseTopic
	}
	keyTopic := map[string]string{}
	for _, s := range m.Schemas {
		rows[s.Topic].Versions = int64(len(s.Versions))
		keyTopic[s.Key] = s.Topic
		for _, v := range s.Versions {
			ledgerTopic[v.Ledger] = s.Topic
		}
	}
	for _, o := range m.Orphans {
		ledgerTopic[o.Ledger] = cmp.Or(mlTopic[o.ManagedLedger], keyTopic[o.SchemaKey])
	}
	bad := map[string]map[int64]bool{}
	for _, f := range fs {
		var topic string
		switch {
		case f.Topic != "" && !orphanKind(f.Kind):
			tn, err := formats.ParseTopic(f.Topic)
			if err != nil {
				t.Fatal(err)
			}
			topic = tn.Base().String()
		case f.LedgerID != nil:
			topic = ledgerTopic[*f.LedgerID]
		}
		r := rows[topic]
		if r == nil {
			t.Fatalf("finding of no topic in the manifest: %+v", f)
		}
		switch f.Severity {
		case report.SeverityError:
			r.Errors++
		case report.SeverityWarning:
			r.Warnings++
		default:
			r.Info++
		}
		if f.Version != nil {
			if bad[topic] == nil {
				bad[topic] = map[int64]bool{}
			}
			bad[topic][*f.Version] = true
		}
	}
	for topic, vs := range bad {
		rows[topic].BadVersions = int64(len(vs))
	}
	for _, c := range coverage {
		tn, _ := formats.ParseTopic(c.Topic)
		r := rows[tn.Base().String()]
		r.WithEntries += int64(c.WithEntries)
		r.Covered += int64(c.Covered)
	}
	var out []htmlreport.TopicRow
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b htmlreport.TopicRow) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func reportRows(t *testing.T, r *htmlreport.Report) []htmlreport.TopicRow {
	t.Helper()
	var out []htmlreport.TopicRow
	if err := r.Rows.Each(context.Background(), func(row *htmlreport.TopicRow) error {
		out = append(out, *row)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The table lists every topic of the fixture, in name order, with its
// partitions, ledgers, entries, coverage, schema versions and the findings
// about it by severity; the topics drawn are the worst of them (most errors,
// then warnings, then info), worst first, each with its lanes.
func TestIncidentRowsAndWorstTopics(t *testing.T) {
	dir, m := testutil.Fixture(t, bigFaults)
	dd := openRO(t, dir)
	fs, stats, err := Check(context.Background(), dd, CheckOptions{SchemaUsage: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Incident(context.Background(), dd, IncidentOptions{Now: time.Unix(0, 0), SpillDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.Problems) != 0 || len(r.Loose) != 0 {
		t.Errorf("problems %v, loose ledgers %+v on a fixture whose faults all have a topic", r.Problems, r.Loose)
	}
	got, want := reportRows(t, r), wantRows(t, m, fs, stats.Coverage)
	if len(got) != len(m.Topics) {
		t.Fatalf("%d rows for the %d topics of the manifest", len(got), len(m.Topics))
	}
	errorTopics := 0
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
		if want[i].Errors > 0 {
			errorTopics++
		}
	}
	if errorTopics < 3 {
		t.Fatalf("only %d topics with errors: the fixture tests little", errorTopics)
	}
	if r.FindingTotal() != int64(len(fs)) {
		t.Errorf("the report counts %d findings, check made %d", r.FindingTotal(), len(fs))
	}
	t.Run("worst drawn", func(t *testing.T) {
		worst := slices.Clone(want)
		slices.SortFunc(worst, func(a, b htmlreport.TopicRow) int { return htmlreport.CompareWorst(&a, &b) })
		if len(r.Topics) != htmlreport.MaxDrawnTopics {
			t.Fatalf("%d topics drawn, want %d", len(r.Topics), htmlreport.MaxDrawnTopics)
		}
		for i, tp := range r.Topics {
			if tp.Name != worst[i].Name {
				t.Fatalf("drawn topic %d is %s, want %s (%+v)", i, tp.Name, worst[i].Name, worst[i])
			}
			if len(tp.Lanes) != want[slices.IndexFunc(want, func(w htmlreport.TopicRow) bool { return w.Name == tp.Name })].Partitions {
				t.Errorf("%s drawn with %d lanes", tp.Name, len(tp.Lanes))
			}
		}
	})
}

// worstTopics keeps exactly the rows a full sort puts first, in that order,
// and all rows in name order when there are no more than it keeps.
func TestWorstTopicsIsAFullSortsHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{0, 1, 7, 50, 51, 1000} {
		var rows []htmlreport.TopicRow
		for i := range n {
			rows = append(rows, htmlreport.TopicRow{Name: fmt.Sprintf("t-%04d", i), Errors: int64(rng.IntN(3) / 2),
				Warnings: int64(rng.IntN(3)), Info: int64(rng.IntN(4))})
		}
		w := worstTopics{max: htmlreport.MaxDrawnTopics}
		for i := range rows {
			w.offer(&rows[i])
		}
		sorted := slices.Clone(rows)
		slices.SortFunc(sorted, func(a, b htmlreport.TopicRow) int { return htmlreport.CompareWorst(&a, &b) })
		var want []string
		for _, r := range sorted[:min(n, htmlreport.MaxDrawnTopics)] {
			want = append(want, r.Name)
		}
		if n <= htmlreport.MaxDrawnTopics {
			slices.Sort(want)
		}
		if got := w.names(n); !slices.Equal(got, want) {
			t.Errorf("%d rows: drawn %v, want %v", n, got, want)
		}
	}
}
