package zkdata

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/ledgermedic/ledgermedic/formats/zkdisk"
	"github.com/ledgermedic/ledgermedic/internal/spill"
)

// A dataDir too large to hold is read onto disk (internal/spill): the
// snapshot's nodes and the replayed txns' changes go to a Sorter keyed by path,
// in the order read, so that its stable sort gives each path's snapshot node
// and then its changes in replay order; a zkdisk.Folder folds each path to its
// node, and the nodes that exist go to a spill.File in path order, which then
// serves Get and the walk. Memory holds the sorter's budget, the File's index
// and the sessions closed during the replay.

// sortBudget is the memory the sorter holds records in before it writes a run
// (docs/benchmarks.md, "Measured decisions").
var sortBudget = 32 << 20

// spillTree is the view of a dataDir as a spill.File of its nodes by path.
type spillTree struct {
	dir  *spill.Dir
	file *spill.File
	eph  map[int64]int // live ephemeral nodes by session
}

// loadSpill reads dir into a spillTree under parent ("": $TMPDIR).
func loadSpill(ctx context.Context, dir string, lo zkdisk.LoadOptions, parent string) (*spillTree, *zkdisk.Info, error) {
	sink := &sortSink{parent: parent, closed: map[int64][]int64{}}
	defer sink.close()
	if err := sink.reset(); err != nil {
		return nil, nil, err
	}
	info, err := zkdisk.Stream(dir, lo, sink)
	if err != nil {
		return nil, nil, err
	}
	t := &spillTree{eph: map[int64]int{}}
	if t.dir, err = spill.Open(parent); err != nil {
		return nil, nil, err
	}
	if err := t.fold(ctx, sink); err != nil {
		t.close()
		return nil, nil, err
	}
	return t, info, nil
}

// fold folds each path of the sorted records and appends the nodes that exist.
func (t *spillTree) fold(ctx context.Context, sink *sortSink) error {
	file, err := t.dir.NewFile("nodes")
	if err != nil {
		return err
	}
	f := zkdisk.NewFolder(sink.closed)
	var cur []byte // the path being folded (nil: none yet)
	var val []byte
	var snapData []byte // the data of the path's snapshot node
	end := func() error {
		n, ok := f.End()
		if !ok {
			return nil
		}
		if zkdisk.KindOf(n.Stat.EphemeralOwner) == zkdisk.Ephemeral {
			t.eph[n.Stat.EphemeralOwner]++
		}
		val = appendNode(val[:0], n)
		return file.Append(cur, val)
	}
	err = sink.sorter.Sorted(ctx, func(key, value []byte) error {
		if cur == nil || !bytes.Equal(key, cur) {
			if cur != nil {
				if err := end(); err != nil {
					return err
				}
			}
			cur = append(cur[:0:0], key...)
			f.Begin(string(cur))
		}
		return applyRecord(f, key, value, &snapData)
	})
	if err == nil && cur != nil {
		err = end()
	}
	if err == nil {
		err = file.Finish()
	}
	t.file = file
	return err
}

func (t *spillTree) close() error { return t.dir.Close() }

func (t *spillTree) ephemerals() map[int64]int { return t.eph }

// get reads the node at path.
func (t *spillTree) get(path string) (*zkdisk.Node, bool, error) {
	v, ok, err := t.file.Get([]byte(path))
	if err != nil || !ok {
		return nil, false, err
	}
	n, err := decodeNode(path, v)
	if err != nil {
		return nil, false, err
	}
	n.Data = bytes.Clone(n.Data)
	return n, true, nil
}

// walk calls fn for every node whose path starts with prefix and is >= start, in
// path byte order (the File's key order); n is valid during fn only.
func (t *spillTree) walk(ctx context.Context, prefix, start string, fn func(n *zkdisk.Node) error) error {
	return t.file.ScanPrefix(ctx, []byte(prefix), []byte(start), func(key, value []byte) error {
		n, err := decodeNode(string(key), value)
		if err != nil {
			return err
		}
		return fn(n)
	})
}

// sortSink is the zkdisk.Sink that sorts what Stream reads by path.
type sortSink struct {
	parent string
	dir    *spill.Dir
	sorter *spill.Sorter
	closed map[int64][]int64 // session -> zxids of its closeSession txns
	buf    []byte
}

// reset starts an empty sorter in a new dir (the old dir, if any, is removed).
func (s *sortSink) reset() error {
	if err := s.close(); err != nil {
		return err
	}
	d, err := spill.Open(s.parent)
	if err != nil {
		return err
	}
	s.dir, s.sorter = d, d.NewSorter("zk-records", sortBudget)
	return nil
}

func (s *sortSink) close() error {
	err := s.dir.Close()
	s.dir, s.sorter = nil, nil
	return err
}

func (s *sortSink) Node(n *zkdisk.SnapNode) error {
	s.buf = append(s.buf[:0], recNode)
	s.buf = appendNode(s.buf, &zkdisk.Node{Data: n.Data, ACLRef: n.ACLRef, Stat: n.Stat})
	return s.sorter.Add([]byte(n.Path), s.buf)
}

func (s *sortSink) Discard() error { return s.reset() }

