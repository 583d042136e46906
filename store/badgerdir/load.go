package badgerdir

import (
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"
	"github.com/klauspost/compress/s2"
)

// Loader fills the two databases of a new data dir from writes in any order
// (fixtures generate), in memory that does not grow with what it is given.
//
// A WriteBatch (BulkWriter) sends every write through memtables, level-0
// tables and compactions, whose table builders grow in number and size with
// the database: 100,000 topics of fixture peaked at 574 MB, and a million
// would have taken some 45 minutes. The Loader sorts instead (an external
// merge sort): each database's writes fill a buffer that, when full, is sorted
// and written to a run file beside the databases while the next one fills.
// Commit merges the runs (in rounds of loadMaxFanIn at most) and hands the
// keys, in order, to Badger's StreamWriter, which writes each table once, at
// the last level, with no memtable, write-ahead log or compaction.
//
// Its memory: two sort buffers per database while loading (loadBufferSize),
// and while committing a read buffer per run (loadRunBlock) and the
// StreamWriter's table builders (paced: loadTablesInFlight), for each of the
// two databases, which Commit writes at once.
//
// The last write to a key decides whether it is stored and with which value:
// a deleted key is absent (no tombstone is stored). Every key gets version 1.
type Loader struct {
	dir     *Dir
	scratch string // the run files' folder, removed by Close
	meta    *sorter
	ledgers *sorter
	key     []byte // reused to build keys
	state   loaderState
}

type loaderState int

const (
	loading   loaderState = iota
	committed             // Commit succeeded: no more writes
	failed                // a write or Commit failed: the loader is unusable
)

const (
	// loadBufferSize is one sort buffer: keys, values and sortRecSize bytes
	// of index per write. Each database has two (one filling, one being
	// written as a run). A million-topic fixture writes some 6 GB in all,
	// about 190 runs per database.
	loadBufferSize = 16 << 20
	// loadMaxFanIn bounds the runs merged at once, and so the read buffers of
	// a merge (9 MB at most). More runs are first merged in groups into fewer,
	// longer ones.
	loadMaxFanIn = 256
	// loadRunBlock: runs are compressed (S2, which shrinks a million topics'
	// 5.5 GB of writes to 1.5 GB of disk while the fixture is made), in blocks
	// of this size; a run being read holds a block and its compressed form
	// (some 35 KB). With 64 KB blocks (1.2 GB) the runs of a million topics
	// held 46 MB.
	loadRunBlock = 16 << 10
	// loadTableSize is the size of the tables the Loader writes (all at the
	// last level), compressed. A table builder holds the table's blocks
	// uncompressed and a compressed copy of each, in buffers that start at
	// twice the table size and double: for fixture data, which Snappy shrinks
	// about threefold, some 14 times the table size. So the tables are small,
	// as a session's (sessionTableSize): a million-topic fixture has about
	// 2,000 of 1 MB.
	loadTableSize = 1 << 20
	// loadMemTableSize: the Loader writes no memtable, but Badger allocates
	// one at open and again in StreamWriter.Prepare.
	loadMemTableSize = 1 << 20
	// loadScratchDir is the run files' folder inside the data dir.
	loadScratchDir = ".load"
	// maxKeySize is Badger's key size limit (txn.go: maxKeySize).
	maxKeySize = 65000
)

// loadOptions adjust badgerOptions for a database a Loader fills: one table
// size at every level (Badger's StreamWriter otherwise multiplies the base size
// by TableSizeMultiplier for each level down to the last, where it writes: a
// table builder of 64 MB), no compactors (it compacts nothing), and a small
// memtable, which the value threshold must fit (sessionValueThreshold: values
// from 150 KB up go to the value log).
func loadOptions(opts badger.Options, tableSize int64) badger.Options {
	opts = opts.WithBaseTableSize(tableSize).
		WithNumCompactors(0).
		WithBlockCacheSize(sessionCacheSize).
		WithIndexCacheSize(sessionCacheSize).
		WithMemTableSize(memTableSize(opts.Dir, loadMemTableSize))
	opts.TableSizeMultiplier = 1 // no With method in Badger v4
	return opts.WithValueThreshold(sessionValueThreshold(opts.MemTableSize))
}

