package zkdisk

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

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

// Tree is a ZooKeeper tree as one list of entries in path order (byte order).
// A node read from a plain snapshot file is a rec, in file order: its path and
// data as offsets into the file's image, no pointers, so the collector has
// none to follow in 200k of them and the scan writes 88 bytes a node without
// write barriers. A node read by the stream reader, or changed or created by
// replay, is held whole (alts). Nodes created during replay sit in a small
// side list until Compact merges them in.
type Tree struct {
	img   []byte   // the snapshot file image recs point into
	recs  []rec    // the image's nodes, in file order
	ents  []uint32 // the nodes in path order: an index into recs, or altBit|index into alts
	alts  []*Node
	added []Node         // created by replay, unsorted
	index map[string]int // path -> position in added
	// owners lists ephemeral nodes by session, for closeSession.
	owners map[int64][]string
	dirty  bool
}

// rec is a node of a snapshot image: its path and data are offsets into it.
type rec struct {
	path   uint32 // offset of the path's bytes
	plen   uint32 // 0: the root, stored as ""
	data   uint32
	dlen   int32 // -1: null data
	ACLRef int64
	Stat   Stat
}

// altBit marks an entry held whole; recs address an image of less than
// maxImage bytes (a larger file is streamed).
const (
	altBit   = 1 << 31
	maxImage = altBit
)

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
	alts := make([]*Node, len(nodes))
	for i := range nodes {
		alts[i] = &nodes[i]
	}
	perm, dups := treeOrder(func() []string {
		paths := make([]string, len(nodes))
		for i := range nodes {
			paths[i] = nodes[i].Path
		}
		return paths
	}, names, parents)
	t := orderedTree(nil, nil, alts, perm, dups)
	t.findOwners()
	return t
}

// orderedTree makes a tree of recs from img, or else of alts, and perm, the
// permutation sorting them by path, equal paths in file order. dups says
// whether a path is there twice: a snapshot never holds a path twice; if a
// damaged one does, the last is kept, as ZooKeeper's deserialize does.
func orderedTree(img []byte, recs []rec, alts []*Node, perm []int32, dups bool) *Tree {
	t := &Tree{img: img, recs: recs, alts: alts, index: map[string]int{}, owners: map[int64][]string{}}
	var held uint32
	if recs == nil {
		held = altBit
	}
	t.ents = make([]uint32, 0, len(perm))
	for k, i := range perm {
		e := held | uint32(i)
		if dups && k+1 < len(perm) && t.pathOf(held|uint32(perm[k+1])) == t.pathOf(e) {
			continue
		}
		t.ents = append(t.ents, e)
	}
	return t
}

// findOwners lists the tree's ephemeral nodes by session.
func (t *Tree) findOwners() {
	var tmp Node
	for k := range t.ents {
		n := t.nodeAt(k, &tmp)
		if o := n.Stat.EphemeralOwner; KindOf(o) == Ephemeral {
			t.owners[o] = append(t.owners[o], n.Path)
		}
	}
}

