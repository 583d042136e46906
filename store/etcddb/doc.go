// Package etcddb is the read-only metadata store of an etcd member's bbolt db
// read offline (etcd-db:PATH, member/snap/db): the newest revision of each key,
// or the state as of a revision (formats/etcddisk decodes the key bucket's
// records and the WAL). A db of up to 128 MB is held in memory, its values read
// from bbolt's mmap; a larger one is read once onto a sorted file on disk
// (spill.go, internal/spill) under store.Options.SandboxDir, removed by Close,
// and the db closed, so that memory does not grow with the cluster. A db a
// running etcd holds locked is read from a copy in a temp dir.
package etcddb
