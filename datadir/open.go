package datadir

import (
	"fmt"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/bookie"
	"github.com/ledgermedic/ledgermedic/store/etcd"
	"github.com/ledgermedic/ledgermedic/store/etcddb"
	"github.com/ledgermedic/ledgermedic/store/zk"
	"github.com/ledgermedic/ledgermedic/store/zkdata"
)

func init() { store.SetMetadataOpener(openMetadataURL) }

// OpenMetadata opens only the metadata store a URL names (no data dir): for
// loading a generated cluster into a live store, and for tools that need no ledgers.
func OpenMetadata(u store.URL, opts store.Options) (store.MetadataBackend, error) {
	return openMetadataURL(u, opts)
}

// openMetadataURL opens the metadata backend a --metadata URL names: the one place
// where a scheme picks a backend.
func openMetadataURL(u store.URL, opts store.Options) (store.MetadataBackend, error) {
	switch u.Scheme {
	case store.SchemeZK:
		return zk.Open(u, opts)
	case store.SchemeZKData:
		return zkdata.Open(u, opts)
	case store.SchemeEtcd:
		return etcd.Open(u, opts)
	case store.SchemeEtcdDB:
		return etcddb.Open(u, opts)
	}
	return nil, fmt.Errorf("%w %q: scheme %s is not supported as a metadata store", store.ErrBadURL, u.Raw, u.Scheme)
}

// openLedgersURL opens the ledger backend a --ledgers URL names; meta is the
// metadata store already open (bookies find their ledgers' metadata there).
func openLedgersURL(u store.URL, opts store.Options, meta store.MetadataStore) (store.LedgerBackend, error) {
	switch u.Scheme {
	case store.SchemeBookie:
		bs, err := bookie.Open(u, opts)
		if err != nil {
			return nil, err
		}
		// Bookie dirs: digests are checked with each ledger's BookKeeper metadata.
		bs.SetLedgerMeta(bookie.LedgerMetaFromStore(meta))
		return bs, nil
	}
	if open, ok := store.RegisteredLedgerBackend(u.Scheme); ok {
		return open(u, meta, opts)
	}
	return nil, fmt.Errorf("%w %q: scheme %s is not supported as a ledger store", store.ErrBadURL, u.Raw, u.Scheme)
}
