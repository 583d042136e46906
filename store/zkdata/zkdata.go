package zkdata

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ledgermedic/ledgermedic/formats/zkdisk"
	"github.com/ledgermedic/ledgermedic/store"
)

// ErrNotZKData: the zk-data path is not a ZooKeeper dataDir (no version-2/ with
// snapshot.* or log.* files).
var ErrNotZKData = errors.New("not a ZooKeeper dataDir")

// zkDataStore is a ZooKeeper dataDir read offline (zk-data:DIR): a snapshot plus
// the txn logs replayed over it (formats/zkdisk), read-only. A small dataDir is
// held in memory; a larger one is read onto a sorted file on disk (spill.go),
// so that memory does not grow with the cluster.
type zkDataStore struct {
	u      store.URL
	dir    string
	chroot string // "" or "/x": node paths are relative to it
	tree   tree
	info   *zkdisk.Info
	src    store.SourceInfo
}

// tree is the nodes of the view, in memory (memTree) or on disk (spillTree).
type tree interface {
	// get returns the node at path; its data is the caller's.
	get(path string) (*zkdisk.Node, bool, error)
	// walk calls fn for each node whose path starts with prefix and is >=
	// start, in path byte order; n is valid during fn only.
	walk(ctx context.Context, prefix, start string, fn func(n *zkdisk.Node) error) error
	// ephemerals counts the live ephemeral nodes by session.
	ephemerals() map[int64]int
	close() error
}

// spillAbove is the size of a dataDir's files (the newest snapshot and the
// logs' written bytes) above which it is read onto disk: held in memory, a
// dataDir takes about its files' size again (docs/benchmarks.md, "Measured
// decisions").
var spillAbove int64 = 64 << 20

// spillOpens counts the opens that read onto disk (tests check that they did).
var spillOpens atomic.Int64

// Open opens u.Paths[0]: a dataDir, its version-2/, or a dir holding the
// snapshot and log files itself. ?chroot=/x roots every path at /x (as Pulsar's
// zk:host/x URL does); ?logdir=D reads the logs from dataLogDir D (or D/version-2).
func Open(u store.URL, opts store.Options) (store.MetadataBackend, error) {
	if len(u.Paths) != 1 || u.Paths[0] == "" {
		return nil, fmt.Errorf("%w %q: zk-data needs one directory", store.ErrBadURL, u.Raw)
	}
	dir, err := zkVersionDir(u.Paths[0])
	if err != nil {
		return nil, err
	}
	lo := zkdisk.LoadOptions{AtZxid: opts.Remote.AtZxid, AtTime: opts.Remote.AtTime}
	if ld := u.Query.Get("logdir"); ld != "" {
		if lo.LogDir, err = zkVersionDir(ld); err != nil {
			return nil, err
		}
	}
	chroot := strings.TrimSuffix(u.Query.Get("chroot"), "/")
	if chroot != "" && !strings.HasPrefix(chroot, "/") {
		return nil, fmt.Errorf("%w %q: chroot %q must be an absolute path", store.ErrBadURL, u.Raw, chroot)
	}
	s := &zkDataStore{u: u, dir: dir, chroot: chroot}
	size := inputBytes(dir, lo.LogDir)
	spilled := size > spillAbove
	if spilled {
		s.tree, s.info, err = loadSpill(context.Background(), dir, lo, opts.SandboxDir)
	} else {
		var v *zkdisk.View
		if v, err = zkdisk.Load(dir, lo); err == nil {
			s.tree, s.info = memTree{v.Tree}, &v.Info
		}
	}
	if err != nil {
		if errors.Is(err, zkdisk.ErrNoData) {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotZKData, dir, err)
		}
		if errors.Is(err, zkdisk.ErrPastNewest) {
			return nil, fmt.Errorf("%w %s: %w", store.ErrBadURL, u, err)
		}
		return nil, fmt.Errorf("zk-data %s: %w", dir, err)
	}
	if chroot != "" {
		_, ok, err := s.tree.get(chroot)
		if err == nil && !ok {
			err = fmt.Errorf("%w (no such node in the view at zxid %#x)", store.ErrNotFound, s.info.Zxid)
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("zk-data %s: chroot %s: %w", dir, chroot, err)
		}
	}
	s.src = store.SourceInfo{URL: u.String(), Kind: store.SchemeZKData, ReadOnly: true, Zxid: s.info.Zxid, AsOf: s.info.Time, Notes: s.notes()}
	if spilled {
		spillOpens.Add(1)
		s.src.Notes = append(s.src.Notes, fmt.Sprintf("the dataDir's files (%d MB) are read onto a sorted file in a temp dir rather than held in memory", size>>20))
	}
	return s, nil
}

