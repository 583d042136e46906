package badgerdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/internal/spill"
)

// Loader fills the two databases of a new data dir from writes in any order
// (fixtures generate), in memory that does not grow with what it is given.
//
// A WriteBatch (BulkWriter) sends every write through memtables, level-0
// tables and compactions, whose table builders grow in number and size with
// the database: 100,000 topics of fixture peaked at 574 MB, and a million
// would have taken some 45 minutes. The Loader sorts instead: each database's
// writes go to an external sort (internal/spill's Sorter, its runs compressed,
// in a spill dir inside the data dir's .load folder), and Commit hands the
// keys, in order, to Badger's StreamWriter, which writes each table once, at
// the last level, with no memtable, write-ahead log or compaction
// (loadstream.go).
//
// Its memory: each database's sort budget while loading (loadSortBudget), and
// while committing the sorts' merges and the StreamWriter's table builders
// (paced: loadTablesInFlight), for each of the two databases, which Commit
// writes at once.
//
// The last write to a key decides whether it is stored and with which value:
// a deleted key is absent (no tombstone is stored). Every key gets version 1.
type Loader struct {
	dir     *Dir
	scratch string     // the spill dir's parent in the data dir, removed by Close
	spill   *spill.Dir // the sorts' runs
	meta    *spill.Sorter
	ledgers *spill.Sorter
	key     []byte // reused to build keys
	val     []byte // and sorted values
	opts    LoaderOptions
	state   loaderState
}

type loaderState int

const (
	loading   loaderState = iota
	committed             // Commit succeeded: no more writes
	failed                // a write or Commit failed: the loader is unusable
)

// A write is sorted as its key and a value of one op byte, then for a put the
// value. The sort is stable, so the last write of a key comes last.
const (
	opPut    byte = 'p'
	opDelete byte = 'd'
)

