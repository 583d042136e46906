package zkdisk

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrNoData: a directory holds no ZooKeeper snapshot or txn log.
var ErrNoData = errors.New("no ZooKeeper snapshot or txn log")

// ErrPastNewest: LoadOptions.AtZxid is later than every txn the files hold.
var ErrPastNewest = errors.New("past the newest txn")

// LoadOptions pick the point in time of the view. Zero values: the newest state.
type LoadOptions struct {
	// AtZxid stops replay after the last txn with zxid <= AtZxid.
	AtZxid int64
	// AtTime stops replay after the last txn whose time is <= AtTime.
	AtTime time.Time
	// LogDir holds the log.* files when they are not beside the snapshots
	// (ZooKeeper's dataLogDir/version-2).
	LogDir string
}

// Info says what a view shows: which snapshot, how many txns replayed over it,
// and the point in time that makes.
type Info struct {
	Snapshot     string // the snapshot file used ("" when only logs were replayed)
	SnapshotZxid int64
	Zxid         int64     // the last zxid the view reflects
	Time         time.Time // that txn's time (or the newest node time of the snapshot)
	Applied      int       // txns replayed
	Notes        []string  // rejected snapshots, where replay stopped, gaps
}

// View is a tree as of one point, in memory: a snapshot plus the txns replayed
// over it.
type View struct {
	Info
	Tree     *Tree
	Sessions map[int64]int32
}

type fileAt struct {
	path string
	zxid int64
}

// listDir finds snapshot.* and log.* in dir, sorted by zxid ascending.
func listDir(dir string) (snaps, logs []fileAt, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if z, _, ok := ParseSnapshotName(e.Name()); ok {
			snaps = append(snaps, fileAt{filepath.Join(dir, e.Name()), z})
		} else if z, ok := ParseLogName(e.Name()); ok {
			logs = append(logs, fileAt{filepath.Join(dir, e.Name()), z})
		}
	}
	byZxid := func(a, b fileAt) int {
		return cmp.Or(cmp.Compare(a.zxid, b.zxid), cmp.Compare(a.path, b.path))
	}
	slices.SortFunc(snaps, byZxid)
	slices.SortFunc(logs, byZxid)
	return snaps, logs, nil
}

// Load reads the version-2 directory dir (snapshots and, unless opts.LogDir says
// otherwise, logs) into a tree in memory: the newest snapshot whose seals check
// out (older ones are tried in turn, each rejection noted), then every txn after
// it in zxid order, until opts' point in time, the end of the logs, or the first
// damaged record.
func Load(dir string, opts LoadOptions) (*View, error) {
	b := &treeBuilder{}
	info, err := build(dir, opts, b)
	if err != nil {
		return nil, err
	}
	b.tree.Compact()
	return &View{Info: *info, Tree: b.tree, Sessions: b.sessions}, nil
}

// Sink takes a view as Stream reads it, for a reader that does not hold the
// tree (it sorts what it gets by path and folds each path with a Folder).
type Sink interface {
	// Node is one node of the snapshot, in file order (the root's path is "/").
	Node(n *SnapNode) error
	// Discard drops every node given so far: the snapshot turned out unusable
	// (a seal did not check out, or it is newer than the time asked for), and
	// an older one follows, or none.
	Discard() error
	// Change is one change of a txn replayed after the snapshot, in replay
	// order; step is its place among its txn's changes.
	Change(c Change, step int32) error
}

// Stream reads dir as Load does, handing the snapshot's nodes and the changes of
// the txns replayed to sink instead of building a tree. An error sink returns
// ends it.
func Stream(dir string, opts LoadOptions, sink Sink) (*Info, error) {
	return build(dir, opts, &sinkBuilder{sink: sink})
}

// builder is what a view is built into: a tree in memory (Load) or a Sink (Stream).
type builder interface {
	// snapshot reads the whole snapshot at path; newest is its latest node
	// time. When the file does not read, nothing of it is kept; a failure of
	// the builder itself is a *builderError.
	snapshot(path string) (newest time.Time, err error)
	// discard drops the snapshot read last.
	discard() error
	// empty starts from no snapshot: the root alone.
	empty() error
	// txn applies one txn after the snapshot.
	txn(h TxnHeader, rec Record) error
}

