package store

import (
	"fmt"
)

// AheadReader answers Gets of nodes read ahead in batches, and of any other node
// from the store. A live store answers a batch in one round trip where a Get per
// node cost one each (thousands of topics: seconds).
type AheadReader struct {
	ms    MetadataStore
	nodes map[string]Node // Version 0: the node does not exist
}

// readAheadBatch nodes are read at once: etcd's default limit of operations per
// transaction is 128.
const readAheadBatch = 100

// ReadAhead reads paths ahead, in batches where the store batches reads (its
// GetNodes, as NodeBatcher's). A batch that fails (a truncated value, say) is
// left to the Gets, which say what is wrong with each node as the store's Get does.
func ReadAhead(ms MetadataStore, paths []string) *AheadReader {
	r := &AheadReader{ms: ms, nodes: make(map[string]Node)}
	nb, ok := ms.(interface {
		GetNodes(paths []string) ([]Node, error)
	})
	if !ok {
		return r
	}
	for start := 0; start < len(paths); start += readAheadBatch {
		chunk := paths[start:min(start+readAheadBatch, len(paths))]
		nodes, err := nb.GetNodes(chunk)
		if err != nil {
			continue
		}
		for i, n := range nodes {
			r.nodes[chunk[i]] = n
		}
	}
	return r
}

// Get is the store's Get, from the nodes read ahead when it has them, with the
// store's own not-found error.
func (r *AheadReader) Get(path string) (Node, error) {
	n, ok := r.nodes[path]
	switch {
	case !ok:
		return r.ms.Get(path)
	case n.Version == 0:
		return Node{}, fmt.Errorf("metadata node %q: %w", path, ErrNotFound)
	}
	return n, nil
}
