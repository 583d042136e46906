package store

import (
	"errors"
	"fmt"
	"strings"
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

// describeWrites names a batch in errors: its paths, or the first few of them.
func DescribeWrites(writes []NodeWrite) string {
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
func NonNilValue(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// CompareAndSetOne is MetadataStore.CompareAndSet for a store whose writes are
// batches (NodeBatcher): a batch of one write.
func CompareAndSetOne(b NodeBatcher, path string, expect uint64, value []byte) (uint64, error) {
	v, err := b.CompareAndSetNodes([]NodeWrite{{Path: path, Expect: expect, Value: value}})
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// CompareAndDeleteOne is MetadataStore.CompareAndDelete for a store whose writes
// are batches: a batch of one delete.
func CompareAndDeleteOne(b NodeBatcher, path string, expect uint64) error {
	_, err := b.CompareAndSetNodes([]NodeWrite{{Path: path, Expect: expect, Delete: true}})
	return err
}

// BatchNodes is the batched view of a metadata store: its own NodeBatcher
// (batched true), or one that writes one node per call (batched false; a caller
// gives it one write at a time, so a failed call wrote nothing).
func BatchNodes(ms MetadataStore) (nb NodeBatcher, batched bool) {
	if nb, ok := ms.(NodeBatcher); ok {
		return nb, true
	}
	return oneNodeAtATime{ms}, false
}

// BatchEntries is the batched view of a ledger store: its own EntryBatcher, or
// one that puts the entries one by one.
func BatchEntries(ls LedgerStore) EntryBatcher {
	if eb, ok := ls.(EntryBatcher); ok {
		return eb
	}
	return oneEntryAtATime{ls}
}

// oneNodeAtATime serves a metadata store that has no batch operations: one node per
// step (the engine never gives it more), so a failed step wrote nothing.
type oneNodeAtATime struct{ md MetadataStore }

func (s oneNodeAtATime) GetNodes(paths []string) ([]Node, error) {
	nodes := make([]Node, len(paths))
	for i, p := range paths {
		n, err := s.md.Get(p)
		switch {
		case errors.Is(err, ErrNotFound):
			nodes[i] = Node{Path: p}
		case err != nil:
			return nil, err
		default:
			nodes[i] = n
		}
	}
	return nodes, nil
}

func (s oneNodeAtATime) CompareAndSetNodes(writes []NodeWrite) ([]uint64, error) {
	if len(writes) != 1 {
		return nil, fmt.Errorf("%d node writes: %w", len(writes), ErrBatchTooBig)
	}
	w := writes[0]
	if w.Delete {
		return []uint64{0}, s.md.CompareAndDelete(w.Path, w.Expect)
	}
	v, err := s.md.CompareAndSet(w.Path, w.Expect, w.Value)
	return []uint64{v}, err
}

// oneEntryAtATime serves a ledger store that has no batch write. A step that fails
// half-way leaves some entries; rolling back a new ledger removes all of its entries.
type oneEntryAtATime struct{ ls LedgerStore }

func (s oneEntryAtATime) PutEntries(entries []EntryWrite) error {
	for _, e := range entries {
		if err := s.ls.PutEntry(e.LedgerID, e.EntryID, e.Value); err != nil {
			return err
		}
	}
	return nil
}
