package etcddb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"

	"github.com/ledgermedic/ledgermedic/formats/etcddisk"
	"github.com/ledgermedic/ledgermedic/internal/radix"
	"github.com/ledgermedic/ledgermedic/internal/scratch"
	"github.com/ledgermedic/ledgermedic/store"
)

// Errors of the offline etcd reader.
var (
	// ErrEtcdNoTime: etcd stores no time per revision, so a point in time cannot be
	// mapped to a revision. Use a revision instead. A usage error (exit 2).
	ErrEtcdNoTime = errors.New("etcd keeps no time per revision, so --at-time cannot be mapped to one: use --revision")
	// ErrEtcdCompacted: the revision asked for is below the db's compacted revision.
	ErrEtcdCompacted = errors.New("revision compacted")
	// ErrNotEtcdDB: the file is a bbolt db of another program, or not a bbolt db.
	ErrNotEtcdDB = errors.New("not an etcd db")
	// ErrEtcdDBCorrupt: bbolt found damage, or a key or value does not decode.
	ErrEtcdDBCorrupt = errors.New("etcd db damaged")
)

// etcdDBLockWait is how long opening waits for the flock before it decides a
// server holds the file and reads a copy instead.
const etcdDBLockWait = 500 * time.Millisecond

// etcdDB is an etcd member's bbolt file read offline: the state at one revision,
// in Pulsar's layout (key = node path). It never writes the file: bbolt opens it
// read-only. A small db keeps one read transaction open for the store's life, and
// node values are served from bbolt's read-only mmap (copied before a caller sees
// them); a larger one is read once onto a sorted file on disk (spill.go) and
// closed, so that memory does not grow with the cluster.
type etcdDB struct {
	file       string // the file read (a temp copy when a server held the lock)
	db         *bolt.DB
	tx         *bolt.Tx
	tmpDir     string
	releaseTmp func()  // gives up the lock that marks tmpDir as in use
	nodes      nodeSet // the view's nodes
	source     store.SourceInfo
}

// nodeSet is the nodes of the view: in memory (memNodes) or on disk (spillNodes).
type nodeSet interface {
	// get returns the node at path; its value is the caller's.
	get(path string) (etcdDBNode, bool, error)
	// walk calls fn for each node whose path starts with prefix and is >= start,
	// in path byte order; n's value is valid during fn only.
	walk(ctx context.Context, prefix, start string, fn func(n etcdDBNode) error) error
	close() error
}

type etcdDBNode struct {
	path    string
	value   []byte
	version int64
}

// spillAbove is the db file size above which the view is read onto disk: held in
// memory, the view keeps the file's pages resident through the mmap
// (docs/benchmarks.md, "Measured decisions").
var spillAbove int64 = 128 << 20

