package repair

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// A schema ledger whose /ledgers node cannot be read in full (its value-log
// tail is gone) still exists: repair plans around it, as check counts it
// present (cluster's rule), and still finds a lost version beside it. It used
// to end the plan with the node's read error.
func TestDamagedLedgerNodeIsPresent(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 7})
	capPath, _ := captureFile(t, dir)
	var damaged, lost *fixtures.SchemaVersion
	for _, s := range m.Schemas {
		for i := range s.Versions {
			v := &s.Versions[i]
			switch {
			case v.Deleted:
			case damaged == nil:
				damaged = v
			case lost == nil && v.Ledger != damaged.Ledger:
				lost = v
			}
		}
	}
	if damaged == nil || lost == nil {
		t.Fatal("the fixture has fewer than two schema versions with their own ledgers")
	}
	loseLedger(t, dir, lost.Ledger, true)

	// A value far above Badger's value threshold lives in the value log; it is
	// the last one written, so cutting the log's tail truncates it alone.
	path := formats.LedgerPath(damaged.Ledger)
	dd := openRW(t, dir)
	n, err := dd.Metadata.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Metadata.CompareAndSet(path, n.Version, bytes.Repeat([]byte("x"), 2<<20)); err != nil {
		t.Fatal(err)
	}
	closeDD(t, dd)
	testutil.TruncateValueLogs(t, dir, datadir.MetadataDirName, 1<<20)

	dd = testutil.OpenReadOnly(t, dir)
	defer closeDD(t, dd)
	if _, err := dd.Metadata.Get(path); !errors.Is(err, store.ErrTruncatedValue) {
		t.Fatalf("the test did not damage %s: Get gave %v", path, err)
	}
	rp, err := Plan(context.Background(), dd, loadCands(t, capPath), Options{})
	if err != nil {
		t.Fatalf("plan with a damaged ledger node: %v", err)
	}
	var gotLost bool
	for _, v := range rp.Versions {
		switch {
		case v.OldLedgerID == damaged.Ledger:
			t.Errorf("version on the damaged node's ledger %d planned as %s (%s): its node exists and its entry reads", damaged.Ledger, v.State, v.Reason)
		case v.OldLedgerID == lost.Ledger:
			gotLost = v.State == StateLostLedger && v.Action == ActionRestore
		}
	}
	if !gotLost {
		t.Errorf("the lost ledger %d beside the damaged node is not planned for restore: %+v", lost.Ledger, rp.Versions)
	}
}
