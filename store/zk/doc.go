// Package zk is the metadata store of a live ZooKeeper (zk://h1:2181,h2:2181/chroot,
// Pulsar's zk:h1:2181/chroot): a go-zookeeper session for writes (one multi per
// batch, compare-and-set on the node version), and a read session of its own
// that batches getData/getChildren into multiRead requests (multiread.go, the
// jute codec in jute.go) with walks in path order (walk.go).
package zk
