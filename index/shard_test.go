package index

import (
	"bytes"
	"maps"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
)

// Back-filling shard by shard ends byte-identical to one unsharded run, and each
// shard writes only its own topics.
func TestBackfillByShardsEqualsOneRun(t *testing.T) {
	opts := fixtures.Options{Seed: 9, Topics: 6}
	whole, _ := generate(t, opts)
	backfill(t, whole, BackfillOptions{Apply: true})
	want := snapshot(t, whole)

	dd, m := generate(t, opts)
	seen := map[string]int{}
	for i := 0; i < 3; i++ {
		before := snapshot(t, dd)
		backfill(t, dd, BackfillOptions{Apply: true, Shard: Shard{I: i, N: 3}})
		after := snapshot(t, dd)
		for p, v := range after {
			if !bytes.Equal(before[p], v) {
				if !(Shard{I: i, N: 3}).Has(p) {
					t.Errorf("shard %d/3 wrote %s, which belongs to another shard", i, p)
				}
				seen[p]++
			}
		}
	}
	if !maps.EqualFunc(want, snapshot(t, dd), bytes.Equal) {
		t.Fatal("three shards did not end where one run ends")
	}
	for _, ml := range m.ManagedLedgers {
		if seen[ml.Path] > 1 {
			t.Errorf("%s written by %d shards", ml.Path, seen[ml.Path])
		}
	}
	if len(seen) == 0 {
		t.Fatal("no shard wrote anything: the fixture has nothing to back-fill")
	}
}