func Open(u store.URL, opts store.Options) (store.MetadataBackend, error) {
	ro := opts.Remote
	if !ro.AtTime.IsZero() {
		return nil, fmt.Errorf("%s: %w", u, ErrEtcdNoTime)
	}
	if ro.AtZxid != 0 {
		return nil, fmt.Errorf("%w %s: a zxid names a ZooKeeper transaction; etcd takes --revision", store.ErrBadURL, u)
	}
	if ro.Revision < 0 {
		return nil, fmt.Errorf("%w %s: revision %d is negative", store.ErrBadURL, u, ro.Revision)
	}
	if len(u.Paths) != 1 {
		return nil, fmt.Errorf("%w %s: want one db file or member dir", store.ErrBadURL, u)
	}
	file, walDir, err := findEtcdDB(u.Paths[0])
	if err != nil {
		return nil, err
	}
	s := &etcdDB{file: file}
	var notes []string
	db, err := openBoltReadOnly(file, etcdDBLockWait)
	if errors.Is(err, bolt.ErrTimeout) {
		// A running etcd holds the flock: read a copy. bbolt keeps two meta pages, so a
		// copy taken mid-commit still opens at the older one; damage is reported.
		s.tmpDir, s.releaseTmp, err = scratch.NewTempDir(opts.SandboxDir, "ledgermedic-etcd-db-")
		if err != nil {
			return nil, fmt.Errorf("%s is locked by a running etcd; a temp copy failed: %w", file, err)
		}
		s.file = filepath.Join(s.tmpDir, "db")
		if err = scratch.CopyFileSparse(file, s.file); err == nil {
			db, err = openBoltReadOnly(s.file, etcdDBLockWait)
		}
		notes = append(notes, fmt.Sprintf("%s is locked by a running etcd: read a copy taken at %s; writes after that are not shown", file, time.Now().UTC().Format(time.RFC3339)))
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	s.db = db
	s.source = store.SourceInfo{URL: u.String(), Kind: store.SchemeEtcdDB, ReadOnly: true}
	if err := s.load(ro.Revision, opts.SandboxDir); err != nil {
		s.Close()
		return nil, err
	}
	s.source.Notes = append(notes, s.source.Notes...)
	if walDir != "" {
		if note := walNote(walDir, s.consistentIndex()); note != "" {
			s.source.Notes = append(s.source.Notes, note)
		}
	}
	if _, spilled := s.nodes.(*spillNodes); spilled {
		// Every node is on disk now: the db (and a copy of it) is not needed.
		if err := s.closeDB(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// findEtcdDB resolves PATH (the db file, the member dir, or the data dir above
// it) to the db file, and the WAL dir beside it when there is one.
func findEtcdDB(p string) (file, walDir string, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", "", fmt.Errorf("etcd db %s: %w", p, err)
	}
	file = p
	if st.IsDir() {
		file = ""
		for _, c := range []string{"member/snap/db", "snap/db", "db"} {
			if st, err := os.Stat(filepath.Join(p, c)); err == nil && st.Mode().IsRegular() {
				file = filepath.Join(p, c)
				break
			}
		}
		if file == "" {
			return "", "", fmt.Errorf("etcd db: no member/snap/db under %s (give the db file, the member dir or the data dir): %w", p, fs.ErrNotExist)
		}
	}
	snap := filepath.Dir(file)
	if filepath.Base(snap) == "snap" {
		if st, err := os.Stat(filepath.Join(filepath.Dir(snap), "wal")); err == nil && st.IsDir() {
			walDir = filepath.Join(filepath.Dir(snap), "wal")
		}
	}
	return file, walDir, nil
}

// openBoltReadOnly opens file with bbolt read-only (a shared flock, no write),
// turning bbolt's panics on damaged meta pages into errors.
func openBoltReadOnly(file string, wait time.Duration) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("etcd db %s: %w: bbolt: %v", file, ErrEtcdDBCorrupt, r)
		}
	}()
	// bbolt initialises a 0-byte file as a new db (Open: "Initialize the database
	// if it doesn't exist"), writing its meta pages even when asked to read only:
	// the write fails on the read-only descriptor, an error that names the wrong cause.
	if st, err := os.Stat(file); err == nil && st.Size() == 0 {
		return nil, fmt.Errorf("etcd db %s: %w: the file is empty (0 bytes), and etcd writes two meta pages into every db it creates", file, ErrNotEtcdDB)
	}
	db, err = bolt.Open(file, 0o400, &bolt.Options{ReadOnly: true, Timeout: wait})
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, err
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrChecksum), errors.Is(err, bolt.ErrVersionMismatch):
		return nil, fmt.Errorf("etcd db %s: %w: %w", file, ErrEtcdDBCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("etcd db %s: %w", file, err)
	}
	return db, nil
}

