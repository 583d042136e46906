package badgerdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/ledgermedic/ledgermedic/store"
)

// Memory budget of every Badger database this package opens. A data dir holds two,
// so a process pays each number twice. ledgermedic scans data dirs far larger than
// memory, once, front to back: caching what was read buys little, and Badger's
// defaults (a 256 MB block cache, every table index and bloom filter held in memory,
// 64 MB memtables) make a scan's memory grow with the data read.
const (
	// blockCacheSize bounds the decompressed table blocks kept. Tables are Snappy
	// compressed, so every block read is decompressed into this cache (Badger
	// requires one). A scan revisits only nearby blocks (the next key, the next
	// ledger's entry 0), so 16 MB serves it; more only holds blocks that are not
	// read again, and the Go heap peaks near twice what the cache holds (GOGC).
	blockCacheSize = 16 << 20
	// indexCacheSize bounds the table indexes and bloom filters kept. Badger's
	// default (0) keeps all of them for as long as the database is open, which
	// grows with the number of tables.
	indexCacheSize = 16 << 20
	// readOnlyMemTableSize: a read-only open writes nothing, so it only needs a
	// memtable to replay a write-ahead log left behind (see memTableSize). 8 MB is
	// about Badger's minimum: a transaction (15% of it) must hold a 1 MB value.
	readOnlyMemTableSize = 8 << 20
	// writableMemTableSize: the memtable of bulk loads (Create: import,
	// fixtures), whose arena is allocated whole at open. Each flush builds an L0
	// table in buffers that double up to several times the memtable, and Badger
	// pools up to 8 of them; 8 MB keeps each near 12 MB and allows transactions of
	// 1.2 MB. Writable sessions on an existing dir use less (sessionMemTableSize).
	writableMemTableSize = 8 << 20
	// writableMemTables: one memtable takes writes while one is flushed; a bulk
	// load that outruns the flusher waits instead of holding more in memory.
	writableMemTables = 2
	// compactors: Badger's minimum for bulk loads (Create); sessions run none
	// (sessionOptions). Each compactor builds tables in memory.
	compactors = 2
)

// badgerOptions are the options of every Badger database this package opens.
//
// Badger defaults, except:
//   - the memory budget above;
//   - no logging: Badger's log lines would interleave with the tool's output;
//   - SyncWrites for writable opens: a repair tool must not report a write done
//     (and journal it as applied) before it is on disk. Bulk loads use WriteBatch,
//     and the mutation engine writes a run in a few transactions, so the cost stays small.
func badgerOptions(dir string, readOnly bool) badger.Options {
	mem := writableMemTableSize
	opts := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithReadOnly(readOnly).
		WithSyncWrites(!readOnly).
		WithBlockCacheSize(blockCacheSize).
		WithIndexCacheSize(indexCacheSize).
		WithNumMemtables(writableMemTables).
		WithNumCompactors(compactors).
		WithMetricsEnabled(false)
	if readOnly {
		mem = readOnlyMemTableSize
	}
	return opts.WithMemTableSize(memTableSize(dir, int64(mem)))
}

