package zkdisk

import (
	"math"
	"slices"
	"strings"
)

// Folder replays txns one path at a time, for a reader that cannot hold the tree:
// it sorts the snapshot's nodes and the txns' changes by path (changes of one
// path in replay order) and hands them over path by path, in path byte order.
// For each path: Begin, the snapshot's node if there is one (the last copy wins,
// as DataTree's deserializer keeps it), each change with Apply, then End gives
// the node the tree in memory (apply.go) would hold.
//
// One node's replay needs two things of others: whether its parent exists when
// a create runs, and when the owner of an ephemeral node closed its session.
// A parent's path sorts before its children's, so the Folder keeps the existence
// over time of the paths that are byte prefixes of the current one (at most a
// path's length of them, each with its own creates and deletes); the sessions
// closed, few, are gathered from the whole replay first (closed).
//
// Unlike the tree in memory it does not count a create in the parent's cversion
// and pzxid: the parent was folded already, and no reader of a store shows them.
type Folder struct {
	closed map[int64][]int64 // session -> the zxids of its closeSession txns, ascending
	stack  []timeline        // the folded paths that are byte prefixes of the current one
	cur    timeline
	n      Node
	born   pos // when the current node was created (the start for one of the snapshot)
}

// pos is a place in the replay: a txn's zxid, then the change's place in it.
type pos struct {
	zxid int64
	step int32
}

func (a pos) before(b pos) bool { return a.zxid < b.zxid || (a.zxid == b.zxid && a.step < b.step) }

// timeline is whether a path's node exists over the replay: at the start, then
// after each of its creates and deletes.
type timeline struct {
	path   string
	start  bool
	events []event
}

type event struct {
	at   pos
	live bool
}

// liveAt says whether the node exists just before p.
func (t *timeline) liveAt(p pos) bool {
	i, _ := slices.BinarySearchFunc(t.events, p, func(e event, p pos) int {
		if e.at.before(p) {
			return -1
		}
		return 1
	})
	if i == 0 {
		return t.start
	}
	return t.events[i-1].live
}

func (t *timeline) live() bool {
	if len(t.events) == 0 {
		return t.start
	}
	return t.events[len(t.events)-1].live
}

// NewFolder starts a fold; closed lists, for each session closed during the
// replay, the zxids of its closeSession txns in ascending order.
func NewFolder(closed map[int64][]int64) *Folder { return &Folder{closed: closed} }

// Begin starts the fold of path, which must sort after every path before it.
func (f *Folder) Begin(path string) {
	if f.cur.path != "" {
		f.stack = append(f.stack, f.cur)
	}
	for len(f.stack) > 0 && !strings.HasPrefix(path, f.stack[len(f.stack)-1].path) {
		f.stack = f.stack[:len(f.stack)-1]
	}
	f.cur, f.n, f.born = timeline{path: path}, Node{}, pos{}
}

// Snapshot gives the path's node in the snapshot.
func (f *Folder) Snapshot(n Node) {
	f.n, f.cur.start, f.born = n, true, pos{}
	f.n.Path = f.cur.path
}

// Apply applies one change of the path; step is its place among the changes of
// its txn (Changes' order).
func (f *Folder) Apply(c Change, step int32) {
	at := pos{c.Zxid, step}
	f.expire(c.Zxid)
	live := f.cur.live()
	switch c.Kind {
	case ChangeCreate:
		if live || !f.parentLive(at) {
			return
		}
		f.n, f.born = created(c), at
		f.n.Path = f.cur.path
		f.cur.events = append(f.cur.events, event{at, true})
	case ChangeDelete:
		if live {
			f.n.Data = nil
			f.cur.events = append(f.cur.events, event{at, false})
		}
	case ChangeSetData, ChangeSetACL:
		if live {
			c.change(&f.n)
		}
	}
}

// End is the path's node after the replay; ok is false when there is none. The
// node is valid until the next Begin.
func (f *Folder) End() (n *Node, ok bool) {
	f.expire(math.MaxInt64)
	return &f.n, f.cur.live()
}

// expire deletes the node, as its session's close did, when it is an ephemeral
// node whose owner closed its session after the node was made and before zxid.
func (f *Folder) expire(zxid int64) {
	if !f.cur.live() || KindOf(f.n.Stat.EphemeralOwner) != Ephemeral {
		return
	}
	for _, z := range f.closed[f.n.Stat.EphemeralOwner] {
		if z >= f.born.zxid && z < zxid {
			f.n.Data = nil
			// After every change of the closeSession txn (its listed deletes).
			f.cur.events = append(f.cur.events, event{pos{z, math.MaxInt32}, false})
			return
		}
	}
}

// parentLive says whether the current path's parent exists just before p.
func (f *Folder) parentLive(p pos) bool {
	parent := parentOf(f.cur.path)
	for i := len(f.stack) - 1; i >= 0; i-- {
		if f.stack[i].path == parent {
			return f.stack[i].liveAt(p)
		}
	}
	return false // never folded: no node there at any time
}