// builderError is a failure of the builder, not of the files: it ends the read.
type builderError struct{ err error }

func (e *builderError) Error() string { return e.err.Error() }
func (e *builderError) Unwrap() error { return e.err }

// build reads the files of dir into b, as Load describes.
func build(dir string, opts LoadOptions, b builder) (*Info, error) {
	snaps, logs, err := listDir(dir)
	if err != nil {
		return nil, err
	}
	if opts.LogDir != "" && opts.LogDir != dir {
		if _, logs, err = listDir(opts.LogDir); err != nil {
			return nil, err
		}
	}
	if len(snaps) == 0 && len(logs) == 0 {
		return nil, fmt.Errorf("%s: %w (want snapshot.<zxid> / log.<zxid> files)", dir, ErrNoData)
	}
	v := &Info{}
	atZxid := opts.AtZxid
	if !opts.AtTime.IsZero() {
		z, found, note := zxidAtTime(logs, opts.AtTime)
		if note != "" {
			v.Notes = append(v.Notes, note)
		}
		if !found {
			// Every logged txn is later than AtTime: only a snapshot whose newest
			// change is not later can show that moment.
			if err := loadNewestSnapshot(v, b, snaps, 0, opts.AtTime); err != nil {
				return nil, err
			}
			return v, nil
		}
		atZxid = z
	}
	if err := loadNewestSnapshot(v, b, snaps, atZxid, time.Time{}); err != nil {
		return nil, err
	}
	if v.Snapshot == "" && len(logs) == 0 {
		// Nothing readable at all: an empty tree would pass for a cluster with no metadata.
		return nil, fmt.Errorf("%s: %w: no snapshot could be read and there is no txn log (%s)", dir, ErrNoData, strings.Join(v.Notes, "; "))
	}
	complete, err := replay(v, b, logs, atZxid)
	if err != nil {
		return nil, err
	}
	if complete && opts.AtZxid > 0 && v.Zxid < opts.AtZxid {
		// As etcd refuses a revision past its newest: a zxid no txn has reached
		// names no state, and showing the newest under its name would be wrong.
		return nil, fmt.Errorf("zxid %#x (%d) is %w in %s: zxid %#x (%d)", opts.AtZxid, opts.AtZxid, ErrPastNewest, dir, v.Zxid, v.Zxid)
	}
	return v, nil
}

// loadNewestSnapshot loads the newest valid snapshot with zxid <= atZxid (any
// when 0) whose newest node time is <= notAfter (any when zero). With no usable
// snapshot but logs present, replay starts from an empty tree.
func loadNewestSnapshot(v *Info, b builder, snaps []fileAt, atZxid int64, notAfter time.Time) error {
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		if atZxid > 0 && s.zxid > atZxid {
			continue
		}
		newest, err := b.snapshot(s.path)
		var be *builderError
		if errors.As(err, &be) {
			return be.err
		}
		if err == nil && !notAfter.IsZero() && newest.After(notAfter) {
			err = fmt.Errorf("it holds changes made at %s, after the requested time", newest.UTC().Format(time.RFC3339Nano))
			if derr := b.discard(); derr != nil {
				return derr
			}
		}
		if err != nil {
			v.Notes = append(v.Notes, fmt.Sprintf("snapshot %s rejected: %v", s.path, err))
			continue
		}
		v.Snapshot, v.SnapshotZxid, v.Zxid, v.Time = s.path, s.zxid, s.zxid, newest
		return nil
	}
	if !notAfter.IsZero() {
		return fmt.Errorf("no snapshot or logged txn at or before %s: %w", notAfter.UTC().Format(time.RFC3339), ErrNoData)
	}
	if len(snaps) > 0 {
		v.Notes = append(v.Notes, "no usable snapshot: replaying the logs onto an empty tree")
	}
	return b.empty()
}

// treeBuilder builds a Tree in memory (Load).
type treeBuilder struct {
	tree     *Tree
	sessions map[int64]int32
}

func (b *treeBuilder) snapshot(path string) (time.Time, error) {
	tree, sessions, newest, err := loadSnapshot(path)
	if err == nil {
		b.tree, b.sessions = tree, sessions
	}
	return newest, err
}

