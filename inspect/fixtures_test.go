package inspect

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// expectedFindings turns a manifest's faults and orphans (and, without
// firstEntryIndex, its indexed managed ledgers) into the findings Check must report.
func expectedFindings(m *fixtures.Manifest) []want {
	var out []want
	entries := map[int64]int64{}
	for _, ml := range m.ManagedLedgers {
		for _, l := range ml.Ledgers {
			entries[l.ID] = l.Entries
		}
		if ml.Indexed && !m.Options.WithFirstEntryIndex {
			out = append(out, want{KindFirstEntryIndexMissing, ml.Topic})
		}
	}
	for _, f := range m.Faults {
		switch f.Kind {
		case fixtures.FaultLostSchemaLedger:
			out = append(out, want{KindSchemaLedgerLost, schemaLoc(f.SchemaKey, *f.Version)})
		case fixtures.FaultLostSchemaEntries:
			out = append(out, want{KindSchemaEntryLost, schemaLoc(f.SchemaKey, *f.Version)})
		case fixtures.FaultLostTopicLedger:
			out = append(out, want{KindLedgerMissing, f.Topic + " " + ledgerLoc(f.Ledger)})
		case fixtures.FaultLostTopicEntries:
			kind := KindLedgerNodeWithoutEntries
			if f.FirstEntry > 0 || f.LastEntry+1 < entries[f.Ledger] {
				kind = KindLedgerEntriesMissing
			}
			out = append(out, want{kind, ledgerLoc(f.Ledger)})
		case fixtures.FaultCorruptCRC:
			for e := f.FirstEntry; e <= f.LastEntry; e++ {
				out = append(out, want{KindEntryCRCMismatch, entryLoc(f.Ledger, e)})
			}
		default:
			out = append(out, want{"unknown fault " + f.Kind, fmt.Sprint(f.Ledger)})
		}
	}
	for _, o := range m.Orphans {
		out = append(out, want{KindOrphanLedger, ledgerLoc(o.Ledger)})
	}
	return out
}

func sortedWants(ws []want) []want {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b want) int {
		if c := strings.Compare(a.kind, b.kind); c != 0 {
			return c
		}
		return strings.Compare(a.location, b.location)
	})
	return ws
}

func TestCheckFixtures(t *testing.T) {
	cases := []struct {
		name string
		opts fixtures.Options
	}{
		{"clean with firstEntryIndex", fixtures.Options{Seed: 1, WithFirstEntryIndex: true}},
		{"clean without firstEntryIndex", fixtures.Options{Seed: 2}},
		{"every fault", fixtures.Options{Seed: 3, WithFirstEntryIndex: true, LoseSchemaLedgers: 2, LoseSchemaEntries: 1,
			LoseTopicLedger: true, LoseEntriesOnly: true, OrphanLedger: true, CorruptCRC: true}},
		{"faults, custom index key", fixtures.Options{Seed: 4, WithFirstEntryIndex: true, IndexKey: "kafka.base.offset",
			LoseSchemaLedgers: 1, CorruptCRC: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, m := testutil.Fixture(t, tc.opts)
			fs := runCheck(t, dir, CheckOptions{FirstEntryIndexKey: m.Options.IndexKey})
			t.Logf("%d faults, %d orphans, %d findings", len(m.Faults), len(m.Orphans), len(fs))
			g, w := sortedWants(got(fs)), sortedWants(expectedFindings(m))
			if !slices.Equal(g, w) {
				t.Fatalf("findings differ from the manifest:\n got  %v\n want %v", g, w)
			}
			if clean := len(m.Faults) == 0 && len(m.Orphans) == 0; clean == report.Actionable(fs) {
				t.Errorf("clean %v but actionable %v", clean, report.Actionable(fs))
			}
		})
	}
}

// TestCheckFixtureCodecs makes sure every ManagedLedgerInfo and cursor encoding the
// generator uses is read: a clean fixture must give no node-undecodable finding
// and the topics view must show each encoding the manifest records.
func TestCheckFixtureCodecs(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 5, WithFirstEntryIndex: true})
	dd := openRO(t, dir)
	tbl, err := Topics(context.Background(), dd, "")
	if err != nil {
		t.Fatal(err)
	}
	gotEnc := map[string]string{}
	for _, r := range tbl.Rows {
		gotEnc[r[0].(string)] = report.Cell(r[4])
	}
	encodings := map[string]bool{}
	for _, ml := range m.ManagedLedgers {
		encodings[ml.Encoding] = true
		if gotEnc[ml.Topic] != ml.Encoding {
			t.Errorf("%s: encoding %q, manifest %q", ml.Topic, gotEnc[ml.Topic], ml.Encoding)
		}
	}
	if len(tbl.Rows) != len(m.ManagedLedgers) {
		t.Errorf("topics view has %d rows, manifest %d managed ledgers", len(tbl.Rows), len(m.ManagedLedgers))
	}
	t.Logf("encodings covered: %v", slices.Sorted(maps.Keys(encodings)))
}
