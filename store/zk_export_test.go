package store

// OpenMetadataURLForTest lets the external tests (package store_test: they use
// internal/testutil, which imports store) open a backend through the dispatch
// switch without a data dir. Shared by the ZooKeeper and etcd tests.
var OpenMetadataURLForTest = openMetadataURL
