package inspect

import (
	"context"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/index"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// checkCoverage runs Check on dir and returns its coverage rows by ML path.
func checkCoverage(t *testing.T, dir string) map[string]TopicCoverage {
	t.Helper()
	dd := mustOpen(t, dir)
	defer dd.Close()
	_, stats, err := Check(context.Background(), dd, CheckOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]TopicCoverage{}
	for _, tc := range stats.Coverage {
		got[tc.Path] = tc
	}
	if tbl := stats.CoverageTable(); len(tbl.Rows) != len(stats.Coverage) {
		t.Errorf("coverage table has %d rows for %d managed ledgers", len(tbl.Rows), len(stats.Coverage))
	}
	return got
}

// wantCoverage derives a managed ledger's coverage from the fixture manifest:
// LedgerInfos with entries are the closed ones that were written to.
func wantCoverage(ml fixtures.ManagedLedger) TopicCoverage {
	tc := TopicCoverage{Topic: ml.Topic, Path: ml.Path, Indexed: ml.Indexed}
	for _, l := range ml.Ledgers {
		if l.Open || l.Entries == 0 {
			continue
		}
		tc.WithEntries++
		if l.FirstEntryIndexProperty != "" {
			tc.Covered++
		}
	}
	return tc
}

func TestCheckCoverageMatchesManifest(t *testing.T) {
	for _, with := range []bool{true, false} {
		dir, m := testutil.Fixture(t, fixtures.Options{Seed: 5, WithFirstEntryIndex: with})
		got := checkCoverage(t, dir)
		if len(got) != len(m.ManagedLedgers) {
			t.Fatalf("with %v: %d coverage rows, manifest has %d managed ledgers", with, len(got), len(m.ManagedLedgers))
		}
		var indexed, plain int
		for _, ml := range m.ManagedLedgers {
			tc, want := got[ml.Path], wantCoverage(ml)
			if tc != want {
				t.Errorf("with %v: %s: got %+v, want %+v", with, ml.Path, tc, want)
			}
			pct, ok := tc.Percent()
			wantPct := 0.0
			if with && ml.Indexed {
				wantPct = 100
				indexed++
			} else {
				plain++
			}
			if !ok || pct != wantPct {
				t.Errorf("with %v: %s (indexed %v): coverage %v%% (ok %v), want %v%%", with, ml.Path, ml.Indexed, pct, ok, wantPct)
			}
		}
		if with && (indexed == 0 || plain == 0) {
			t.Fatalf("fixture lacks indexed (%d) or plain (%d) topics", indexed, plain)
		}
	}
}

// After back-filling one topic, its coverage counts what the back-fill wrote
// and every other topic stays uncovered.
func TestCheckCoverageAfterPartialBackfill(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 6})
	var target fixtures.ManagedLedger
	for _, ml := range m.ManagedLedgers {
		if ml.Indexed {
			target = ml
			break
		}
	}
	if target.Path == "" {
		t.Fatal("fixture has no indexed topic")
	}
	dd, err := datadir.Open(dir, store.Options{NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	written := map[int64]bool{}
	res, err := index.Backfill(context.Background(), dd, index.BackfillOptions{
		Paths: []string{target.Path}, Apply: true,
		OnPlanned: func(p index.PlannedLedger) { written[p.LedgerID] = true },
	})
	if cerr := dd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Written == 0 || res.Written != int64(len(written)) {
		t.Fatalf("back-fill of %s wrote %d ledgers, planned %v", target.Path, res.Written, written)
	}
	got := checkCoverage(t, dir)
	for _, ml := range m.ManagedLedgers {
		tc, want := got[ml.Path], wantCoverage(ml)
		if ml.Path == target.Path {
			// The offloaded ledger is skipped, the open one is written but its
			// LedgerInfo has no entries yet: partial coverage.
			for _, l := range ml.Ledgers {
				if !l.Open && l.Entries > 0 && written[l.ID] {
					want.Covered++
				}
			}
			if want.Covered == 0 || want.Covered == want.WithEntries {
				t.Fatalf("want a partial back-fill of %s, got %d of %d ledgers", ml.Path, want.Covered, want.WithEntries)
			}
		}
		if tc != want {
			t.Errorf("%s: got %+v, want %+v", ml.Path, tc, want)
		}
	}
}