// LoaderOptions size a Loader; a zero field takes the default. Tests make them
// small, to have a little data spill to many runs merged in several rounds.
type LoaderOptions struct {
	BufferSize int   // bytes of one sort buffer (loadBufferSize)
	MaxFanIn   int   // runs merged at once, at least 2 (loadMaxFanIn)
	TableSize  int64 // bytes of one table, compressed (loadTableSize)
}

func (o LoaderOptions) withDefaults() LoaderOptions {
	if o.BufferSize <= 0 {
		o.BufferSize = loadBufferSize
	}
	if o.MaxFanIn <= 0 {
		o.MaxFanIn = loadMaxFanIn
	}
	o.MaxFanIn = max(o.MaxFanIn, 2)
	if o.TableSize <= 0 {
		o.TableSize = loadTableSize
	}
	return o
}

// CreateLoader makes a new data dir at path, as Create does, and returns a
// Loader that fills it. Call Commit after the last write, then Close.
func CreateLoader(path string, opts LoaderOptions) (*Loader, error) {
	opts = opts.withDefaults()
	d, err := create(path, func(bo badger.Options) badger.Options { return loadOptions(bo, opts.TableSize) })
	if err != nil {
		return nil, err
	}
	scratch := filepath.Join(path, loadScratchDir)
	if err := os.Mkdir(scratch, 0o700); err != nil {
		d.Close()
		return nil, fmt.Errorf("create data dir %s: %w", path, err)
	}
	return &Loader{dir: d, scratch: scratch,
		meta:    &sorter{dir: scratch, name: MetadataDirName, opts: opts},
		ledgers: &sorter{dir: scratch, name: LedgersDirName, opts: opts},
	}, nil
}

// PutNode writes a metadata node. value is copied.
func (l *Loader) PutNode(path string, value []byte) error {
	l.key = append(l.key[:0], path...)
	if err := l.add(l.meta, l.key, value, false); err != nil {
		return fmt.Errorf("load metadata node %q: %w", path, err)
	}
	return nil
}

