package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
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