func (b *treeBuilder) discard() error {
	b.tree, b.sessions = nil, nil
	return nil
}

func (b *treeBuilder) empty() error {
	b.tree, b.sessions = newTree(nil, nil), map[int64]int32{}
	b.tree.put(Node{Path: "/"})
	return nil
}

func (b *treeBuilder) txn(h TxnHeader, rec Record) error {
	apply(b.tree, b.sessions, h, rec)
	return nil
}

// sinkBuilder streams the snapshot's nodes and the txns' changes to a Sink (Stream).
type sinkBuilder struct{ sink Sink }

func (b *sinkBuilder) snapshot(path string) (time.Time, error) {
	sr, err := OpenSnapshot(path)
	if err != nil {
		return time.Time{}, err
	}
	defer sr.Close()
	var newest int64
	for {
		n, err := sr.Next()
		if err == io.EOF {
			return time.UnixMilli(newest), nil
		}
		if err != nil {
			if derr := b.discard(); derr != nil {
				return time.Time{}, &builderError{derr}
			}
			return time.Time{}, err
		}
		newest = max(newest, n.Stat.Mtime, n.Stat.Ctime)
		if err := b.sink.Node(&n); err != nil {
			return time.Time{}, &builderError{err}
		}
	}
}

func (b *sinkBuilder) discard() error { return b.sink.Discard() }

func (b *sinkBuilder) empty() error { return b.sink.Node(&SnapNode{Path: "/"}) }

func (b *sinkBuilder) txn(h TxnHeader, rec Record) error {
	var err error
	step := int32(0)
	Changes(h, rec, func(c Change) {
		if err == nil {
			err = b.sink.Change(c, step)
		}
		step++
	})
	return err
}

// loadSnapshot reads a whole snapshot into a tree; newest is the latest node
// ctime/mtime (ZooKeeper records no time for a snapshot itself). A plain file is
// read whole and scanned in memory; a compressed one, or one the scan finds
// anything wrong with, is streamed by SnapshotReader, which names the damage.
func loadSnapshot(path string) (*Tree, map[int64]int32, time.Time, error) {
	if _, comp, _ := ParseSnapshotName(filepath.Base(path)); comp == "" {
		if t, sessions, newest, ok := loadSnapshotImage(path); ok {
			return t, sessions, newest, nil
		}
	}
	return streamSnapshot(path)
}

func loadSnapshotImage(path string) (*Tree, map[int64]int32, time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, time.Time{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() != int64(int(fi.Size())) || !fi.Mode().IsRegular() {
		return nil, nil, time.Time{}, false
	}
	return treeOfImage(feedImage(f, int(fi.Size())))
}

// treeFromImage builds the tree of a whole snapshot file held in buf (which
// the tree then aliases); ok is false when scanImage found anything unusual.
func treeFromImage(buf []byte) (t *Tree, sessions map[int64]int32, newest time.Time, ok bool) {
	return treeOfImage(&snapshotImage{buf: buf, sum: startPrefixAdler(buf)})
}

// treeOfImage scans im (its bytes read already, or arriving) into a tree.
func treeOfImage(im *snapshotImage) (t *Tree, sessions map[int64]int32, newest time.Time, ok bool) {
	buf := im.buf
	// A node takes at least 76 bytes on disk; reserve sizes the rest.
	pt := newParentTracker(min(len(buf)/256, 1<<20))
	if uint64(len(buf)) >= maxImage || !im.scan(pt) {
		im.sum.halt()
		return nil, nil, time.Time{}, false
	}
	perm, dups := treeOrder(func() []string {
		paths := make([]string, len(im.recs))
		for i := range im.recs {
			paths[i] = recPath(buf, &im.recs[i])
		}
		return paths
	}, im.names(), pt.result())
	if !im.sealsOK() {
		return nil, nil, time.Time{}, false
	}
	t = orderedTree(buf, im.recs, nil, perm, dups)
	if dups { // a damaged file: some of the ephemerals listed may be dropped copies
		t.findOwners()
	} else {
		t.owners = im.owners
	}
	return t, sessionMap(im.sessions), time.UnixMilli(im.newest), true
}

func sessionMap(list []Session) map[int64]int32 {
	sessions := make(map[int64]int32, len(list))
	for _, s := range list {
		sessions[s.ID] = s.TimeoutMs
	}
	return sessions
}

func streamSnapshot(path string) (*Tree, map[int64]int32, time.Time, error) {
	sr, err := OpenSnapshot(path)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	defer sr.Close()
	guess := 0
	if fi, err := os.Stat(path); err == nil {
		// Real bytes bound the guess: a node takes at least 76 bytes on disk,
		// about 128 with a Pulsar-length path.
		guess = int(min(fi.Size()/128, 1<<24))
	}
	return treeFromReader(sr, guess)
}

// treeFromReader reads every node of sr into a tree; guess sizes the node list.
func treeFromReader(sr *SnapshotReader, guess int) (*Tree, map[int64]int32, time.Time, error) {
	nodes := make([]Node, 0, guess)
	pt := newParentTracker(guess)
	var newest int64
	for {
		n, err := sr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, time.Time{}, err
		}
		newest = max(newest, n.Stat.Mtime, n.Stat.Ctime)
		nodes = append(nodes, Node{Path: n.Path, Data: n.Data, ACLRef: n.ACLRef, Stat: n.Stat})
		pt.add(n.Path, strings.LastIndexByte(n.Path, '/'))
	}
	return newTree(nodes, pt.result()), sessionMap(sr.Sessions), time.UnixMilli(newest), nil
}

