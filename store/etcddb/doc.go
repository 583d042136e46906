// Package etcddb is the read-only metadata store of an etcd member's bbolt db
// read offline (etcd-db:PATH, member/snap/db): the newest revision of each key,
// or the state as of a revision (decode.go decodes the key bucket's records).
// A db a running etcd holds locked is read from a copy in a temp dir.
package etcddb
