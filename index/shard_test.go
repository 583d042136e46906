package index

import (
	"bytes"
	"fmt"
	"maps"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
)

func TestParseShard(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"0/1", Shard{0, 1}, true}, {"2/3", Shard{2, 3}, true}, {"3/3", Shard{}, false}, {"-1/3", Shard{}, false},
		{"1/0", Shard{}, false}, {"1", Shard{}, false}, {"a/b", Shard{}, false}, {"", Shard{}, false},
	} {
		got, err := ParseShard(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

// Every path is in exactly one shard of every shard count.
func TestShardsPartitionThePaths(t *testing.T) {
	for n := 1; n <= 7; n++ {
		counts := make([]int, n)
		for p := 0; p < 2000; p++ {
			path := fmt.Sprintf("/managed-ledgers/t%d/ns/persistent/topic-%d", p%13, p)
			in := 0
			for i := 0; i < n; i++ {
				if (Shard{I: i, N: n}).Has(path) {
					in++
					counts[i]++
				}
			}
			if in != 1 {
				t.Fatalf("n=%d: %s is in %d shards", n, path, in)
			}
		}
		for i, c := range counts {
			if n > 1 && c < 2000/n/2 {
				t.Errorf("n=%d: shard %d holds %d of 2000 paths: the hash does not spread", n, i, c)
			}
		}
	}
}

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
