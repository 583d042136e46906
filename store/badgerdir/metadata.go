package badgerdir

import (
	"context"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

// metadataStore is the MetadataStore of a data dir's metadata/ Badger database.
// A node's Version is the Badger commit timestamp of its latest write.
type metadataStore struct {
	db       *badger.DB
	readOnly bool
	dir      string // the data dir, for errors
}

func (m *metadataStore) Get(path string) (store.Node, error) {
	var n store.Node
	err := m.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(path))
		if err != nil {
			return fmt.Errorf("metadata node %q: %w", path, mapTxnError(err))
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return fmt.Errorf("metadata node %q: %w", path, err)
		}
		if err := checkNode(item, path, len(v)); err != nil {
			return err // names the path
		}
		n = store.Node{Path: path, Value: v, Version: item.Version()}
		return nil
	})
	if err != nil {
		return store.Node{}, err
	}
	return n, nil
}

func (m *metadataStore) Walk(ctx context.Context, prefix string, fn func(store.Node) error) error {
	return m.WalkFrom(ctx, prefix, "", fn)
}

// WalkFrom reads walkTxnNodes nodes per read transaction, each resuming at the
// first path the one before did not hand over, so the walk is not one snapshot
// (no store's is). While a read transaction is open, Badger keeps the conflict
// keys of every write committed after it began (its oracle's committedTxns) and
// the marks of every later read: a back-fill whose walk held one transaction
// for the whole run, while its batches were written, grew by them (24 MB of a
// 4.7M-ledger run's heap: docs/benchmarks.md).
func (m *metadataStore) WalkFrom(ctx context.Context, prefix, start string, fn func(store.Node) error) error {
	from := []byte(max(prefix, start))
	for {
		var next []byte // the first node the transaction did not hand over
		err := m.db.View(func(txn *badger.Txn) error {
			n := 0
			return Iterate(ctx, txn, ScanOptions([]byte(prefix)), from, func(item *badger.Item) error {
				if n == walkTxnNodes {
					next = item.KeyCopy(nil)
					return ErrStopIteration
				}
				n++
				return item.Value(func(v []byte) error {
					path := string(item.Key())
					if err := checkNode(item, path, len(v)); err != nil {
						return err
					}
					return fn(store.Node{Path: path, Value: v, Version: item.Version()})
				})
			})
		})
		if err != nil || next == nil {
			return err
		}
		from = next
	}
}

// walkTxnNodes nodes are read in one transaction of a walk: a new transaction
// and iterator cost about as much as reading a few dozen nodes. (A variable so
// that a test can walk across transactions with a few nodes.)
var walkTxnNodes = 4096

// CompareAndSet also wraps ErrNotFound with ErrVersionMismatch when expect is not 0
// and the node is gone.
func (m *metadataStore) CompareAndSet(path string, expect uint64, value []byte) (uint64, error) {
	if m.readOnly {
		return 0, fmt.Errorf("set metadata node %q: %w", path, store.ErrReadOnly)
	}
	key := []byte(path)
	err := m.db.Update(func(txn *badger.Txn) error {
		if err := checkVersion(txn, key, expect); err != nil {
			return err
		}
		return txn.Set(key, value)
	})
	if err != nil {
		return 0, fmt.Errorf("set metadata node %q: %w", path, mapTxnError(err))
	}
	// Badger does not expose a transaction's commit timestamp, so read it back. Only this
	// process can write (it holds the directory lock), so the version read is ours unless
	// another goroutine wrote the same node in between.
	n, err := m.Get(path)
	if err != nil {
		return 0, fmt.Errorf("read back after set: %w", err)
	}
	return n.Version, nil
}

// CompareAndDelete also wraps ErrNotFound with ErrVersionMismatch when the node is gone.
func (m *metadataStore) CompareAndDelete(path string, expect uint64) error {
	if m.readOnly {
		return fmt.Errorf("delete metadata node %q: %w", path, store.ErrReadOnly)
	}
	if expect == 0 {
		return fmt.Errorf("delete metadata node %q: %w: expected version 0 (absent)", path, store.ErrVersionMismatch)
	}
	key := []byte(path)
	err := m.db.Update(func(txn *badger.Txn) error {
		if err := checkVersion(txn, key, expect); err != nil {
			return err
		}
		return txn.Delete(key)
	})
	if err != nil {
		return fmt.Errorf("delete metadata node %q: %w", path, mapTxnError(err))
	}
	return nil
}

// checkVersion reads key inside txn (adding it to the txn's read set, so a concurrent
// write makes the commit fail with a conflict) and compares its version with expect.
func checkVersion(txn *badger.Txn, key []byte, expect uint64) error {
	item, err := txn.Get(key)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		if expect != 0 {
			return fmt.Errorf("%w: expected version %d, node does not exist (%w)", store.ErrVersionMismatch, expect, store.ErrNotFound)
		}
		return nil
	case err != nil:
		return err
	case expect == 0:
		return fmt.Errorf("%w: expected no node, found version %d", store.ErrVersionMismatch, item.Version())
	case item.Version() != expect:
		return fmt.Errorf("%w: expected version %d, found %d", store.ErrVersionMismatch, expect, item.Version())
	}
	return nil
}