// zxidAtTime finds the last logged txn whose time is <= at. found is false when
// every txn is later (or there are none).
func zxidAtTime(logs []fileAt, at time.Time) (zxid int64, found bool, note string) {
	limit := at.UnixMilli()
	for _, l := range logs {
		lr, err := OpenLog(l.path)
		if err != nil {
			continue
		}
		for {
			t, err := lr.Next()
			if err != nil {
				if err != io.EOF {
					note = fmt.Sprintf("--at-time: stopped looking at %v", err)
				}
				break
			}
			if t.Header.Time > limit {
				lr.Close()
				return zxid, found, note
			}
			zxid, found = max(zxid, t.Header.Zxid), true
		}
		lr.Close()
		if note != "" {
			break
		}
	}
	return zxid, found, note
}

// replay applies the txns after the view's zxid: from the log whose start zxid is
// <= it, and every later log, in order. complete: it read to the end of the logs
// (neither atZxid nor a damaged record stopped it). An error is the builder's.
func replay(v *Info, b builder, logs []fileAt, atZxid int64) (complete bool, err error) {
	first := 0
	for i, l := range logs {
		if l.zxid <= v.SnapshotZxid {
			first = i
		}
	}
	last := v.SnapshotZxid
	for _, l := range logs[first:] {
		if atZxid > 0 && last >= atZxid {
			return false, nil
		}
		stop, err := replayLog(v, b, l.path, &last, atZxid)
		var be *builderError
		if errors.As(err, &be) {
			return false, be.err
		}
		if err != nil {
			v.Notes = append(v.Notes, fmt.Sprintf("replay stopped at %v; the view reflects zxid %#x (the last good txn)", err, v.Zxid))
			return false, nil
		}
		if stop {
			return false, nil
		}
	}
	return true, nil
}

func replayLog(v *Info, b builder, path string, last *int64, atZxid int64) (stop bool, err error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("log %s is empty (0 bytes): skipped", path))
		return false, nil
	}
	lr, err := OpenLog(path)
	if err != nil {
		return true, err
	}
	defer lr.Close()
	for {
		// Txns at or below last are in the snapshot already (or duplicates).
		t, err := lr.NextAfter(*last)
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		z := t.Header.Zxid
		if atZxid > 0 && z > atZxid {
			return true, nil
		}
		if *last > 0 && z>>32 == *last>>32 && z != *last+1 && v.Applied == 0 {
			v.Notes = append(v.Notes, fmt.Sprintf("txns %#x to %#x are missing from the logs (purged?): the view may lack their changes", *last+1, z-1))
		}
		if err := b.txn(t.Header, t.Record); err != nil {
			return true, &builderError{err}
		}
		*last = z
		v.Zxid, v.Time = z, time.UnixMilli(t.Header.Time)
		v.Applied++
	}
}
