package zkdisk

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ledgermedic/ledgermedic/internal/radix"
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

// Tree is a ZooKeeper tree held as one slice in path order (byte order): about
// 130 bytes per node plus its path and data, and no per-node map. Nodes created
// during replay sit in a small side list until Compact merges them in.
type Tree struct {
	nodes []Node
	// order, when not nil, is the path order of nodes, which are then in the
	// order a snapshot holds them: placing each 120-byte node at its sorted
	// position was most of the cost of loading one. nil: nodes are sorted.
	order []int32
	added []Node         // created by replay, unsorted
	index map[string]int // path -> position in added
	// owners lists ephemeral nodes by session, for closeSession.
	owners map[int64][]string
	dirty  bool
}

// newTree sorts nodes into a tree. parents, when not nil, gives each node's
// parent index (-1 for the root) as a pre-order snapshot yields them.
func newTree(nodes []Node, parents []int32) *Tree {
	var names []string
	if parents != nil {
		names = make([]string, len(nodes))
		for i := range nodes {
			p := nodes[i].Path
			names[i] = p[strings.LastIndexByte(p, '/')+1:]
		}
	}
	perm, dups := treeOrder(nodes, names, parents)
	permute(nodes, perm)
	return sortedTree(nodes, dups)
}

// sortedTree makes a tree of nodes already in path order (equal paths in file
// order); dups says whether any path is there twice.
func sortedTree(nodes []Node, dups bool) *Tree {
	if dups {
		// A snapshot never holds a path twice; if a damaged one does, keep the
		// last, as ZooKeeper's deserialize does.
		out := nodes[:0]
		for i := range nodes {
			if len(out) > 0 && out[len(out)-1].Path == nodes[i].Path {
				out[len(out)-1] = nodes[i]
				continue
			}
			out = append(out, nodes[i])
		}
		clear(nodes[len(out):]) // drop references to overwritten duplicates
		nodes = out
	}
	t := &Tree{nodes: nodes, index: map[string]int{}, owners: map[int64][]string{}}
	for i := range nodes {
		if o := nodes[i].Stat.EphemeralOwner; KindOf(o) == Ephemeral {
			t.owners[o] = append(t.owners[o], nodes[i].Path)
		}
	}
	return t
}

// orderedTree makes a tree of nodes in any order and their path order (no path
// twice).
func orderedTree(nodes []Node, order []int32) *Tree {
	t := sortedTree(nodes, false)
	t.order = order
	return t
}

// treeOrder is the permutation sorting nodes by path (byte order; equal paths
// in index order), and whether two paths are equal. With parents (and names,
// each path's last component) it orders each parent's children by name
// instead of all paths globally.
func treeOrder(nodes []Node, names []string, parents []int32) (perm []int32, dups bool) {
	if perm, ok := childOrder(names, parents); ok {
		return perm, false
	}
	paths := make([]string, len(nodes))
	for i := range nodes {
		paths[i] = nodes[i].Path
	}
	idx := make([]int32, len(paths))
	for i := range idx {
		idx[i] = int32(i)
	}
	rs := radix.New(paths, len(idx), false)
	rs.Sort(idx, 0, 0)
	return idx, rs.Dups()
}

// permute puts nodes[perm[k]] at k, moving each ~130-byte node once by
// following the permutation's cycles (perm is consumed).
func permute(nodes []Node, perm []int32) {
	for i := range perm {
		if perm[i] < 0 {
			continue
		}
		tmp, j := nodes[i], i
		for {
			k := int(perm[j])
			perm[j] = -1
			if k == i {
				nodes[j] = tmp
				break
			}
			nodes[j] = nodes[k]
			j = k
		}
	}
}

// parentTracker finds each node's parent while a snapshot is read: ZooKeeper
// writes the tree in pre-order, so the parent is on the stack of the current
// node's ancestors. ok turns false on anything else (a path with an empty
// component, a node before its parent, a second root), and the tree is then
// sorted by whole paths instead.
type parentTracker struct {
	parents []int32
	stack   []int32
	paths   []string // the stack's paths
	ok      bool
}

func newParentTracker(capacity int) *parentTracker {
	return &parentTracker{parents: make([]int32, 0, capacity), ok: true}
}

// add records the parent of the next node, whose path is p; slash is the
// position of p's last '/' (-1: none).
func (pt *parentTracker) add(p string, slash int) {
	if !pt.ok {
		return
	}
	i := int32(len(pt.parents))
	if p == "/" {
		pt.ok = i == 0
		pt.parents, pt.stack, pt.paths = append(pt.parents, -1), append(pt.stack, i), append(pt.paths, p)
		return
	}
	parent := p[:max(slash, 0)]
	if slash == 0 {
		parent = "/"
	}
	if slash < 0 || slash == len(p)-1 || (slash > 0 && parent[slash-1] == '/') {
		pt.ok = false
		return
	}
	for len(pt.stack) > 0 && pt.paths[len(pt.paths)-1] != parent {
		pt.stack, pt.paths = pt.stack[:len(pt.stack)-1], pt.paths[:len(pt.paths)-1]
	}
	if len(pt.stack) == 0 {
		pt.ok = false
		return
	}
	pt.parents = append(pt.parents, pt.stack[len(pt.stack)-1])
	pt.stack, pt.paths = append(pt.stack, i), append(pt.paths, p)
}