// treeOrder is the permutation sorting nodes by path (byte order; equal paths
// in index order), and whether two paths are equal. With parents (and names,
// each path's last component) it orders each parent's children by name
// instead of all paths globally; allPaths is called only when it must sort
// whole paths.
func treeOrder(allPaths func() []string, names []string, parents []int32) (perm []int32, dups bool) {
	if perm, ok := childOrder(names, parents); ok {
		return perm, false
	}
	paths := allPaths()
	idx := make([]int32, len(paths))
	for i := range idx {
		idx[i] = int32(i)
	}
	rs := radix.New(paths, len(idx), false)
	rs.Sort(idx, 0, 0)
	return idx, rs.Dups()
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

// recPath is the path of a rec of img.
func recPath(img []byte, r *rec) string {
	if r.plen == 0 {
		return "/"
	}
	return unsafe.String(&img[r.path], r.plen)
}

// recNode is the node a rec of img describes; its data aliases img.
func recNode(img []byte, r *rec) Node {
	n := Node{Path: recPath(img, r), ACLRef: r.ACLRef, Stat: r.Stat}
	if r.dlen >= 0 {
		end := r.data + uint32(r.dlen)
		n.Data = img[r.data:end:end]
	}
	return n
}

// pathOf is the path of entry e.
func (t *Tree) pathOf(e uint32) string {
	if e&altBit != 0 {
		return t.alts[e&^altBit].Path
	}
	return recPath(t.img, &t.recs[e])
}

// pathAt is the path of the k-th node in path order.
func (t *Tree) pathAt(k int) string { return t.pathOf(t.ents[k]) }

// nodeAt is the k-th node in path order, for reading: the node held, or one
// decoded into *tmp.
func (t *Tree) nodeAt(k int, tmp *Node) *Node {
	e := t.ents[k]
	if e&altBit != 0 {
		return t.alts[e&^altBit]
	}
	*tmp = recNode(t.img, &t.recs[e])
	return tmp
}

// hold is the k-th node in path order, held whole from now on so that it can
// be changed.
func (t *Tree) hold(k int) *Node {
	e := t.ents[k]
	if e&altBit != 0 {
		return t.alts[e&^altBit]
	}
	n := new(Node)
	*n = recNode(t.img, &t.recs[e])
	t.ents[k] = altBit | uint32(len(t.alts))
	t.alts = append(t.alts, n)
	return n
}

// search is the position in path order of the first node whose path is >= path.
func (t *Tree) search(path string) (int, bool) {
	k := sort.Search(len(t.ents), func(k int) bool { return t.pathAt(k) >= path })
	return k, k < len(t.ents) && t.pathAt(k) == path
}

// peek finds a node to read, deleted ones included (the caller checks gone).
func (t *Tree) peek(path string) *Node {
	if k, ok := t.search(path); ok {
		return t.nodeAt(k, new(Node))
	}
	if i, ok := t.index[path]; ok {
		return &t.added[i]
	}
	return nil
}

// edit finds a node to change, deleted ones included (the caller checks gone).
func (t *Tree) edit(path string) *Node {
	if k, ok := t.search(path); ok {
		return t.hold(k)
	}
	if i, ok := t.index[path]; ok {
		return &t.added[i]
	}
	return nil
}

// Get returns the live node at path. The caller must not change it.
func (t *Tree) Get(path string) (*Node, bool) {
	n := t.peek(path)
	if n == nil || n.gone {
		return nil, false
	}
	return n, true
}

// change returns the live node at path, to be changed in place (replay).
func (t *Tree) change(path string) (*Node, bool) {
	n := t.edit(path)
	if n == nil || n.gone {
		return nil, false
	}
	return n, true
}

// put creates or revives a node.
func (t *Tree) put(n Node) {
	if old := t.edit(n.Path); old != nil {
		*old = n
		return
	}
	t.index[n.Path] = len(t.added)
	t.added = append(t.added, n)
	t.dirty = true
}

func (t *Tree) remove(path string) bool {
	n := t.edit(path)
	if n == nil || n.gone {
		return false
	}
	n.gone, n.Data = true, nil
	t.dirty = true
	return true
}

// Compact merges created nodes into the sorted entries and drops deleted ones,
// so Walk and Len see one sorted list.
func (t *Tree) Compact() {
	if !t.dirty {
		return
	}
	slices.SortFunc(t.added, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
	out := make([]uint32, 0, len(t.ents)+len(t.added))
	i, j := 0, 0
	for i < len(t.ents) || j < len(t.added) {
		if j >= len(t.added) || (i < len(t.ents) && t.pathAt(i) < t.added[j].Path) {
			e := t.ents[i]
			i++
			if e&altBit != 0 && t.alts[e&^altBit].gone {
				continue // only a held node can have been deleted
			}
			out = append(out, e)
			continue
		}
		n := t.added[j]
		j++
		if !n.gone {
			out = append(out, altBit|uint32(len(t.alts)))
			t.alts = append(t.alts, &n)
		}
	}
	t.ents, t.added, t.index, t.dirty = out, nil, map[string]int{}, false
}

// Len is the number of live nodes (after Compact).
func (t *Tree) Len() int {
	t.Compact()
	return len(t.ents)
}

// Walk calls fn for every live node whose path starts with prefix and is >=
// start, in path byte order. fn must not keep n past the call, nor change it.
func (t *Tree) Walk(prefix, start string, fn func(n *Node) error) error {
	t.Compact()
	var tmp Node
	k, _ := t.search(max(prefix, start))
	for ; k < len(t.ents); k++ {
		if !strings.HasPrefix(t.pathAt(k), prefix) {
			break
		}
		if err := fn(t.nodeAt(k, &tmp)); err != nil {
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
