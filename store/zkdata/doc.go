// Package zkdata is the read-only metadata store of a ZooKeeper dataDir read
// offline (zk-data:DIR[?chroot=/x]): the newest snapshot with the txn logs
// replayed over it (formats/zkdisk), optionally as of a zxid or a time.
package zkdata
