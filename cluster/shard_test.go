package cluster

import (
	"fmt"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats"
)

func TestParseShard(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"0/1", Shard{I: 0, N: 1}, true}, {"2/3", Shard{I: 2, N: 3}, true}, {"3/3", Shard{}, false}, {"-1/3", Shard{}, false},
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

// A topic's partitions and its schema locator are in the topic's shard, and a
// non-partitioned persistent topic in the shard back-fill gives its managed ledger.
func TestTopicShardKeepsATopicTogether(t *testing.T) {
	for n := 2; n <= 5; n++ {
		s := Shard{I: 0, N: n}
		for i := range 50 {
			base, err := formats.ParseTopic(fmt.Sprintf("persistent://t/ns/topic-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			want := s.TopicOf(base)
			if want != s.Of(base.ManagedLedgerPath()) {
				t.Errorf("n=%d: %s is in shard %d, its managed ledger in %d", n, base, want, s.Of(base.ManagedLedgerPath()))
			}
			loc, _ := formats.ParseSchemaLocatorPath(base.SchemaLocatorPath())
			np := base
			np.Domain = formats.DomainNonPersistent
			for _, other := range []formats.TopicName{base.Partition(0), base.Partition(7), loc, np} {
				if got := s.TopicOf(other); got != want {
					t.Errorf("n=%d: %s is in shard %d, %s in %d", n, other, got, base, want)
				}
			}
		}
	}
}
