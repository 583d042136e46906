// Package bookie is the read-only ledger store of bookie dirs read offline
// (bookie:DIR[,bookie:DIR...]): entry logs and journals (formats/bkdisk) indexed
// once into a Badger database in the user's cache dir (index.go), replicas merged
// across the dirs, each BookKeeper digest checked with the ledger's metadata
// (SetLedgerMeta), and the replica findings check reports (store.ReplicaReporter).
package bookie