// Writable sessions (a repair or back-fill on an existing dir) keep their
// memory flat as the dir grows. Badger's memory beyond the budget
// above is compaction: a writable open compacted whatever level 0 held (a bulk
// load leaves several tables there, in a ledger store a back-fill never
// writes), in up to about six table builders per compaction, each as large as
// the target level's tables, which double per level as the store grows. So a
// session compacts nothing while it runs:
//   - no background compactors; writes never stall on level 0, which holds what
//     the session flushed until it closes;
//   - small memtables, tables of one size at every level, and small caches
//     (a session reads each node and entry 0 of each ledger about once);
//   - at close, the metadata store is flattened into its last level (one
//     compaction at a time) when the session wrote it and level 0 holds
//     flattenAtL0 tables or more with the session's last flush; the next
//     session then pays nothing at open. Metadata stores are small (Pulsar's
//     metadata service holds them in memory). The ledger store is never
//     flattened by a session: that would rewrite the entries, for the few a
//     schema repair writes; each session that writes entries leaves one small
//     level-0 table (its last memtable), which reads skip by their bloom
//     filters and bulk loads compact.
const (
	// sessionMemTableSize: a session's memtables fill and flush (a back-fill
	// writes every managed-ledger node), so everything that scales with the
	// memtable is paid in full once the run is large enough: two arenas of about
	// 1.3 times it (the one taking writes and the one being flushed), the
	// flush's table builder, and the memtable log's mapped pages. 2 MB keeps those
	// near 12 MB in all. A transaction holds 15% of it (300 KB): the mutation
	// engine steps at 1 MB and halves a step on ErrBatchTooBig, and values from
	// sessionValueThreshold up are written to the value log, where a transaction
	// counts a 12-byte pointer for them, so a node of any size stays writable.
	sessionMemTableSize = 2 << 20
	// sessionTableSize: one size at every level (see above). It sets the
	// builders' buffers: a flush starts with twice this and doubles until the
	// memtable fits (about 7 MB for 2 MB), and the flatten at close runs up to
	// about a dozen builders of tables this size at once, so its peak follows
	// this size (1M ledgers, docs/benchmarks.md: 2 MB tables 270-285 MB, 1 MB
	// 214, 512 KB 144-187, 256 KB 126). Below 512 KB the tables get many (a
	// file descriptor and a mapping each: 100 per 50 MB of metadata) for little.
	sessionTableSize = 512 << 10
	// sessionCacheSize bounds each of the block and index caches of a session's
	// databases: a session reads each node and entry 0 of each ledger about once.
	sessionCacheSize = 1 << 20
	// sessionL0Stall: level 0 takes every flush of the session (it is
	// compacted at close); Badger would otherwise stop writes at 15 tables.
	sessionL0Stall = 1 << 30
	// flattenAtL0: Badger's own level-0 compaction trigger (NumLevelZeroTables).
	flattenAtL0 = 5
)

// maxTxnShare is Badger's transaction limit as a share of the memtable (15%).
const maxTxnShare = 0.15

// sessionOptions adjust badgerOptions for a writable open of an existing dir.
// Tables it flushes are not compressed, because Snappy adds a compressed copy of
// every block to the table builder's buffers; compression is recorded per table,
// so these read back as usual. Bulk loads (Create) keep Snappy and Badger's
// compaction.
func sessionOptions(opts badger.Options) badger.Options {
	opts = opts.WithCompression(options.None).
		WithNumCompactors(0).
		WithNumLevelZeroTablesStall(sessionL0Stall).
		WithBaseTableSize(sessionTableSize).
		WithBlockCacheSize(sessionCacheSize).
		WithIndexCacheSize(sessionCacheSize).
		WithMemTableSize(memTableSize(opts.Dir, sessionMemTableSize))
	opts.TableSizeMultiplier = 1 // no With method in Badger v4
	return opts.WithValueThreshold(sessionValueThreshold(opts.MemTableSize))
}

// sessionValueThreshold is the value size from which a session writes values to
// the value log: Badger's default (1 MB), or less when a transaction holds less,
// since Badger refuses a threshold above its transaction limit (and a value of
// the LSM tree must fit in one transaction). Reads follow each value's own
// record, so any open reads what any other wrote.
func sessionValueThreshold(memTable int64) int64 {
	return min(badger.DefaultOptions("").ValueThreshold, int64(maxTxnShare*float64(memTable))-1)
}

