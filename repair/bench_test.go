package repair

import (
	"context"
	"io"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// BenchmarkPlan plans the repair of a 50-topic cluster with 4 lost versions
// (the whole metadata walk for ledger ids included).
func BenchmarkPlan(b *testing.B) {
	dir, m := testutil.Fixture(b, fixtures.Options{Seed: 1, Topics: 50, LoseSchemaLedgers: 3, LoseSchemaEntries: 1})
	cands, _, err := LoadCandidates([]string{manifestCapture(b, m, nil)})
	if err != nil {
		b.Fatal(err)
	}
	dd := testutil.OpenReadOnly(b, dir)
	defer dd.Close()
	b.ResetTimer()
	for b.Loop() {
		rp, err := Plan(context.Background(), dd, cands, Options{})
		if err != nil || rp.Restored() != 4 {
			b.Fatalf("restored %d: %v", rp.Restored(), err)
		}
	}
}

// BenchmarkCapture captures every schema version of a 50-topic cluster.
func BenchmarkCapture(b *testing.B) {
	dir, _ := testutil.Fixture(b, fixtures.Options{Seed: 1, Topics: 50})
	dd := testutil.OpenReadOnly(b, dir)
	defer dd.Close()
	for b.Loop() {
		if _, err := Capture(context.Background(), dd, "", io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
