package store

import (
	"errors"
	"fmt"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
)

// ErrBatchTooBig: a batch does not fit in one transaction of the store. Nothing was
// written; split the batch and retry.
var ErrBatchTooBig = errors.New("batch too big for one transaction")

// ErrNodeTooBig: one node's write is over the largest request the store takes, so
// no split of its batch can carry it. Nothing was written.
var ErrNodeTooBig = errors.New("node too big for the store")

// NodeSizeLimiter is a store that takes nodes up to a size (a live server's request
// limit), so a writer can refuse one over it before it writes anything.
type NodeSizeLimiter interface {
	// CheckNodeSize is nil when a write of a value of size bytes at path fits in one
	// request, else ErrNodeTooBig naming the node, its size and the limit.
	CheckNodeSize(path string, size int) error
}

// NodeWrite is one change of an atomic multi-node compare-and-set.
type NodeWrite struct {
	Path string
	// Expect is the node's version as read; 0 means the node must not exist.
	Expect uint64
	// Value is the node's new bytes (unused when Delete).
	Value []byte
	// Delete removes the node instead (Expect must then be its version).
	Delete bool
}

// NodeBatcher is a MetadataStore that reads and changes many nodes at once. The
// metadata store of a Badger data dir implements it.
type NodeBatcher interface {
	// GetNodes reads every path from one snapshot, in order. A node that does not
	// exist comes back with Version 0 and a nil Value (real versions start at 1).
	// Values are copies.
	GetNodes(paths []string) ([]Node, error)
	// CompareAndSetNodes applies every write or none, in one transaction and one
	// durable commit. Every node's version must equal its write's Expect; otherwise
	// it returns ErrVersionMismatch naming each path that differs and writes
	// nothing. It returns each node's new version (0 for a deleted node).
	// ErrBatchTooBig: the writes do not fit in one transaction; nothing was written.
	CompareAndSetNodes(writes []NodeWrite) ([]uint64, error)
}

// ReadBackWriter is a NodeBatcher whose compare-and-set can also read the nodes
// back in its own transaction, after its writes, so the caller's verification
// needs no second request. The etcd backend implements it (a Txn's Then branch
// reads what its puts wrote).
type ReadBackWriter interface {
	// CompareAndSetNodesReadBack is CompareAndSetNodes that also returns each
	// written node as the transaction left it, in the writes' order (Version 0
	// and a nil Value: absent). It returns nil nodes, the writes still applied,
	// when the transaction could not carry the read: the caller then reads them.
	CompareAndSetNodesReadBack(writes []NodeWrite) ([]uint64, []Node, error)
}

// EntryWrite is one entry of a multi-entry write.
type EntryWrite struct {
	LedgerID, EntryID int64
	Value             []byte
}

// EntryBatcher is a LedgerStore that writes many entries at once. The ledger store
// of a Badger data dir implements it.
type EntryBatcher interface {
	// PutEntries writes every entry or none, in one transaction and one durable
	// commit. ErrBatchTooBig: they do not fit in one transaction; nothing was written.
	PutEntries(entries []EntryWrite) error
}

func (m *metadataStore) GetNodes(paths []string) ([]Node, error) {
	nodes := make([]Node, len(paths))
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

func (m *metadataStore) CompareAndSetNodes(writes []NodeWrite) ([]uint64, error) {
	what := describeWrites(writes)
	if m.readOnly {
		return nil, fmt.Errorf("%s: %w", what, ErrReadOnly)
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
				err = fmt.Errorf("%w: expected version 0 (absent)", ErrVersionMismatch)
			}
			if errors.Is(err, ErrVersionMismatch) {
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
				err = txn.Set([]byte(w.Path), nonNilValue(w.Value))
			}
			if errors.Is(err, badger.ErrTxnTooBig) {
				return ErrBatchTooBig
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

// describeWrites names a batch in errors: its paths, or the first few of them.
func describeWrites(writes []NodeWrite) string {
	const show = 3
	var names []string
	for i, w := range writes {
		if i == show {
			names = append(names, fmt.Sprintf("and %d more", len(writes)-show))
			break
		}
		names = append(names, fmt.Sprintf("%q", w.Path))
	}
	return fmt.Sprintf("set %d metadata node(s) %s", len(writes), strings.Join(names, ", "))
}

// nonNilValue stores a nil value as an empty one: Badger treats both alike, but a
// caller comparing bytes may not.
func nonNilValue(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func (l *ledgerStore) PutEntries(entries []EntryWrite) error {
	if len(entries) == 0 {
		return nil
	}
	what := fmt.Sprintf("put %d entries (ledger %d entry %d first)", len(entries), entries[0].LedgerID, entries[0].EntryID)
	if l.readOnly {
		return fmt.Errorf("%s: %w", what, ErrReadOnly)
	}
	err := l.db.Update(func(txn *badger.Txn) error {
		for _, e := range entries {
			err := txn.Set(EntryKey(e.LedgerID, e.EntryID), nonNilValue(e.Value))
			if errors.Is(err, badger.ErrTxnTooBig) {
				return ErrBatchTooBig
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
	_ NodeBatcher  = (*metadataStore)(nil)
	_ EntryBatcher = (*ledgerStore)(nil)
)