// load reads the key bucket once, keeping for each key its newest revision <= rev
// (0: the newest) unless that is a tombstone: in memory, or for a db larger than
// spillAbove in a sorted file under parent. bbolt reads an mmap: a damaged page
// can fault, so faults become panics here and panics become errors naming the file.
func (s *etcdDB) load(rev int64, parent string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("etcd db %s: %w: bbolt failed reading it: %v", s.file, ErrEtcdDBCorrupt, r)
		}
	}()
	tx, err := s.db.Begin(false)
	if err != nil {
		return fmt.Errorf("etcd db %s: %w", s.file, err)
	}
	s.tx = tx
	if err := s.checkSize(); err != nil {
		return err
	}
	keys := tx.Bucket([]byte("key"))
	meta := tx.Bucket([]byte("meta"))
	if keys == nil || meta == nil {
		return fmt.Errorf("etcd db %s: %w: no key and meta buckets (buckets: %s)", s.file, ErrNotEtcdDB, bucketNames(tx))
	}
	compacted, notes := compactedRev(meta)
	s.source.Notes = append(s.source.Notes, notes...)
	newest, err := newestRev(keys)
	if err != nil {
		return fmt.Errorf("etcd db %s: %w: %w", s.file, ErrEtcdDBCorrupt, err)
	}
	switch {
	case rev > 0 && rev < compacted:
		return fmt.Errorf("etcd db %s: revision %d: %w: the db is compacted at revision %d, so revisions before %d are gone (readable: %d to %d)",
			s.file, rev, ErrEtcdCompacted, compacted, compacted, compacted, newest)
	case rev > newest:
		return fmt.Errorf("%w etcd-db:%s: revision %d is newer than the db's newest revision %d", store.ErrBadURL, s.file, rev, newest)
	case rev == 0:
		rev = newest
	}
	s.source.Revision = rev
	if st, err := os.Stat(s.file); err == nil && st.Size() > spillAbove {
		s.source.Notes = append(s.source.Notes, fmt.Sprintf("the db (%d MB) is read onto a sorted file in a temp dir rather than held in memory", st.Size()>>20))
		return s.scanSpill(keys, rev, parent)
	}
	return s.scan(keys, rev)
}

// checkSize refuses a file shorter than bbolt's meta says (a truncated copy),
// before any page beyond its end is read.
func (s *etcdDB) checkSize() error {
	st, err := os.Stat(s.file)
	if err != nil {
		return fmt.Errorf("etcd db %s: %w", s.file, err)
	}
	if need := s.tx.Size(); st.Size() < need {
		return fmt.Errorf("etcd db %s: %w: file is %d bytes but its meta page says %d (truncated)", s.file, ErrEtcdDBCorrupt, st.Size(), need)
	}
	return nil
}

func bucketNames(tx *bolt.Tx) string {
	var names []string
	_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, fmt.Sprintf("%q", name))
		return nil
	})
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// compactedRev is the revision below which the db no longer holds history:
// meta's finishedCompactRev, or scheduledCompactRev when a compaction was under way.
func compactedRev(meta *bolt.Bucket) (int64, []string) {
	get := func(name string) int64 {
		v := meta.Get([]byte(name))
		if r, err := etcddisk.ParseRev(v); err == nil {
			return r.Main
		}
		return 0
	}
	finished, scheduled := get("finishedCompactRev"), get("scheduledCompactRev")
	if scheduled > finished {
		return scheduled, []string{fmt.Sprintf("a compaction to revision %d was scheduled but not finished (finished: %d): revisions before %d may be partly gone", scheduled, finished, scheduled)}
	}
	return finished, nil
}

func newestRev(keys *bolt.Bucket) (int64, error) {
	k, _ := keys.Cursor().Last()
	if k == nil {
		return 0, nil
	}
	r, err := etcddisk.ParseRev(k)
	return r.Main, err
}

// consistentIndex is the raft index the db has applied (meta consistent_index).
func (s *etcdDB) consistentIndex() uint64 {
	if s.tx == nil {
		return 0
	}
	meta := s.tx.Bucket([]byte("meta"))
	if meta == nil {
		return 0
	}
	v := meta.Get([]byte("consistent_index"))
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// eachRevision calls fn with every revision of a Pulsar path up to rev, in
// revision order: the key (the path), the value and version (0: a delete), both
// aliasing the mmap. Revisions of other keys are noted and left out.
func (s *etcdDB) eachRevision(bucket *bolt.Bucket, rev int64, fn func(key, value []byte, version int64) error) error {
	var skipped []string
	nSkipped := 0
	c := bucket.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		r, err := etcddisk.ParseRev(k)
		if err != nil {
			return fmt.Errorf("etcd db %s: %w: key bucket: %w", s.file, ErrEtcdDBCorrupt, err)
		}
		if r.Main > rev {
			break
		}
		kv, err := etcddisk.DecodeKV(v)
		if err != nil {
			return fmt.Errorf("etcd db %s: %w: revision %d.%d: %w", s.file, ErrEtcdDBCorrupt, r.Main, r.Sub, err)
		}
		if len(kv.Value) > 0 {
			_ = kv.Value[len(kv.Value)-1] // fault now, inside the recover, if the value runs past the file
		}
		if len(kv.Key) == 0 || kv.Key[0] != '/' {
			if nSkipped < 3 {
				skipped = append(skipped, fmt.Sprintf("%q", kv.Key))
			}
			nSkipped++
			continue
		}
		version := kv.Version
		if r.Tombstone {
			version = 0
		}
		if err := fn(kv.Key, kv.Value, version); err != nil {
			return err
		}
	}
	if nSkipped > 0 {
		s.source.Notes = append(s.source.Notes, fmt.Sprintf("%d revision(s) of keys that are not Pulsar paths (not starting with \"/\") are not shown, e.g. %s", nSkipped, strings.Join(skipped, ", ")))
	}
	return nil
}

