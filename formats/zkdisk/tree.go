package zkdisk

import (
	"cmp"
	"slices"
	"strings"
)

// Node is one node of a replayed tree.
type Node struct {
	Path   string
	Data   []byte // nil: null data
	ACLRef int64
	Stat   Stat
	gone   bool // deleted by replay (kept in place until the tree is compacted)
}

// Kind says whether the node is persistent, ephemeral, a container or a TTL node.
func (n *Node) Kind() NodeKind { return KindOf(n.Stat.EphemeralOwner) }

// Tree is a ZooKeeper tree held as one slice sorted by path (byte order): about
// 130 bytes per node plus its path and data, and no per-node map. Nodes created
// during replay sit in a small side list until Compact merges them in.
type Tree struct {
	nodes []Node
	added []Node         // created by replay, unsorted
	index map[string]int // path -> position in added
	// owners lists ephemeral nodes by session, for closeSession.
	owners map[int64][]string
	dirty  bool
}

func newTree(nodes []Node) *Tree {
	sortNodes(nodes)
	// A snapshot never holds a path twice; if a damaged one does, keep the last.
	nodes = slices.CompactFunc(nodes, func(a, b Node) bool { return a.Path == b.Path })
	t := &Tree{nodes: nodes, index: map[string]int{}, owners: map[int64][]string{}}
	for i := range nodes {
		if o := nodes[i].Stat.EphemeralOwner; KindOf(o) == Ephemeral {
			t.owners[o] = append(t.owners[o], nodes[i].Path)
		}
	}
	return t
}

// sortNodes sorts by path moving 4-byte indexes rather than the ~130-byte
// nodes, then puts each node in place by following the permutation's cycles.
func sortNodes(nodes []Node) {
	idx := make([]int32, len(nodes))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int { return strings.Compare(nodes[a].Path, nodes[b].Path) })
	for i := range idx {
		if idx[i] < 0 {
			continue
		}
		tmp, j := nodes[i], i
		for {
			k := int(idx[j])
			idx[j] = -1
			if k == i {
				nodes[j] = tmp
				break
			}
			nodes[j] = nodes[k]
			j = k
		}
	}
}

// lookup finds a node, deleted ones included (the caller checks gone).
func (t *Tree) lookup(path string) *Node {
	if i, ok := slices.BinarySearchFunc(t.nodes, path, func(n Node, p string) int { return strings.Compare(n.Path, p) }); ok {
		return &t.nodes[i]
	}
	if i, ok := t.index[path]; ok {
		return &t.added[i]
	}
	return nil
}

// Get returns the live node at path.
func (t *Tree) Get(path string) (*Node, bool) {
	n := t.lookup(path)
	if n == nil || n.gone {
		return nil, false
	}
	return n, true
}

// put creates or revives a node.
func (t *Tree) put(n Node) {
	if old := t.lookup(n.Path); old != nil {
		*old = n
		return
	}
	t.index[n.Path] = len(t.added)
	t.added = append(t.added, n)
	t.dirty = true
}

func (t *Tree) remove(path string) bool {
	n := t.lookup(path)
	if n == nil || n.gone {
		return false
	}
	n.gone, n.Data = true, nil
	t.dirty = true
	return true
}

// Compact merges created nodes into the sorted slice and drops deleted ones, so
// Walk and Len see one sorted list.
func (t *Tree) Compact() {
	if !t.dirty {
		return
	}
	slices.SortFunc(t.added, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
	out := make([]Node, 0, len(t.nodes)+len(t.added))
	i, j := 0, 0
	for i < len(t.nodes) || j < len(t.added) {
		var n Node
		if j >= len(t.added) || (i < len(t.nodes) && t.nodes[i].Path < t.added[j].Path) {
			n, i = t.nodes[i], i+1
		} else {
			n, j = t.added[j], j+1
		}
		if !n.gone {
			out = append(out, n)
		}
	}
	t.nodes, t.added, t.index, t.dirty = out, nil, map[string]int{}, false
}

// Len is the number of live nodes (after Compact).
func (t *Tree) Len() int {
	t.Compact()
	return len(t.nodes)
}

// Walk calls fn for every live node whose path starts with prefix and is >=
// start, in path byte order. fn must not keep n past the call.
func (t *Tree) Walk(prefix, start string, fn func(n *Node) error) error {
	t.Compact()
	from := max(prefix, start)
	i, _ := slices.BinarySearchFunc(t.nodes, from, func(n Node, p string) int { return cmp.Compare(n.Path, p) })
	for ; i < len(t.nodes); i++ {
		n := &t.nodes[i]
		if !strings.HasPrefix(n.Path, prefix) {
			break
		}
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// Ephemerals counts live ephemeral nodes by owner session.
func (t *Tree) Ephemerals() map[int64]int {
	out := map[int64]int{}
	_ = t.Walk("", "", func(n *Node) error {
		if n.Kind() == Ephemeral {
			out[n.Stat.EphemeralOwner]++
		}
		return nil
	})
	return out
}
