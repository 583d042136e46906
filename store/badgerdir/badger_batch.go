package badgerdir

import (
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

func (m *metadataStore) GetNodes(paths []string) ([]store.Node, error) {
	nodes := make([]store.Node, len(paths))
	err := m.db.View(func(txn *badger.Txn) error {
		for i, path := range paths {
			nodes[i].Path = path
			item, err := txn.Get([]byte(path))
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return fmt.Errorf("metadata node %q: %w", path, err)
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return fmt.Errorf("metadata node %q: %w", path, err)
			}
			if err := checkNode(item, path, len(v)); err != nil {
				return err // names the path
			}
			nodes[i].Value, nodes[i].Version = v, item.Version()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

func (m *metadataStore) CompareAndSetNodes(writes []store.NodeWrite) ([]uint64, error) {
	what := store.DescribeWrites(writes)
	if m.readOnly {
		return nil, fmt.Errorf("%s: %w", what, store.ErrReadOnly)
	}
	paths := make([]string, len(writes))
	seen := make(map[string]bool, len(writes))
	for i, w := range writes {
		if seen[w.Path] {
			return nil, fmt.Errorf("%s: node %q written twice in one batch", what, w.Path)
		}
		seen[w.Path] = true
		paths[i] = w.Path
	}
	err := m.db.Update(func(txn *badger.Txn) error {
		// Check every version first (each read joins the transaction's read set, so
		// a concurrent write to any of them makes the commit fail), to name them all.
		var mismatches []error
		for _, w := range writes {
			err := checkVersion(txn, []byte(w.Path), w.Expect)
			if w.Delete && w.Expect == 0 && err == nil {
				err = fmt.Errorf("%w: expected version 0 (absent)", store.ErrVersionMismatch)
			}
			if errors.Is(err, store.ErrVersionMismatch) {
				mismatches = append(mismatches, fmt.Errorf("node %q: %w", w.Path, err))
				continue
			}
			if err != nil {
				return fmt.Errorf("node %q: %w", w.Path, err)
			}
		}
		if len(mismatches) > 0 {
			return errors.Join(mismatches...)
		}
		for _, w := range writes {
			var err error
			if w.Delete {
				err = txn.Delete([]byte(w.Path))
			} else {
				err = txn.Set([]byte(w.Path), store.NonNilValue(w.Value))
			}
			if errors.Is(err, badger.ErrTxnTooBig) {
				return store.ErrBatchTooBig
			}
			if err != nil {
				return fmt.Errorf("node %q: %w", w.Path, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, mapTxnError(err))
	}
	// Badger does not expose a commit's timestamp: read the versions back. Only this
	// process can write (it holds the directory lock).
	nodes, err := m.GetNodes(paths)
	if err != nil {
		return nil, fmt.Errorf("%s: read back: %w", what, err)
	}
	versions := make([]uint64, len(nodes))
	for i, n := range nodes {
		versions[i] = n.Version
	}
	return versions, nil
}

func (l *ledgerStore) PutEntries(entries []store.EntryWrite) error {
	if len(entries) == 0 {
		return nil
	}
	what := fmt.Sprintf("put %d entries (ledger %d entry %d first)", len(entries), entries[0].LedgerID, entries[0].EntryID)
	if l.readOnly {
		return fmt.Errorf("%s: %w", what, store.ErrReadOnly)
	}
	err := l.db.Update(func(txn *badger.Txn) error {
		for _, e := range entries {
			err := txn.Set(EntryKey(e.LedgerID, e.EntryID), store.NonNilValue(e.Value))
			if errors.Is(err, badger.ErrTxnTooBig) {
				return store.ErrBatchTooBig
			}
			if err != nil {
				return fmt.Errorf("ledger %d entry %d: %w", e.LedgerID, e.EntryID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, mapTxnError(err))
	}
	return nil
}

var (
	_ store.NodeBatcher  = (*metadataStore)(nil)
	_ store.EntryBatcher = (*ledgerStore)(nil)
)