// scan notes every revision of a Pulsar path up to rev; a sort by path (equal
// paths in revision order) then leaves each key's revisions side by side, the
// newest last, and tombstones drop out. Sorting all revisions costs less than a
// map from path to newest revision: no key is hashed, and the sort itself finds
// the equal ones.
func (s *etcdDB) scan(bucket *bolt.Bucket, rev int64) error {
	var revs []etcdDBRev
	var keys keyArena
	err := s.eachRevision(bucket, rev, func(key, value []byte, version int64) error {
		if revs == nil {
			// Presize from the file: a revision of a Pulsar node takes a few hundred
			// bytes, so this avoids most of the growth without overshooting much.
			revs = make([]etcdDBRev, 0, min(s.tx.Size()/256, 1<<24))
		}
		// Copied now, in revision order: the sort then reads a compact arena
		// rather than keys scattered over the whole mmap.
		revs = append(revs, etcdDBRev{path: keys.intern(key), value: value, version: version})
		return nil
	})
	if err != nil {
		return err
	}
	paths := make([]string, len(revs))
	idx := make([]int32, len(revs))
	for i := range revs {
		paths[i], idx[i] = revs[i].path, int32(i)
	}
	rs := radix.New(paths, len(idx), true)
	rs.Sort(idx, 0, 0)
	nodes := make(memNodes, 0, len(idx))
	for k, i := range idx {
		if k+1 < len(idx) && rs.Same(k+1) {
			continue // an older revision of the same key
		}
		if r := &revs[i]; r.version != 0 {
			nodes = append(nodes, etcdDBNode{path: r.path, value: r.value, version: r.version})
		}
	}
	s.nodes = nodes
	return nil
}

// etcdDBRev is one revision of a key as scan finds it; version 0 is a delete.
type etcdDBRev struct {
	path    string
	value   []byte // aliases the mmap
	version int64
}

// keyArena copies paths into large shared blocks: one allocation per megabyte
// instead of one per node, which spares the garbage collector on a large db.
// Bytes are only ever appended, so the strings made over them never change.
type keyArena struct{ block []byte }

func (a *keyArena) intern(k []byte) string {
	if len(k) == 0 {
		return ""
	}
	if len(a.block)+len(k) > cap(a.block) {
		a.block = make([]byte, 0, max(1<<20, len(k)))
	}
	off := len(a.block)
	a.block = append(a.block, k...)
	return unsafe.String(&a.block[off], len(k))
}

// walNote warns when the WAL holds raft entries with data past the db's
// consistent index: writes etcd acknowledged that the db does not have yet (it
// commits to bbolt every 100 ms; a crash loses the tail until etcd replays it).
func walNote(dir string, consistent uint64) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	sort.Strings(files)
	var newer, last uint64
	for _, f := range files {
		n, l, err := etcddisk.WALEntriesAfter(f, consistent)
		if err != nil {
			return fmt.Sprintf("WAL %s could not be read (%v): acknowledged writes newer than the db may be missing", f, err)
		}
		newer += n
		last = max(last, l)
	}
	if newer == 0 {
		return ""
	}
	return fmt.Sprintf("the WAL in %s holds %d raft entries with data after the db's consistent index %d (up to %d): writes etcd acknowledged that this db does not have yet; start etcd on a copy of the member dir to replay them, then read its db", dir, newer, consistent, last)
}

