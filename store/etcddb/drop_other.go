//go:build !linux

package etcddb

import bolt "go.etcd.io/bbolt"

// dropPages does nothing where madvise is not used: the db's pages stay resident
// until the db is closed.
func dropPages(*bolt.DB, int64) {}
