package zkdisk_test

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"testing"

	. "github.com/ledgermedic/ledgermedic/formats/zkdisk"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// memSink keeps what Stream hands over, in order, for sorting by path as a
// reader that spills them to disk would.
type memSink struct {
	recs   []sinkRec
	closed map[int64][]int64
}

type sinkRec struct {
	path   string
	node   *Node // a snapshot node, else a change
	change Change
	step   int32
}

func (s *memSink) Node(n *SnapNode) error {
	s.recs = append(s.recs, sinkRec{path: n.Path, node: &Node{Path: n.Path, Data: n.Data, ACLRef: n.ACLRef, Stat: n.Stat}})
	return nil
}

func (s *memSink) Discard() error {
	s.recs = s.recs[:0]
	return nil
}

func (s *memSink) Change(c Change, step int32) error {
	switch c.Kind {
	case ChangeCloseSession:
		s.closed[c.Owner] = append(s.closed[c.Owner], c.Zxid)
	case ChangeOpenSession:
	default:
		s.recs = append(s.recs, sinkRec{path: c.Path, change: c, step: step})
	}
	return nil
}

// folded sorts the records by path (stably: the snapshot's node first, then
// the changes in replay order) and folds each path.
func (s *memSink) folded() []string {
	slices.SortStableFunc(s.recs, func(a, b sinkRec) int { return cmp.Compare(a.path, b.path) })
	f := NewFolder(s.closed)
	var out []string
	for i := 0; i < len(s.recs); {
		p := s.recs[i].path
		f.Begin(p)
		for ; i < len(s.recs) && s.recs[i].path == p; i++ {
			if r := s.recs[i]; r.node != nil {
				f.Snapshot(*r.node)
			} else {
				f.Apply(r.change, r.step)
			}
		}
		if n, ok := f.End(); ok {
			out = append(out, dumpNode(n))
		}
	}
	return out
}

// dumpNode is a node as both readers must agree on it: the Folder leaves the
// parent's cversion and pzxid as the snapshot had them.
func dumpNode(n *Node) string {
	st := n.Stat
	st.Cversion, st.Pzxid = 0, 0
	return fmt.Sprintf("%q nil=%v %x acl=%d %+v", n.Path, n.Data == nil, n.Data, n.ACLRef, st)
}

// Property: over random histories (fuzzy and damaged snapshots, failed multis,
// sessions closed with and without their ephemerals listed, changes to nodes
// that are gone), folding the streamed snapshot and changes path by path gives
// the tree Load replays in memory, node for node, and the same account of
// what was read, at the newest state and at earlier zxids.
func TestFoldEqualsTreeReplay(t *testing.T) {
	for seed := range uint64(40) {
		h, err := testutil.WriteZKHistory(t.TempDir(), seed)
		if err != nil {
			t.Fatal(err)
		}
		points := []int64{0, h.Zxids[len(h.Zxids)/3], h.Snapshot + 1, h.Zxids[len(h.Zxids)-2]}
		for _, at := range points {
			opts := LoadOptions{AtZxid: at}
			v, err := Load(h.Dir, opts)
			if err != nil {
				t.Fatalf("seed %d at %#x: Load: %v", seed, at, err)
			}
			var want []string
			_ = v.Tree.Walk("", "", func(n *Node) error { want = append(want, dumpNode(n)); return nil })
			sink := &memSink{closed: map[int64][]int64{}}
			info, err := Stream(h.Dir, opts, sink)
			if err != nil {
				t.Fatalf("seed %d at %#x: Stream: %v", seed, at, err)
			}
			if got := sink.folded(); !slices.Equal(got, want) {
				t.Fatalf("seed %d at %#x: folded %d nodes, the tree %d\n%s", seed, at, len(got), len(want), firstDiff(got, want))
			}
			if !reflect.DeepEqual(*info, v.Info) {
				t.Fatalf("seed %d at %#x: Stream read %+v, Load %+v", seed, at, *info, v.Info)
			}
		}
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("first difference at %d:\n got  %s\n want %s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d, %d)", len(a), len(b))
}