// needsFlatten says whether a session's metadata store is flattened at close
// (see sessionOptions): level 0, with the last flush still to come, reaches
// flattenAtL0, and the session wrote to it since it opened at version since. The
// level's table count comes from Badger's level sizes; MaxVersion reads every
// table's index (the caller bounds the pages that maps: Dir.Close).
func needsFlatten(db *badger.DB, since uint64) bool {
	l0 := 1 // the memtable Close flushes
	if levels := db.Levels(); len(levels) > 0 {
		l0 += levels[0].NumTables
	}
	return l0 >= flattenAtL0 && db.MaxVersion() != since
}

// memTableSize returns want, or more when dir holds a write-ahead log (a .mem file)
// that the open must replay into a memtable: the memtable's arena must hold what
// the writer's held, and Badger exits the process when it does not. A log is created
// at twice its writer's memtable size, and a replayed one is cut to its content,
// whose memtable can take up to about 2.3 times as many bytes (small entries); three
// times the file size covers both. This only happens after an unclean shutdown; the
// arena is resident only where the replayed entries fill it.
func memTableSize(dir string, want int64) int64 {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil {
			want = max(want, 3*fi.Size())
		}
	}
	return want
}

// openBadger opens one database and maps Badger's open errors to this package's sentinels.
func OpenDB(dir string, readOnly bool, adjust ...func(badger.Options) badger.Options) (*badger.DB, error) {
	opts := badgerOptions(dir, readOnly)
	for _, f := range adjust {
		opts = f(opts)
	}
	db, err := badger.Open(opts)
	if err != nil {
		return nil, mapOpenError(dir, err)
	}
	return db, nil
}

// mapOpenError is the one place that recognises Badger's open errors. Badger wraps them
// with %+v, so they are not errors.Is-able and only their text identifies them.
func mapOpenError(dir string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Cannot acquire directory lock"):
		return fmt.Errorf("%s: %w: another process (a Pulsar broker tool, another ledgermedic) has it open; stop it and retry", dir, store.ErrLocked)
	case strings.Contains(msg, "Log truncate required"), strings.Contains(msg, badger.ErrTruncateNeeded.Error()):
		return fmt.Errorf("%s: %w", dir, store.ErrUncleanShutdown)
	case strings.Contains(msg, "no manifest found"):
		return fmt.Errorf("%s: %w: no Badger MANIFEST", dir, store.ErrNotDataDir)
	}
	return fmt.Errorf("open Badger database %s: %w", dir, err)
}

// mapTxnError maps Badger's transaction errors, which are plain sentinels.
func mapTxnError(err error) error {
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return store.ErrNotFound
	case errors.Is(err, badger.ErrConflict):
		return fmt.Errorf("%w: a concurrent write changed it", store.ErrVersionMismatch)
	}
	return err
}

// valueSizeSlack bounds how far Item.ValueSize may overestimate a value-log value:
// it assumes a 6-byte entry header, and real headers take 5 to 22 bytes.
const valueSizeSlack = 16

// truncatedSize returns the value's recorded size when Badger returned fewer bytes
// (got) than the item records, and 0 when the value is whole. Badger does not fail
// such reads: when the value log is shorter than a value pointer says, it logs the
// problem and returns an empty value. Cheap enough for every value of a scan.
func truncatedSize(item *badger.Item, got int) int64 {
	want := item.ValueSize()
	if want > 0 && (got == 0 || int64(got) < want-valueSizeSlack) {
		return want
	}
	return 0
}

// checkNode returns a *TruncatedError for a truncated value of the node at path.
func checkNode(item *badger.Item, path string, got int) error {
	if size := truncatedSize(item, got); size > 0 {
		return &store.TruncatedError{Path: path, LedgerID: -1, EntryID: -1, Read: int64(got), Size: size}
	}
	return nil
}

// checkEntry returns a *TruncatedError for a truncated value of a ledger entry.
func checkEntry(item *badger.Item, ledgerID, entryID int64, got int) error {
	if size := truncatedSize(item, got); size > 0 {
		return &store.TruncatedError{LedgerID: ledgerID, EntryID: entryID, Read: int64(got), Size: size}
	}
	return nil
}
