// Package etcd is the metadata store of a live etcd (etcd://h1:2379,
// Pulsar's etcd:http://h1:2379,...): range reads in key order, and batches
// written as one Txn of version compares and puts that ends with a range read
// of what it wrote (store.ReadBackWriter).
package etcd