const (
	// loadSortBudget is the memory one database's writes are sorted in: two
	// halves, one filling while the other is written as a run. A
	// million-topic fixture writes some 5.5 GB in all, about 190 runs per
	// database (1.5 GB of disk, compressed), merged at once.
	loadSortBudget = 32 << 20
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
	// loadScratchDir is the folder of the spill dir inside the data dir.
	loadScratchDir = ".load"
	// maxKeySize is Badger's key size limit (txn.go: maxKeySize).
	maxKeySize = 65000
	// maxValueSize: a value and its op byte make one spill record.
	maxValueSize = spill.MaxRecord - 1
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
// small, to have a little data spill to many runs.
type LoaderOptions struct {
	SortBudget int   // bytes one database's writes are sorted in (loadSortBudget)
	TableSize  int64 // bytes of one table, compressed (loadTableSize)
}

func (o LoaderOptions) withDefaults() LoaderOptions {
	if o.SortBudget <= 0 {
		o.SortBudget = loadSortBudget
	}
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
	sd, err := spill.Open(scratch)
	if err != nil {
		os.Remove(scratch)
		d.Close()
		return nil, fmt.Errorf("create data dir %s: %w", path, err)
	}
	return &Loader{dir: d, scratch: scratch, spill: sd, opts: opts,
		meta:    sd.NewSorter(MetadataDirName, opts.SortBudget, spill.Compressed()),
		ledgers: sd.NewSorter(LedgersDirName, opts.SortBudget, spill.Compressed()),
	}, nil
}

// PutNode writes a metadata node. value is copied.
func (l *Loader) PutNode(path string, value []byte) error {
	l.key = append(l.key[:0], path...)
	if err := l.add(l.meta, l.key, opPut, value); err != nil {
		return fmt.Errorf("load metadata node %q: %w", path, err)
	}
	return nil
}

// PutEntry writes a ledger entry. value is copied.
func (l *Loader) PutEntry(ledgerID, entryID int64, value []byte) error {
	l.key = appendEntryKey(l.key[:0], ledgerID, entryID)
	if err := l.add(l.ledgers, l.key, opPut, value); err != nil {
		return fmt.Errorf("load ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	return nil
}

// DeleteNode deletes a metadata node written before (absent nodes are fine).
func (l *Loader) DeleteNode(path string) error {
	l.key = append(l.key[:0], path...)
	if err := l.add(l.meta, l.key, opDelete, nil); err != nil {
		return fmt.Errorf("load: delete metadata node %q: %w", path, err)
	}
	return nil
}

// DeleteEntry deletes a ledger entry written before (absent entries are fine).
func (l *Loader) DeleteEntry(ledgerID, entryID int64) error {
	l.key = appendEntryKey(l.key[:0], ledgerID, entryID)
	if err := l.add(l.ledgers, l.key, opDelete, nil); err != nil {
		return fmt.Errorf("load: delete ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	return nil
}

// errLoaderDone: a write after Commit, or after a failure.
var errLoaderDone = errors.New("the loader has committed or failed")

func (l *Loader) add(s *spill.Sorter, key []byte, op byte, value []byte) error {
	if l.state != loading {
		return errLoaderDone
	}
	switch {
	case len(key) == 0:
		return errors.New("empty key")
	case len(key) > maxKeySize:
		return fmt.Errorf("key of %d bytes exceeds Badger's limit of %d", len(key), maxKeySize)
	case len(value) > maxValueSize:
		return fmt.Errorf("value of %d bytes exceeds the limit of %d", len(value), maxValueSize)
	}
	l.val = append(append(l.val[:0], op), value...)
	if err := s.Add(key, l.val); err != nil {
		l.state = failed
		return err
	}
	return nil
}

// Writes is the number of writes (puts and deletes) the Loader took.
func (l *Loader) Writes() int64 { return l.meta.Len() + l.ledgers.Len() }

// Commit writes everything into the databases. The Loader takes no writes
// after it. progress (nil: none) is told of the writes merged as they are, from
// two goroutines at once, up to Writes in all.
func (l *Loader) Commit(ctx context.Context, progress func(n int64)) error {
	if l.state != loading {
		return errLoaderDone
	}
	l.state = failed
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
		name string
		s    *spill.Sorter
		db   **badger.DB
	}{{MetadataDirName, l.meta, &l.dir.meta}, {LedgersDirName, l.ledgers, &l.dir.ledgers}} {
		wg.Go(func() {
			path := filepath.Join(l.dir.Path, db.name)
			err := writeSorted(*db.db, l.opts.TableSize, func(fn func(key, value []byte) error) error {
				return lastWrites(ctx, db.s, progress, fn)
			})
			if err != nil {
				errs[i] = fmt.Errorf("write %s: %w", path, err)
				return
			}
			// Its runs are not needed again: their disk goes now.
			if err := db.s.Close(); err != nil {
				errs[i] = err
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

// loadProgressEvery is how many writes a merge reads between progress reports.
const loadProgressEvery = 1 << 16

// lastWrites calls fn with the last write of every key s sorted, in key order,
// leaving out deleted keys: the sort keeps a key's writes in the order they
// were made. key and value are valid during fn only. progress (nil: none) is
// told of the writes read, now and then.
func lastWrites(ctx context.Context, s *spill.Sorter, progress func(n int64), fn func(key, value []byte) error) error {
	var (
		key, last []byte // the key being read and its last write so far
		read      int64  // writes read since progress was last told
	)
	flush := func() error {
		if len(key) == 0 || last[0] == opDelete {
			return nil // nothing read yet (no key is empty), or deleted
		}
		return fn(key, last[1:])
	}
	err := s.Sorted(ctx, func(k, v []byte) error {
		if len(v) == 0 || (v[0] != opPut && v[0] != opDelete) {
			return fmt.Errorf("sorted write of key %q: no op byte", k)
		}
		if read++; progress != nil && read == loadProgressEvery {
			progress(read)
			read = 0
		}
		if !bytes.Equal(k, key) {
			if err := flush(); err != nil {
				return err
			}
			key = append(key[:0], k...)
		}
		last = append(last[:0], v...)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if progress != nil {
		progress(read)
	}
	return err
}

// closeDB closes *db and sets it to nil (Dir.Close skips it then).
func closeDB(db **badger.DB) error {
	lockMappings()
	defer mappingsMu.Unlock()
	err := (*db).Close()
	*db = nil
	return err
}

// Close removes the sorts' runs and closes the databases. Without a Commit,
// nothing written is in them.
func (l *Loader) Close() error {
	errs := []error{l.meta.Close(), l.ledgers.Close(), l.spill.Close()}
	if err := os.RemoveAll(l.scratch); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, l.dir.Close())
	return errors.Join(errs...)
}
