package index

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is shard I of N (0 <= I < N): the managed ledgers whose node path hashes
// to I. The zero value is the whole cluster. The hash is FNV-1a (64-bit) of the
// managed-ledger path modulo N: stable across runs, machines and versions, so n
// processes given 0/n .. n-1/n cover every topic exactly once.
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

// Has reports whether the managed ledger at path belongs to the shard.
func (s Shard) Has(path string) bool {
	if s.N <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(path))
	return h.Sum64()%uint64(s.N) == uint64(s.I)
}

func (s Shard) String() string {
	if s.N <= 1 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}
