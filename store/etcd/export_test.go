package etcd

import (
	"context"

	"github.com/ledgermedic/ledgermedic/store"
)

// EtcdReadsAsSpan says whether an etcd backend's GetNodes reads these paths (one
// chunk) as one range rather than a Txn of Gets.
func EtcdReadsAsSpan(b store.MetadataBackend, paths []string) bool {
	s, ok := b.(*etcdStore)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	_, span, err := s.getSpan(ctx, paths, make([]store.Node, len(paths)), 0)
	return err == nil && span
}

// CountedForTest is the keys an etcd backend's walks had the server count, and
// the pages they read.
func CountedForTest(b store.MetadataBackend) (keys, pages int64) {
	s := b.(*etcdStore)
	return s.counted.Load(), s.pages.Load()
}

// SetPageKeysForTest sets the most keys of a walk's page.
func SetPageKeysForTest(b store.MetadataBackend, n int64) { b.(*etcdStore).pageKeys = n }
