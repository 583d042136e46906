package inspect

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// TestPassRangesDoNotChangeResults: Check (with the schema-usage count in its
// pass) and SchemaUsage give the same findings, stats and report whether the
// store is read as one range by one worker or as ranges of one to three ledgers
// by several workers, which finish them out of order.
func TestPassRangesDoNotChangeResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dd")
	_, err := fixtures.Generate(context.Background(), dir, fixtures.Options{
		Seed: 3, Topics: 9, LedgersPerTopic: 4, EntriesPerLedger: 60,
		LoseSchemaLedgers: 1, LoseTopicLedger: true, LoseEntriesOnly: true, OrphanLedger: true,
		CorruptCRC: true, DeleteSchemaHistory: 1, ResetSchemaHistory: 1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := datadir.Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	ctx := context.Background()
	run := func(workers int) ([]report.Finding, *CheckStats, *UsageReport) {
		fs, stats, err := Check(ctx, dd, CheckOptions{SchemaUsage: true, Workers: workers}, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, err := SchemaUsage(ctx, dd, UsageOptions{Workers: workers}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fs, stats, u
	}
	rangesForTest = func(*datadir.DataDir) []store.LedgerRange { return []store.LedgerRange{store.WholeLedgerStore} }
	defer func() { rangesForTest = nil }()
	wantF, wantS, wantU := run(1)
	if len(wantF) == 0 || wantS.Entries == 0 || wantU.Entries == 0 {
		t.Fatalf("nothing found: %d findings, %d entries", len(wantF), wantS.Entries)
	}
	var ids []int64
	if err := dd.Ledgers.LedgerIDs(ctx, func(id, _ int64) error { ids = append(ids, id); return nil }); err != nil {
		t.Fatal(err)
	}
	rangesForTest = func(*datadir.DataDir) []store.LedgerRange {
		var rs []store.LedgerRange
		first := uint64(0)
		for i := 0; i < len(ids); i += 1 + i%3 {
			if i > 0 {
				rs = append(rs, store.LedgerRange{First: first, End: uint64(ids[i]), HasEnd: true})
				first = uint64(ids[i])
			}
		}
		return append(rs, store.LedgerRange{First: first})
	}
	if n := len(rangesForTest(dd)); n < 10 {
		t.Fatalf("only %d ranges", n)
	}
	for _, workers := range []int{1, 3} {
		fs, stats, u := run(workers)
		if !reflect.DeepEqual(fs, wantF) {
			t.Errorf("workers %d: check findings differ:\n%v\nwant\n%v", workers, got(fs), got(wantF))
		}
		if !reflect.DeepEqual(stats, wantS) {
			t.Errorf("workers %d: stats %+v, want %+v", workers, stats, wantS)
		}
		if !reflect.DeepEqual(u, wantU) {
			t.Errorf("workers %d: schema usage differs", workers)
		}
	}
}