func (s *sortSink) Change(c zkdisk.Change, step int32) error {
	switch c.Kind {
	case zkdisk.ChangeOpenSession:
		return nil
	case zkdisk.ChangeCloseSession:
		s.closed[c.Owner] = append(s.closed[c.Owner], c.Zxid)
		return nil
	}
	s.buf = appendChange(append(s.buf[:0], recChange), c, step)
	return s.sorter.Add([]byte(c.Path), s.buf)
}

// The sorter's records: the path is the key; the value's first byte says what
// follows.
const (
	recNode   = 'n' // a snapshot node: appendNode's bytes
	recChange = 'c' // a change: appendChange's bytes
)

// applyRecord hands one sorted record of the path being folded to f. The
// Folder keeps the node's data until End, past this record: a snapshot node's
// (the first record of its path) is copied into *snapData, which no other path
// uses before End; a change's, rarer, into its own allocation.
func applyRecord(f *zkdisk.Folder, path, v []byte, snapData *[]byte) error {
	if len(v) == 0 {
		return fmt.Errorf("zk-data spill: empty record of %q", path)
	}
	switch v[0] {
	case recNode:
		n, err := decodeNode(string(path), v[1:])
		if err != nil {
			return err
		}
		if len(n.Data) > 0 { // an empty (not null) value aliases no byte of v
			*snapData = append((*snapData)[:0], n.Data...)
			n.Data = (*snapData)[:len(n.Data):len(n.Data)]
		}
		f.Snapshot(*n)
	case recChange:
		c, step, err := decodeChange(string(path), v[1:])
		if err != nil {
			return err
		}
		f.Apply(c, step)
	default:
		return fmt.Errorf("zk-data spill: record of %q of kind %#x", path, v[0])
	}
	return nil
}

// A node: a flags byte (1: null data), the 60-byte stat, the ACL ref, the data.
const nodeFixed = 1 + 60 + 8

func appendNode(b []byte, n *zkdisk.Node) []byte {
	flags := byte(0)
	if n.Data == nil {
		flags = 1
	}
	st := &n.Stat
	b = append(b, flags)
	for _, v := range []int64{st.Czxid, st.Mzxid, st.Ctime, st.Mtime} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	for _, v := range []int32{st.Version, st.Cversion, st.Aversion} {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(st.EphemeralOwner))
	b = binary.BigEndian.AppendUint64(b, uint64(st.Pzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(n.ACLRef))
	return append(b, n.Data...)
}

// decodeNode reads appendNode's bytes; the data aliases b.
func decodeNode(path string, b []byte) (*zkdisk.Node, error) {
	if len(b) < nodeFixed {
		return nil, fmt.Errorf("zk-data spill: node %q: %d bytes, want at least %d", path, len(b), nodeFixed)
	}
	u64 := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[i:])) }
	u32 := func(i int) int32 { return int32(binary.BigEndian.Uint32(b[i:])) }
	n := &zkdisk.Node{Path: path, ACLRef: u64(61), Stat: zkdisk.Stat{
		Czxid: u64(1), Mzxid: u64(9), Ctime: u64(17), Mtime: u64(25),
		Version: u32(33), Cversion: u32(37), Aversion: u32(41),
		EphemeralOwner: u64(45), Pzxid: u64(53),
	}}
	if b[0]&1 == 0 {
		n.Data = b[nodeFixed:len(b):len(b)]
	}
	return n, nil
}

// A change: kind, step, zxid, time, version, owner, parent cversion, a flags
// byte (1: null data), the data.
const changeFixed = 1 + 4 + 8 + 8 + 4 + 8 + 4 + 1

func appendChange(b []byte, c zkdisk.Change, step int32) []byte {
	b = append(b, byte(c.Kind))
	b = binary.BigEndian.AppendUint32(b, uint32(step))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Zxid))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Time))
	b = binary.BigEndian.AppendUint32(b, uint32(c.Version))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Owner))
	b = binary.BigEndian.AppendUint32(b, uint32(c.ParentCVersion))
	if c.Data == nil {
		return append(b, 1)
	}
	return append(append(b, 0), c.Data...)
}

func decodeChange(path string, b []byte) (zkdisk.Change, int32, error) {
	if len(b) < changeFixed {
		return zkdisk.Change{}, 0, fmt.Errorf("zk-data spill: change of %q: %d bytes, want at least %d", path, len(b), changeFixed)
	}
	c := zkdisk.Change{
		Kind: zkdisk.ChangeKind(b[0]), Path: path,
		Zxid: int64(binary.BigEndian.Uint64(b[5:])), Time: int64(binary.BigEndian.Uint64(b[13:])),
		Version: int32(binary.BigEndian.Uint32(b[21:])), Owner: int64(binary.BigEndian.Uint64(b[25:])),
		ParentCVersion: int32(binary.BigEndian.Uint32(b[33:])),
	}
	if b[37]&1 == 0 {
		c.Data = bytes.Clone(b[changeFixed:]) // the Folder keeps it past this record (applyRecord)
	}
	return c, int32(binary.BigEndian.Uint32(b[1:])), nil
}
