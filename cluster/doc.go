// Package cluster is the model of a Pulsar cluster that every feature shares: the
// rules that turn decoded metadata and stored entries into facts. Which managed
// ledgers a topic has (partitioned or not); of each ledger, whether it is the open
// last ledger, offloaded away, lost, what its firstEntryIndex is; whether a topic
// is indexed; positions; the property keys; schema type names.
//
// Each rule is written here once. It sits between formats/store (bytes and
// decoding) and the features (inspect, index, repair, fixtures), and imports
// neither features nor report.
package cluster
