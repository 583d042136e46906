// Package zkdata is the read-only metadata store of a ZooKeeper dataDir read
// offline (zk-data:DIR[?chroot=/x]): the newest snapshot with the txn logs
// replayed over it (formats/zkdisk), optionally as of a zxid or a time. A
// dataDir whose files hold up to 64 MB is replayed into a tree in memory; a
// larger one is replayed one path at a time onto a sorted file on disk
// (spill.go, internal/spill) under store.Options.SandboxDir, removed by Close,
// so that memory does not grow with the cluster.
package zkdata
