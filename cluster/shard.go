package cluster

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats"
)

// Shard is shard I of N (0 <= I < N) of a cluster, for n processes that each do
// a part (index backfill --shard, check --shard). The zero value is the whole
// cluster. A path belongs to the shard it hashes to: FNV-1a (64-bit) of the path
// modulo N, stable across runs, machines and versions, so n processes given 0/n
// .. n-1/n cover every path exactly once.
type Shard struct {
	I, N int
}

// ParseShard reads "i/n".
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 0 <= I < N, e.g. 0/4", s)
	}
	return Shard{I: i, N: n}, nil
}

// Has reports whether the node at path belongs to the shard (back-fill: the
// managed-ledger path).
func (s Shard) Has(path string) bool { return s.Of(path) == s.I }

// Of is the shard of path, 0 <= Of < N (0 for the whole cluster).
func (s Shard) Of(path string) int {
	if s.N <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(path))
	return int(h.Sum64() % uint64(s.N))
}

// TopicOf is the shard of a topic as check cuts a cluster: Of the managed-ledger
// path of its persistent base topic. A non-partitioned persistent topic is in
// the shard back-fill gives its managed ledger; the partitions of a topic and its
// schema locator (one per base topic, no domain) go with it, because the schema
// and the schema usage of a partitioned topic are one.
func (s Shard) TopicOf(t formats.TopicName) int {
	b := t.Base()
	b.Domain = formats.DomainPersistent
	return s.Of(b.ManagedLedgerPath())
}

// LedgerOf is the shard of a ledger that no topic owns: Of its ledger node path.
func (s Shard) LedgerOf(id int64) int { return s.Of(formats.LedgerPath(id)) }

func (s Shard) String() string {
	if s.N <= 1 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}
