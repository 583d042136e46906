package index

import "github.com/ledgermedic/ledgermedic/cluster"

// Shard is cluster.Shard: back-fill keeps the managed ledgers whose node path
// the shard Has.
type Shard = cluster.Shard

// ParseShard is cluster.ParseShard.
func ParseShard(s string) (Shard, error) { return cluster.ParseShard(s) }