func (s *etcdDB) Source() store.SourceInfo { return s.source }

func (s *etcdDB) Close() error {
	var errs []error
	if s.nodes != nil {
		errs = append(errs, s.nodes.close())
	}
	errs = append(errs, s.closeDB())
	return errors.Join(errs...)
}

// closeDB closes the read transaction and the db, and removes the copy read.
func (s *etcdDB) closeDB() error {
	var errs []error
	if s.tx != nil {
		errs = append(errs, s.tx.Rollback())
		s.tx = nil
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
		s.db = nil
	}
	if s.tmpDir != "" {
		errs = append(errs, os.RemoveAll(s.tmpDir))
		s.releaseTmp()
		s.tmpDir = ""
	}
	return errors.Join(errs...)
}

func (s *etcdDB) Get(path string) (store.Node, error) {
	n, ok, err := s.nodes.get(path)
	if err != nil {
		return store.Node{}, fmt.Errorf("metadata node %q: %w", path, err)
	}
	if !ok {
		return store.Node{}, fmt.Errorf("metadata node %q: %w", path, store.ErrNotFound)
	}
	return store.Node{Path: n.path, Value: store.NonNilValue(n.value), Version: uint64(n.version)}, nil
}

func (s *etcdDB) Walk(ctx context.Context, prefix string, fn func(store.Node) error) error {
	return s.WalkFrom(ctx, prefix, "", fn)
}

func (s *etcdDB) WalkFrom(ctx context.Context, prefix, start string, fn func(store.Node) error) error {
	if err := ctx.Err(); err != nil {
		return err // the walks check only every 1024 nodes
	}
	return s.nodes.walk(ctx, prefix, start, func(n etcdDBNode) error {
		return fn(store.Node{Path: n.path, Value: n.value, Version: uint64(n.version)})
	})
}

func (s *etcdDB) GetNodes(paths []string) ([]store.Node, error) {
	nodes := make([]store.Node, len(paths))
	for i, p := range paths {
		n, err := s.Get(p)
		if errors.Is(err, store.ErrNotFound) {
			nodes[i] = store.Node{Path: p}
			continue
		}
		if err != nil {
			return nil, err
		}
		nodes[i] = n
	}
	return nodes, nil
}

// memNodes is a view held in memory, sorted by path; values alias the mmap.
type memNodes []etcdDBNode

// find is the index of the first node whose path is >= p.
func (m memNodes) find(p string) int {
	i, _ := slices.BinarySearchFunc(m, p, func(n etcdDBNode, p string) int { return strings.Compare(n.path, p) })
	return i
}

func (m memNodes) get(path string) (etcdDBNode, bool, error) {
	i := m.find(path)
	if i == len(m) || m[i].path != path {
		return etcdDBNode{}, false, nil
	}
	n := m[i]
	n.value = bytes.Clone(n.value)
	return n, true, nil
}

// walk hands each value out in a reused buffer: the mmap is read-only, and a
// caller that changed a value in place would crash the process.
func (m memNodes) walk(ctx context.Context, prefix, start string, fn func(n etcdDBNode) error) error {
	var buf []byte
	for i := m.find(max(prefix, start)); i < len(m) && strings.HasPrefix(m[i].path, prefix); i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n := m[i]
		buf = append(buf[:0], n.value...)
		n.value = buf
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

func (m memNodes) close() error { return nil }

func (s *etcdDB) readOnly(what string) error {
	return fmt.Errorf("%s in %s: %w (an etcd db is read offline; write through etcd://)", what, s.file, store.ErrReadOnly)
}

func (s *etcdDB) CompareAndSetNodes(writes []store.NodeWrite) ([]uint64, error) {
	return nil, s.readOnly(store.DescribeWrites(writes))
}

func (s *etcdDB) CompareAndSet(path string, _ uint64, _ []byte) (uint64, error) {
	return 0, s.readOnly(fmt.Sprintf("set metadata node %q", path))
}

func (s *etcdDB) CompareAndDelete(path string, _ uint64) error {
	return s.readOnly(fmt.Sprintf("delete metadata node %q", path))
}

var _ store.MetadataBackend = (*etcdDB)(nil)