// PutEntry writes a ledger entry. value is copied.
func (l *Loader) PutEntry(ledgerID, entryID int64, value []byte) error {
	l.key = appendEntryKey(l.key[:0], ledgerID, entryID)
	if err := l.add(l.ledgers, l.key, value, false); err != nil {
		return fmt.Errorf("load ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	return nil
}

// DeleteNode deletes a metadata node written before (absent nodes are fine).
func (l *Loader) DeleteNode(path string) error {
	l.key = append(l.key[:0], path...)
	if err := l.add(l.meta, l.key, nil, true); err != nil {
		return fmt.Errorf("load: delete metadata node %q: %w", path, err)
	}
	return nil
}

// DeleteEntry deletes a ledger entry written before (absent entries are fine).
func (l *Loader) DeleteEntry(ledgerID, entryID int64) error {
	l.key = appendEntryKey(l.key[:0], ledgerID, entryID)
	if err := l.add(l.ledgers, l.key, nil, true); err != nil {
		return fmt.Errorf("load: delete ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	return nil
}

// errLoaderDone: a write after Commit, or after a failure.
var errLoaderDone = errors.New("the loader has committed or failed")

func (l *Loader) add(s *sorter, key, value []byte, del bool) error {
	if l.state != loading {
		return errLoaderDone
	}
	switch {
	case len(key) == 0:
		return errors.New("empty key")
	case len(key) > maxKeySize:
		return fmt.Errorf("key of %d bytes exceeds Badger's limit of %d", len(key), maxKeySize)
	case uint64(len(value)) > maxValueSize:
		return fmt.Errorf("value of %d bytes exceeds the limit of %d", len(value), maxValueSize)
	}
	if err := s.add(key, value, del); err != nil {
		l.state = failed
		return err
	}
	return nil
}

// maxValueSize: a value's length fits in a sortRec (and Badger's value log
// takes no more than a file of 2 GB).
const maxValueSize = 1<<31 - 1

// Writes is the number of writes (puts and deletes) the Loader took.
func (l *Loader) Writes() int64 { return l.meta.writes + l.ledgers.writes }

// Commit writes everything into the databases. The Loader takes no writes
// after it. progress (nil: none) is told of the writes merged as they are, from
// two goroutines at once; writes merged in an earlier round (more runs than
// MaxFanIn) are not counted, so the count may end short of Writes.
func (l *Loader) Commit(progress func(n int64)) error {
	if l.state != loading {
		return errLoaderDone
	}
	l.state = failed
	// Both sorters write their last runs at once; then no sort buffer is needed.
	for _, s := range []*sorter{l.meta, l.ledgers} {
		if err := s.spill(); err != nil {
			return s.fail(err)
		}
	}
	for _, s := range []*sorter{l.meta, l.ledgers} {
		if err := s.waitSpill(); err != nil {
			return s.fail(err)
		}
		s.buf, s.spare = nil, nil
	}
	// The tables are written through shared mappings, whose pages would stay
	// resident until the database closes (a million topics: 2 GB of tables).
	// The trimmer drops them from the process (trim.go) as they grow: a
	// StreamWriter unmaps no table while it writes (it compacts nothing), as
	// in a session, and closeDB holds mappingsMu. Its reclaim mode would also
	// take the pages from the page cache, and reading back a table Badger is
	// still writing then went to the disk.
	trimmer := startTrimmer([]string{filepath.Join(l.dir.Path, MetadataDirName), filepath.Join(l.dir.Path, LedgersDirName)}, false)
	defer trimmer.Stop()
	// The two databases are written at once, each by its own goroutine (and
	// Badger's): this is most of the work left, and there are cores for it.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, db := range []struct {
		s  *sorter
		db **badger.DB
	}{{l.meta, &l.dir.meta}, {l.ledgers, &l.dir.ledgers}} {
		wg.Go(func() {
			path := filepath.Join(l.dir.Path, db.s.name)
			if err := db.s.writeTo(*db.db, progress); err != nil {
				errs[i] = fmt.Errorf("write %s: %w", path, err)
				return
			}
			// Closing it now frees what Badger keeps for reuse (its pool of
			// table builders' buffers) while the other one is written.
			if err := closeDB(db.db); err != nil {
				errs[i] = fmt.Errorf("close %s: %w", path, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.state = committed
	return nil
}

// closeDB closes *db and sets it to nil (Dir.Close skips it then).
func closeDB(db **badger.DB) error {
	mappingsMu.Lock()
	defer mappingsMu.Unlock()
	err := (*db).Close()
	*db = nil
	return err
}

// Close removes the run files and closes the databases. Without a Commit,
// nothing written is in them.
func (l *Loader) Close() error {
	var errs []error
	for _, s := range []*sorter{l.meta, l.ledgers} {
		s.waitSpill() // its error was reported, or Commit was not called
	}
	if err := os.RemoveAll(l.scratch); err != nil {
		errs = append(errs, err)
	}
	if err := l.dir.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sorter sorts one database's writes: a buffer in memory, full buffers
// sorted and written to run files, one at a time in the background.
type sorter struct {
	dir, name string
	opts      LoaderOptions
	buf       *sortBuf // nil until the first write
	spare     *sortBuf // a written buffer, for reuse
	pending   *sortBuf // being written
	spilled   chan error
	runs      []string // oldest first
	made      int      // run files made, for their names
	writes    int64    // writes added
}

// sortBuf holds writes: their keys and values back to back in data, and an
// index of them in recs.
type sortBuf struct {
	data []byte
	recs []sortRec
}

// sortRec is one write in a sortBuf: the key at data[off:off+klen], the value
// right after it. off grows with each write, so it orders the writes.
type sortRec struct {
	off        int
	klen, vlen uint32
	del        bool
}

const sortRecSize = 24 // unsafe.Sizeof(sortRec{}) on 64-bit platforms

// newSortBuf allocates the buffer's bytes at once, so that appending never
// copies them (or leaves the buffer with room for twice what it holds).
func newSortBuf(size int) *sortBuf { return &sortBuf{data: make([]byte, 0, size)} }

func (b *sortBuf) size() int { return len(b.data) + len(b.recs)*sortRecSize }

func (b *sortBuf) key(r sortRec) []byte { return b.data[r.off : r.off+int(r.klen)] }

func (b *sortBuf) value(r sortRec) []byte {
	start := r.off + int(r.klen)
	return b.data[start : start+int(r.vlen)]
}

func (b *sortBuf) reset() {
	b.data, b.recs = b.data[:0], b.recs[:0]
}

func (s *sorter) add(key, value []byte, del bool) error {
	if s.buf == nil {
		s.buf = newSortBuf(s.opts.BufferSize)
	}
	if len(s.buf.recs) > 0 && s.buf.size()+len(key)+len(value)+sortRecSize > s.opts.BufferSize {
		if err := s.spill(); err != nil {
			return s.fail(err)
		}
		if s.buf = s.spare; s.buf == nil {
			s.buf = newSortBuf(s.opts.BufferSize)
		}
		s.spare = nil
	}
	s.writes++
	b := s.buf
	b.recs = append(b.recs, sortRec{off: len(b.data), klen: uint32(len(key)), vlen: uint32(len(value)), del: del})
	b.data = append(append(b.data, key...), value...)
	return nil
}

// fail names the database in err.
func (s *sorter) fail(err error) error { return fmt.Errorf("sort %s writes: %w", s.name, err) }

// spill hands the buffer (if it holds anything) to a goroutine that writes it
// as a run, after the previous run is written; the sorter has no buffer after it.
func (s *sorter) spill() error {
	if err := s.waitSpill(); err != nil {
		return err
	}
	if s.buf == nil || len(s.buf.recs) == 0 {
		return nil
	}
	path := s.newRun()
	s.runs = append(s.runs, path)
	s.pending, s.buf = s.buf, nil
	s.spilled = make(chan error, 1)
	go func(b *sortBuf) { s.spilled <- writeRun(path, b) }(s.pending)
	return nil
}

func (s *sorter) newRun() string {
	s.made++
	return filepath.Join(s.dir, fmt.Sprintf("%s-%06d", s.name, s.made))
}

// waitSpill waits for the run being written, if any, and returns its error.
func (s *sorter) waitSpill() error {
	if s.pending == nil {
		return nil
	}
	err := <-s.spilled
	s.pending.reset()
	s.spare, s.pending = s.pending, nil
	return err
}

// sortWrites sorts b's writes by key, the later write of a key last, and
// keeps only the last write of each key.
func (b *sortBuf) sortWrites() {
	slices.SortFunc(b.recs, func(x, y sortRec) int {
		if c := bytes.Compare(b.key(x), b.key(y)); c != 0 {
			return c
		}
		return cmp.Compare(x.off, y.off)
	})
	out := b.recs[:0]
	for i, r := range b.recs {
		if i+1 < len(b.recs) && bytes.Equal(b.key(r), b.key(b.recs[i+1])) {
			continue
		}
		out = append(out, r)
	}
	b.recs = out
}

// writeRun sorts b and writes it to a new run file at path.
func writeRun(path string, b *sortBuf) error {
	b.sortWrites()
	w, err := createRun(path)
	if err != nil {
		return err
	}
	for _, r := range b.recs {
		w.add(b.key(r), b.value(r), r.del)
	}
	return w.close()
}

// A run file holds writes in key order, each: uvarint key length, uvarint
// value length << 1 | deleted, key, value; S2-compressed in blocks of
// loadRunBlock (with a checksum each).
type runWriter struct {
	path string
	f    *os.File
	w    *s2.Writer
	head [2 * binary.MaxVarintLen64]byte
}

func createRun(path string) (*runWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &runWriter{path: path, f: f, w: s2.NewWriter(f, s2.WriterBlockSize(loadRunBlock), s2.WriterConcurrency(1))}, nil
}

// add appends a write; errors stick in the s2.Writer until close.
func (w *runWriter) add(key, value []byte, del bool) {
	flag := uint64(len(value)) << 1
	if del {
		flag |= 1
	}
	n := binary.PutUvarint(w.head[:], uint64(len(key)))
	n += binary.PutUvarint(w.head[n:], flag)
	w.w.Write(w.head[:n])
	w.w.Write(key)
	w.w.Write(value)
}

func (w *runWriter) close() error {
	err := w.w.Close()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write run %s: %w", w.path, err)
	}
	return nil
}

// writeTo merges the runs, all written, into db, which must be empty,
// through a StreamWriter, and removes them.
func (s *sorter) writeTo(db *badger.DB, progress func(n int64)) error {
	for len(s.runs) > s.opts.MaxFanIn {
		if err := s.mergeGroups(); err != nil {
			return err
		}
	}
	m, err := openMerge(s.runs)
	if err != nil {
		return err
	}
	defer m.close()
	m.progress = progress
	sw := db.NewStreamWriter()
	if err := sw.Prepare(); err != nil {
		sw.Cancel()
		return err
	}
	batch := max(int(s.opts.TableSize/4), 16<<10)
	st := &streamSink{sw: sw, db: db, batch: batch, buf: z.NewBuffer(batch+batch/4, "badgerdir.Loader"), kv: &pb.KV{Version: 1}}
	defer st.buf.Release()
	if err := m.each(false, st.add); err != nil {
		sw.Cancel()
		return err
	}
	if err := sw.Write(st.buf); err != nil {
		sw.Cancel()
		return err
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	for _, path := range s.runs {
		os.Remove(path)
	}
	s.runs = nil
	return nil
}

// mergeGroups merges the runs, MaxFanIn at a time, into fewer runs, in the
// same order. Deletes are kept, except in the group of the oldest run, before
// which nothing was written.
func (s *sorter) mergeGroups() error {
	var merged []string
	for start := 0; start < len(s.runs); start += s.opts.MaxFanIn {
		group := s.runs[start:min(start+s.opts.MaxFanIn, len(s.runs))]
		path := s.newRun()
		if err := mergeRuns(group, path, start > 0); err != nil {
			return err
		}
		for _, p := range group {
			os.Remove(p)
		}
		merged = append(merged, path)
	}
	s.runs = merged
	return nil
}

func mergeRuns(runs []string, path string, keepDeletes bool) error {
	m, err := openMerge(runs)
	if err != nil {
		return err
	}
	defer m.close()
	w, err := createRun(path)
	if err != nil {
		return err
	}
	err = m.each(keepDeletes, func(key, value []byte, del bool) error {
		w.add(key, value, del)
		return nil
	})
	if cerr := w.close(); err == nil {
		err = cerr
	}
	return err
}

// runSource reads one run file.
type runSource struct {
	path  string
	f     *os.File
	r     *s2.Reader
	age   int // the run's place, oldest first: of two writes of a key, the younger counts
	k, v  []byte
	del   bool
	fault error
}

func openRun(path string, age int) (*runSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &runSource{path: path, f: f, r: s2.NewReader(f, s2.ReaderMaxBlockSize(loadRunBlock)), age: age}, nil
}

// next reads the next write; false at the end of the run or on an error
// (then in fault).
func (s *runSource) next() bool {
	klen, err := binary.ReadUvarint(s.r)
	if errors.Is(err, io.EOF) {
		return false
	}
	var flag uint64
	if err == nil {
		flag, err = binary.ReadUvarint(s.r)
	}
	if err == nil && (klen > maxKeySize || flag>>1 > maxValueSize) {
		err = fmt.Errorf("a write of %d + %d bytes", klen, flag>>1)
	}
	if err == nil {
		s.k = slices.Grow(s.k[:0], int(klen))[:klen]
		s.v = slices.Grow(s.v[:0], int(flag>>1))[:flag>>1]
		s.del = flag&1 == 1
		if _, err = io.ReadFull(s.r, s.k); err == nil {
			_, err = io.ReadFull(s.r, s.v)
		}
	}
	if err != nil {
		s.fault = fmt.Errorf("read run %s: %w", s.path, err)
		return false
	}
	return true
}

// merge is a heap of runs by their current key, the youngest first among
// equal keys.
type merge struct {
	runs []*runSource // all of them, to close
	h    []*runSource
	// progress, when set, is told of the writes read, now and then.
	progress func(n int64)
	read     int64 // writes read since progress was last told
}

func (m *merge) Len() int { return len(m.h) }
func (m *merge) Less(i, j int) bool {
	if c := bytes.Compare(m.h[i].k, m.h[j].k); c != 0 {
		return c < 0
	}
	return m.h[i].age > m.h[j].age
}
func (m *merge) Swap(i, j int) { m.h[i], m.h[j] = m.h[j], m.h[i] }
func (m *merge) Push(x any)    { m.h = append(m.h, x.(*runSource)) }
func (m *merge) Pop() any {
	x := m.h[len(m.h)-1]
	m.h = m.h[:len(m.h)-1]
	return x
}

// openMerge opens the runs (oldest first) and reads the first write of each.
func openMerge(paths []string) (*merge, error) {
	m := &merge{}
	for i, path := range paths {
		r, err := openRun(path, i)
		if err != nil {
			m.close()
			return nil, err
		}
		m.runs = append(m.runs, r)
		if r.next() {
			m.h = append(m.h, r)
		} else if r.fault != nil {
			m.close()
			return nil, r.fault
		}
	}
	heap.Init(m)
	return m, nil
}

func (m *merge) close() {
	for _, r := range m.runs {
		r.f.Close()
	}
}

// advance moves the run at the top to its next write, or off the heap.
func (m *merge) advance() error {
	if m.read++; m.progress != nil && m.read == loadProgressEvery {
		m.progress(m.read)
		m.read = 0
	}
	top := m.h[0]
	if top.next() {
		heap.Fix(m, 0)
		return nil
	}
	heap.Pop(m)
	return top.fault
}

// each calls fn with the last write of every key, in key order; deleted keys
// are left out unless keepDeletes. key and value are valid during fn only.
func (m *merge) each(keepDeletes bool, fn func(key, value []byte, del bool) error) error {
	var cur []byte
	for m.Len() > 0 {
		top := m.h[0]
		cur = append(cur[:0], top.k...)
		if !top.del || keepDeletes {
			if err := fn(cur, top.v, top.del); err != nil {
				return err
			}
		}
		// The older writes of the key are superseded.
		if err := m.advance(); err != nil {
			return err
		}
		for m.Len() > 0 && bytes.Equal(m.h[0].k, cur) {
			if err := m.advance(); err != nil {
				return err
			}
		}
	}
	if m.progress != nil {
		m.progress(m.read)
	}
	return nil
}

// loadProgressEvery is how many writes a merge reads between progress reports.
const loadProgressEvery = 1 << 16

// streamSink hands the merged keys to a StreamWriter in batches of a quarter
// table (the StreamWriter copies them, and queues up to three).
type streamSink struct {
	sw    *badger.StreamWriter
	db    *badger.DB
	batch int
	buf   *z.Buffer
	kv    *pb.KV
	last  []byte
	// sent counts the keys and their bytes (keys and values) handed to the
	// StreamWriter; marks holds sent as it was after each batch, from the
	// last batch known to be in the tables on.
	sent  sentMark
	marks []sentMark
	// What the tables written so far hold (see pace): their number and bytes
	// on disk, and the bytes sent per byte on disk, as last sampled (when
	// there were sampledAt tables).
	tables, disk int64
	perDisk      float64
	sampledAt    int64
}

type sentMark struct{ keys, bytes uint64 }

func (st *streamSink) add(key, value []byte, _ bool) error {
	if st.sent.keys > 0 && bytes.Compare(key, st.last) <= 0 {
		// The StreamWriter would panic, in its own goroutine.
		return fmt.Errorf("merge out of order at key %q after %q", key, st.last)
	}
	st.kv.Key, st.kv.Value = key, value
	badger.KVToBuffer(st.kv, st.buf)
	st.last = append(st.last[:0], key...)
	st.sent.keys++
	st.sent.bytes += uint64(len(key) + len(value))
	if st.buf.LenNoPadding() < st.batch {
		return nil
	}
	return st.flush()
}

// flush writes the batch and paces the merge.
func (st *streamSink) flush() error {
	if err := st.sw.Write(st.buf); err != nil {
		return err
	}
	st.buf.Reset()
	st.marks = append(st.marks, st.sent)
	st.pace()
	return nil
}

// Pacing. The StreamWriter hands each full table builder to a goroutine that
// writes the table out, up to 16 at a time, and starts the next builder at
// once. When writing tables falls behind the merge (a slow or shared disk),
// the builders in flight pile up, and Badger's pool keeps their buffers for
// reuse: committing a 100,000-topic fixture took 130 MB of builders. So the
// merge waits while the bytes sent but not yet in a table exceed
// loadTablesInFlight tables' worth (the bytes of the tables written so far,
// over their number) and four batches (those queued in the StreamWriter, and
// the one the count of what is in the tables misses).
//
// What the tables hold is known two ways. DB.Levels gives their number and
// bytes on disk, at no cost. DB.Tables gives their keys, whence the bytes sent
// they hold (marks), but reads every table's index: a page fault or more per
// table once the trimmer dropped it, for each of the hundreds of waits of a
// million-topic fixture (2,000 tables), which kept 60 MB of index pages
// resident. So the bytes sent per byte on disk are sampled from Tables when
// the tables have grown by an eighth since the last sample, and Levels
// gives the rest.
const (
	loadTablesInFlight = 2
	loadPacePoll       = 2 * time.Millisecond
	// loadPaceStall: how long the merge waits while no table is written at
	// all before it goes on regardless: a builder being filled with more than
	// the tables' worth above (values that compress much better than those
	// before) would otherwise wait for itself.
	loadPaceStall = time.Second
)

// pace waits until the tables written catch up with what was sent (see
// above). What it knows to be written only grows, so it asks Badger only when
// that is not enough.
func (st *streamSink) pace() {
	var waited time.Duration
	for !st.caughtUp() {
		before := st.tables
		st.refresh()
		if st.tables == 0 || st.caughtUp() {
			return // nothing to go by before the first table
		}
		if st.tables != before {
			waited = 0
		}
		if waited >= loadPaceStall {
			return
		}
		time.Sleep(loadPacePoll)
		waited += loadPacePoll
	}
}

func (st *streamSink) caughtUp() bool {
	if st.tables == 0 || st.perDisk == 0 {
		return false
	}
	written := float64(st.disk) * st.perDisk
	return float64(st.sent.bytes)-written <= loadTablesInFlight*written/float64(st.tables)+4*float64(st.batch)
}

// refresh learns how many tables are written and their bytes on disk, and
// samples the bytes sent per byte on disk when due.
func (st *streamSink) refresh() {
	st.tables, st.disk = levelTables(st.db)
	if st.tables > 0 && (st.perDisk == 0 || st.tables >= st.sampledAt+max(1, st.sampledAt/8)) {
		st.sample()
	}
}

func levelTables(db *badger.DB) (tables, disk int64) {
	for _, l := range db.Levels() {
		tables += int64(l.NumTables)
		disk += l.Size
	}
	return tables, disk
}

// sample counts the keys in the tables, finds the bytes sent that they hold
// (to the last whole batch), and divides by their bytes on disk.
func (st *streamSink) sample() {
	var keys uint64
	for _, t := range st.db.Tables() {
		keys += uint64(t.KeyCount)
	}
	tables, disk := levelTables(st.db) // as Tables saw them, but for a table added since
	i := 0
	for i+1 < len(st.marks) && st.marks[i+1].keys <= keys {
		i++
	}
	st.marks = st.marks[i:]
	if len(st.marks) == 0 || st.marks[0].keys > keys || disk == 0 {
		return
	}
	st.tables, st.disk, st.sampledAt = tables, disk, tables
	st.perDisk = float64(st.marks[0].bytes) / float64(disk)
}