// inputBytes is what the view is read from: the newest snapshot (a compressed
// one counted at ten times its size) and the bytes the logs hold (they are
// preallocated sparse files: their blocks, not their length).
func inputBytes(dir, logDir string) int64 {
	if logDir == dir {
		logDir = ""
	}
	var logs, snap, newest int64
	add := func(d string, snapshots, withLogs bool) {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if z, comp, ok := zkdisk.ParseSnapshotName(e.Name()); ok && snapshots && (snap == 0 || z > newest) {
				newest, snap = z, fi.Size()
				if comp != "" {
					snap *= 10
				}
			} else if _, ok := zkdisk.ParseLogName(e.Name()); ok && withLogs {
				logs += allocated(fi)
			}
		}
	}
	add(dir, true, logDir == "")
	if logDir != "" {
		add(logDir, false, true)
	}
	return logs + snap
}

// zkVersionDir resolves a dataDir to the directory holding its files: DIR/version-2
// when present, else DIR itself when it holds snapshot.* or log.* files.
func zkVersionDir(p string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("zk-data %s: %w", p, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: %s is a file; give the dataDir or its version-2/ directory", ErrNotZKData, p)
	}
	if v2 := filepath.Join(p, "version-2"); isDir(v2) {
		return v2, nil
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return "", fmt.Errorf("zk-data %s: %w", p, err)
	}
	for _, e := range ents {
		if _, _, ok := zkdisk.ParseSnapshotName(e.Name()); ok {
			return p, nil
		}
		if _, ok := zkdisk.ParseLogName(e.Name()); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s has no version-2/ directory and no snapshot.* or log.* files", ErrNotZKData, p)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func (s *zkDataStore) notes() []string {
	v := s.info
	notes := append([]string(nil), v.Notes...)
	snap := "no snapshot"
	if v.Snapshot != "" {
		snap = "snapshot " + filepath.Base(v.Snapshot)
	}
	notes = append(notes, fmt.Sprintf("offline view of %s: %s + %d txns replayed, zxid %#x", s.dir, snap, v.Applied, v.Zxid))
	if eph := s.tree.ephemerals(); len(eph) > 0 {
		n := 0
		for _, c := range eph {
			n += c
		}
		notes = append(notes, fmt.Sprintf("%d ephemeral nodes of %d sessions are present (they vanish when their session ends)", n, len(eph)))
	}
	return notes
}

func (s *zkDataStore) Source() store.SourceInfo { return s.src }

func (s *zkDataStore) Close() error { return s.tree.close() }

// full maps a client path to the tree's path under the chroot.
func (s *zkDataStore) full(path string) string {
	if s.chroot == "" {
		return path
	}
	if path == "/" || path == "" {
		return s.chroot
	}
	return s.chroot + path
}

// rel maps a tree path back to the client's view of it.
func (s *zkDataStore) rel(path string) string {
	if s.chroot == "" {
		return path
	}
	if path == s.chroot {
		return "/"
	}
	return strings.TrimPrefix(path, s.chroot)
}

// zkDataVersion maps ZooKeeper's Stat.version (0 on create) to Node.Version (>= 1).
func zkDataVersion(v int32) uint64 { return uint64(uint32(v)) + 1 }

func (s *zkDataStore) Get(path string) (store.Node, error) {
	n, ok, err := s.tree.get(s.full(path))
	if err != nil {
		return store.Node{}, fmt.Errorf("%s: %w", path, err)
	}
	if !ok {
		return store.Node{}, fmt.Errorf("%s: %w", path, store.ErrNotFound)
	}
	return store.Node{Path: path, Value: n.Data, Version: zkDataVersion(n.Stat.Version)}, nil
}

// NodeStat is what an offline view knows of a node beyond its bytes.
type NodeStat struct {
	Czxid, Mzxid   int64
	Ctime, Mtime   time.Time
	Version        int32  // ZooKeeper's own dataVersion (Node.Version is this + 1)
	Kind           string // persistent, ephemeral, container, ttl
	EphemeralOwner int64  // the session of an ephemeral node; the raw marker otherwise
}

// NodeStat returns the ZooKeeper stat of path.
func (s *zkDataStore) NodeStat(path string) (NodeStat, error) {
	n, ok, err := s.tree.get(s.full(path))
	if err != nil {
		return NodeStat{}, fmt.Errorf("%s: %w", path, err)
	}
	if !ok {
		return NodeStat{}, fmt.Errorf("%s: %w", path, store.ErrNotFound)
	}
	st := n.Stat
	return NodeStat{Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: time.UnixMilli(st.Ctime), Mtime: time.UnixMilli(st.Mtime),
		Version: st.Version, Kind: n.Kind().String(), EphemeralOwner: st.EphemeralOwner}, nil
}

func (s *zkDataStore) Walk(ctx context.Context, prefix string, fn func(store.Node) error) error {
	return s.WalkFrom(ctx, prefix, "", fn)
}

func (s *zkDataStore) WalkFrom(ctx context.Context, prefix, start string, fn func(store.Node) error) error {
	fullPrefix := s.chroot + prefix
	fullStart := ""
	if start != "" {
		fullStart = s.full(start)
	}
	if err := ctx.Err(); err != nil {
		return err // the walk below checks only every 4096 nodes
	}
	i := 0
	// ZooKeeper's own /zookeeper subtree (quota, config) is no metadata of the
	// cluster: skipped unless asked for, as the live walk (store/zk/walk.go) does.
	system := s.chroot != "" || strings.HasPrefix(prefix, "/zookeeper")
	return s.tree.walk(ctx, fullPrefix, fullStart, func(n *zkdisk.Node) error {
		// Under a chroot "/x", "/xy" shares the prefix but is not inside it.
		if s.chroot != "" && n.Path != s.chroot && !strings.HasPrefix(n.Path, s.chroot+"/") {
			return nil
		}
		// The root (the chroot itself) is not a node of the store, as in the live walk.
		if n.Path == "/" || n.Path == s.chroot {
			return nil
		}
		if !system && (n.Path == "/zookeeper" || strings.HasPrefix(n.Path, "/zookeeper/")) {
			return nil
		}
		if i++; i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fn(store.Node{Path: s.rel(n.Path), Value: n.Data, Version: zkDataVersion(n.Stat.Version)})
	})
}

func (s *zkDataStore) GetNodes(paths []string) ([]store.Node, error) {
	out := make([]store.Node, len(paths))
	for i, p := range paths {
		out[i].Path = p
		n, ok, err := s.tree.get(s.full(p))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if ok {
			out[i].Value = append([]byte(nil), n.Data...)
			out[i].Version = zkDataVersion(n.Stat.Version)
		}
	}
	return out, nil
}

// memTree is a view held in memory.
type memTree struct{ t *zkdisk.Tree }

func (m memTree) get(path string) (*zkdisk.Node, bool, error) {
	n, ok := m.t.Get(path)
	return n, ok, nil
}

func (m memTree) walk(_ context.Context, prefix, start string, fn func(n *zkdisk.Node) error) error {
	return m.t.Walk(prefix, start, fn)
}

func (m memTree) ephemerals() map[int64]int { return m.t.Ephemerals() }
func (m memTree) close() error              { return nil }

func (s *zkDataStore) readOnly(path string) error {
	return fmt.Errorf("%w: %s is an offline ZooKeeper dataDir (%s); node %s not written", store.ErrReadOnly, s.dir, store.SchemeZKData, path)
}

func (s *zkDataStore) CompareAndSet(path string, expect uint64, value []byte) (uint64, error) {
	return 0, s.readOnly(path)
}

func (s *zkDataStore) CompareAndDelete(path string, expect uint64) error {
	return s.readOnly(path)
}

func (s *zkDataStore) CompareAndSetNodes(writes []store.NodeWrite) ([]uint64, error) {
	p := ""
	if len(writes) > 0 {
		p = writes[0].Path
	}
	return nil, s.readOnly(p)
}