// result is the parents for newTree, or nil when the file was not a clean
// pre-order.
func (pt *parentTracker) result() []int32 {
	if !pt.ok {
		return nil
	}
	return pt.parents
}

// childOrder is the permutation sorting nodes by path, built from the parent
// links: each parent's children are sorted by name (short keys, no shared
// prefix to re-read), then emitted depth first. ok is false when parents is
// nil or does not describe one tree of distinct paths rooted at node 0.
func childOrder(names []string, parents []int32) ([]int32, bool) {
	n := len(names)
	if parents == nil || len(parents) != n || n == 0 || parents[0] != -1 {
		return nil, false
	}
	// Children lists in one array: kids[start[p]:start[p+1]] are p's.
	start := make([]int32, n+1)
	for _, p := range parents[1:] {
		if p < 0 {
			return nil, false
		}
		start[p+1]++
	}
	for i := range n {
		start[i+1] += start[i]
	}
	kids := make([]int32, n)
	fill := slices.Clone(start[:n])
	for i, p := range parents[1:] {
		kids[fill[p]] = int32(i + 1)
		fill[p]++
	}
	// Two goroutines sort the sibling lists, each about half of the children;
	// their scratch space is disjoint (each list's own part of kids).
	rs := radix.New(names, n, false)
	rs2 := rs.Sibling()
	sortLists := func(rs *radix.Sorter, from, to int) {
		for p := from; p < to; p++ {
			if lo, hi := start[p], start[p+1]; hi-lo > 1 {
				rs.Sort(kids[lo:hi], 0, int(lo))
			}
		}
	}
	if n < 1<<14 {
		sortLists(rs, 0, n)
	} else {
		split, _ := slices.BinarySearch(start[:n], int32(n/2))
		var wg sync.WaitGroup
		wg.Go(func() { sortLists(rs2, split, n) })
		sortLists(rs, 0, split)
		wg.Wait()
	}
	if rs.Dups() || rs2.Dups() {
		return nil, false // the same path twice: sorted by whole paths instead
	}
	e := emitter{names: names, kids: kids, start: start, out: make([]int32, 0, n)}
	e.out = append(e.out, 0)
	e.children(0)
	return e.out, len(e.out) == n
}

// emitter writes a tree's nodes in path byte order. Depth first over names in
// order is not quite that: "/a-1" sorts between "/a" and "/a/x" because '-' <
// '/'. So after a child c, the following siblings that extend c's name with a
// byte below '/' come before c's subtree; pending holds the children whose
// subtrees are still to be written (leaves, most nodes, never wait there).
type emitter struct {
	names   []string
	kids    []int32
	start   []int32
	out     []int32
	pending []int32
}

func (e *emitter) children(p int32) {
	base := len(e.pending)
	for _, c := range e.kids[e.start[p]:e.start[p+1]] {
		name := e.names[c]
		for len(e.pending) > base {
			top := e.pending[len(e.pending)-1]
			tn := e.names[top]
			if len(name) > len(tn) && name[len(tn)] < '/' && name[:len(tn)] == tn {
				break
			}
			e.pending = e.pending[:len(e.pending)-1]
			e.children(top)
		}
		e.out = append(e.out, c)
		if e.start[c] != e.start[c+1] { // a leaf has no subtree to defer
			e.pending = append(e.pending, c)
		}
	}
	for len(e.pending) > base {
		top := e.pending[len(e.pending)-1]
		e.pending = e.pending[:len(e.pending)-1]
		e.children(top)
	}
}

// count is the number of nodes in path order (deleted ones included).
func (t *Tree) count() int {
	if t.order != nil {
		return len(t.order)
	}
	return len(t.nodes)
}

// at is the k-th node in path order.
func (t *Tree) at(k int) *Node {
	if t.order != nil {
		return &t.nodes[t.order[k]]
	}
	return &t.nodes[k]
}

// search is the position in path order of the first node whose path is >= path.
func (t *Tree) search(path string) (int, bool) {
	k := sort.Search(t.count(), func(k int) bool { return t.at(k).Path >= path })
	return k, k < t.count() && t.at(k).Path == path
}

// lookup finds a node, deleted ones included (the caller checks gone).
func (t *Tree) lookup(path string) *Node {
	if k, ok := t.search(path); ok {
		return t.at(k)
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
	count := t.count()
	out := make([]Node, 0, count+len(t.added))
	i, j := 0, 0
	for i < count || j < len(t.added) {
		var n *Node
		if j >= len(t.added) || (i < count && t.at(i).Path < t.added[j].Path) {
			n, i = t.at(i), i+1
		} else {
			n, j = &t.added[j], j+1
		}
		if !n.gone {
			out = append(out, *n)
		}
	}
	t.nodes, t.order, t.added, t.index, t.dirty = out, nil, nil, map[string]int{}, false
}

// Len is the number of live nodes (after Compact).
func (t *Tree) Len() int {
	t.Compact()
	return t.count()
}

// Walk calls fn for every live node whose path starts with prefix and is >=
// start, in path byte order. fn must not keep n past the call.
func (t *Tree) Walk(prefix, start string, fn func(n *Node) error) error {
	t.Compact()
	i, _ := t.search(max(prefix, start))
	for ; i < t.count(); i++ {
		n := t.at(i)
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
