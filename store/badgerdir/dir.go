// Package badgerdir is the data dir's own stores (docs/formats.md §7): the
// metadata and the ledger Badger v4 databases, opened read-only through a sandbox
// of links whose tables were verified first (readonly.go, verify.go), or a copy
// when Badger must truncate a log (sandbox.go); writable opens recover what a
// kill left. It also holds the Badger fast paths the other stores lack, as
// capabilities of its two stores (store.RangeScanner, store.KeyScanner,
// store.Backuper), and the bulk writer fixtures load with.
package badgerdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

// The two Badger databases of a data dir (docs/formats.md §7). Other folders beside
// them (the mutation journal, for one) belong to other code.
const (
	MetadataDirName = "metadata"
	LedgersDirName  = "ledgers"
)

// Kind is the SourceInfo.Kind of the data dir's own stores.
const Kind = "badger"

// Dir is the open Badger databases of one data dir: none, one or both of them
// (the others may come from URLs, which the caller opens).
type Dir struct {
	Path     string // as given
	ReadOnly bool
	// Metadata and Ledgers are the opened stores; nil until opened.
	Metadata store.MetadataStore
	Ledgers  store.LedgerStore
	// SandboxPath is non-empty when at least one database is served from a sandbox copy.
	SandboxPath string
	// releaseSandbox gives up the lock that marks SandboxPath as in use.
	releaseSandbox func()
	// Notes are things the user must be told, such as a sandbox copy being inspected.
	Notes []string
	// Damage lists the damaged files a read-only open found and read around
	// (readonly.go); a writable open refuses a damaged store with ErrStoreDamaged.
	Damage []Damage

	meta    *badger.DB // nil when the metadata is not opened from here
	ledgers *badger.DB // nil when the ledgers are not opened from here
	logger  io.Writer
	ro      *readOnlySession
	// sessions are the metadata databases opened writable on an existing dir,
	// with the version they opened at: Close may flatten them (needsFlatten).
	sessions []session
	// trimmer bounds the resident pages of the databases' table mappings (trim.go).
	trimmer *mapTrimmer
}

type session struct {
	db    *badger.DB
	since uint64
}

// New returns the Dir of path with no database opened yet.
func New(path string, opts store.Options) *Dir {
	return &Dir{Path: path, ReadOnly: opts.ReadOnly, logger: opts.Logger}
}

// Open opens both databases of an existing data dir and starts bounding their
// table mappings. A read-only open writes no byte of the dir.
func Open(path string, opts store.Options) (*Dir, error) {
	names := []string{MetadataDirName, LedgersDirName}
	if err := CheckLayout(path, names); err != nil {
		return nil, err
	}
	d := New(path, opts)
	if _, err := d.OpenMetadata(opts); err != nil {
		d.Close()
		return nil, err
	}
	if _, err := d.OpenLedgers(opts); err != nil {
		d.Close()
		return nil, err
	}
	d.Start()
	return d, nil
}

// OpenMetadata opens the metadata database: verified first, read-only through a
// sandbox Badger cannot use to change the original (readonly.go).
func (d *Dir) OpenMetadata(opts store.Options) (store.MetadataStore, error) {
	db, err := d.openVerified(MetadataDirName, opts)
	if err != nil {
		return nil, err
	}
	d.meta = db
	d.Metadata = &metadataStore{db: db, readOnly: d.ReadOnly, dir: d.Path}
	return d.Metadata, nil
}

// OpenLedgers opens the ledger database as OpenMetadata does the metadata.
func (d *Dir) OpenLedgers(opts store.Options) (store.LedgerStore, error) {
	db, err := d.openVerified(LedgersDirName, opts)
	if err != nil {
		return nil, err
	}
	d.ledgers = db
	d.Ledgers = &ledgerStore{db: db, readOnly: d.ReadOnly, dir: d.Path}
	return d.Ledgers, nil
}

// Start bounds the resident pages of the opened databases' table mappings (trim.go);
// call it once every store of the session is open.
func (d *Dir) Start() {
	d.trimmer = startTrimmer(d.tableDirs(), false)
}

// Source describes one of the databases (MetadataDirName, LedgersDirName).
func (d *Dir) Source(name string) store.SourceInfo {
	return store.SourceInfo{URL: filepath.Join(d.Path, name), Kind: Kind, ReadOnly: d.ReadOnly}
}

// tableDirs are the folders the table files of the data dir's own databases are
// mapped from: the databases' folders, and the sandbox folders Badger opened in
// their place (whose links resolve to the former).
func (d *Dir) tableDirs() []string {
	var dirs []string
	for _, db := range []struct {
		name string
		db   *badger.DB
	}{{MetadataDirName, d.meta}, {LedgersDirName, d.ledgers}} {
		if db.db != nil {
			dirs = append(dirs, filepath.Join(d.Path, db.name), db.db.Opts().Dir)
		}
	}
	return dirs
}

// Create makes a new, empty, writable data dir at path. path may exist (holding, say,
// a journal) but must not already hold either database.
func Create(path string) (*Dir, error) {
	return create(path)
}

// create is Create with adjusted options (CreateLoader's).
func create(path string, adjust ...func(badger.Options) badger.Options) (*Dir, error) {
	for _, name := range []string{MetadataDirName, LedgersDirName} {
		p := filepath.Join(path, name)
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("create data dir %s: %s already exists: %w", path, p, fs.ErrExist)
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	d := &Dir{Path: path}
	var err error
	if d.meta, err = OpenDB(filepath.Join(path, MetadataDirName), false, adjust...); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", path, err)
	}
	if d.ledgers, err = OpenDB(filepath.Join(path, LedgersDirName), false, adjust...); err != nil {
		d.Close()
		return nil, fmt.Errorf("create data dir %s: %w", path, err)
	}
	d.Metadata = &metadataStore{db: d.meta, readOnly: d.ReadOnly, dir: d.Path}
	d.Ledgers = &ledgerStore{db: d.ledgers, readOnly: d.ReadOnly, dir: d.Path}
	return d, nil
}

// CheckLayout tells a data dir from anything else before Badger sees the path:
// a writable Badger open would create a missing database, a read-only one would
// fail with a less helpful message. names are the databases to be opened from it.
func CheckLayout(path string, names []string) error {
	st, err := os.Stat(path)
	if err != nil {
		return layoutError(path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", path, store.ErrNotDataDir)
	}
	var missing []string
	for _, name := range names {
		p := filepath.Join(path, name)
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, name+"/")
		case err != nil:
			// Present or not, it cannot be looked at (permission denied, a symlink
			// loop): that is what the user must be told, not that it is missing.
			return layoutError(path, err)
		case !st.IsDir():
			return fmt.Errorf("%s: %w: %s is not a directory", path, store.ErrNotDataDir, p)
		}
	}
	switch len(missing) {
	case 2:
		return fmt.Errorf("%s: %w: neither %s nor %s is present", path, store.ErrNotDataDir, missing[0], missing[1])
	case 1:
		return fmt.Errorf("%s: %w: %s is missing", path, store.ErrNotDataDir, missing[0])
	}
	for _, name := range names {
		_, err := os.Stat(filepath.Join(path, name, "MANIFEST"))
		switch {
		case err == nil:
		case !errors.Is(err, fs.ErrNotExist):
			return layoutError(path, err)
		default:
			// A database whose MANIFEST is gone but whose tables are there is damaged,
			// not something else: the open reads its tables (readonly.go).
			if tables, _ := filepath.Glob(filepath.Join(path, name, "*.sst")); len(tables) > 0 {
				continue
			}
			return fmt.Errorf("%s: %w: %s/ is not a Badger database (no MANIFEST)", path, store.ErrNotDataDir, name)
		}
	}
	return nil
}

// layoutError is a data dir's file that cannot be looked at: a missing dir is not a
// data dir; anything else (EACCES, ENOTDIR, ELOOP) is said as the system said it,
// with the path.
func layoutError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w: %w", path, store.ErrNotDataDir, err)
	}
	return fmt.Errorf("data dir %s: %w", path, err)
}

// Close closes the opened databases and removes the sandbox copy, if any. Its
// error does not name the dir: the caller does.
func (d *Dir) Close() error {
	var errs []error
	// No table may be unmapped while the trimmer runs (trim.go).
	d.trimmer.Stop()
	d.trimmer = nil
	lockMappings()
	var flat []*badger.DB
	var sessionDirs []string
	for _, s := range d.sessions {
		sessionDirs = append(sessionDirs, s.db.Opts().Dir)
	}
	// needsFlatten may read every table's index: a trimmer in reclaim mode bounds
	// the pages that maps, as openBounded does at open.
	check := startTrimmer(sessionDirs, true)
	for _, s := range d.sessions {
		if needsFlatten(s.db, s.since) {
			flat = append(flat, s.db)
		}
	}
	check.Stop()
	d.sessions = nil
	// The ledger store is never flattened: closing it first frees its memtables
	// and caches before the flatten needs memory.
	if d.ledgers != nil {
		if err := d.ledgers.Close(); err != nil {
			errs = append(errs, err)
		}
		d.ledgers = nil
	}
	for _, db := range flat {
		if err := flatten(db); err != nil {
			errs = append(errs, fmt.Errorf("compact the tables this session wrote: %w", err))
		}
	}
	if d.meta != nil {
		if err := d.meta.Close(); err != nil {
			errs = append(errs, err)
		}
		d.meta = nil
	}
	mappingsMu.Unlock()
	if d.SandboxPath != "" {
		if err := os.RemoveAll(d.SandboxPath); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox copy: %w", err))
		}
		if d.releaseSandbox != nil {
			d.releaseSandbox()
		}
	}
	if err := d.closeReadOnly(); err != nil {
		errs = append(errs, fmt.Errorf("remove read-only sandbox: %w", err))
	}
	return errors.Join(errs...)
}

// flatten compacts a session's metadata store into one level (sessionOptions).
// Its table builders are garbage at a high rate (Badger runs up to 8 plus one
// per key split at once, each with a 3 MB index buffer), so with Go's default
// GC pacing the heap doubled the flatten's live memory, on top of what the run
// left. So the run's garbage is returned to the system first, and while the
// flatten runs the Go runtime is held to a soft limit of what the process had
// at the end of the run (at least flattenMemFloor), so the close's heap does not
// add to the run's peak unless its live memory alone needs more (the limit is
// soft: the GC then takes at most half the CPU and the heap grows past it). Its table
// pages are bounded by the trimmer's reclaim mode, which a compaction cannot make
// unsafe (trim.go). A limit the user set (GOMEMLIMIT) that is lower stays.
func flatten(db *badger.DB) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	debug.FreeOSMemory()
	limit := max(int64(ms.Sys-ms.HeapReleased), flattenMemFloor)
	if prev := debug.SetMemoryLimit(-1); prev < limit {
		limit = prev
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	reclaim := startTrimmer([]string{db.Opts().Dir}, true)
	defer reclaim.Stop()
	return db.Flatten(1)
}

// flattenMemFloor: the least soft memory limit of a flatten, so that a small run
// followed by a large flatten does not hold the flatten below what its builders
// need (45-55 MB at most: 8 plus one per key split in flight), where the GC would
// run without pause.
const flattenMemFloor = 64 << 20

// BackupMetadata writes a Badger backup of the metadata database to w (Backup).
func (d *Dir) BackupMetadata(w io.Writer) error {
	if err := d.Metadata.(store.Backuper).Backup(w); err != nil {
		return fmt.Errorf("back up %s: %w", filepath.Join(d.Path, MetadataDirName), err)
	}
	return nil
}

// Backup writes a Badger backup (badger's protobuf KV list) of the metadata
// database to w, to be taken before a write.
func (m *metadataStore) Backup(w io.Writer) error {
	_, err := m.db.Backup(w, 0)
	return err
}

// RawLedgerIteration passes every ledger-store key and value to fn with plain Badger
// iteration (values prefetched, not copied): the yardstick for other packages' scans.
// key and value are valid only during fn. It stops at the first truncated value with
// a *TruncatedError.
func (d *Dir) RawLedgerIteration(ctx context.Context, fn func(key, value []byte) error) error {
	return d.RawLedgerIterationSkipping(ctx, fn, nil)
}

// RawLedgerIterationSkipping is RawLedgerIteration that passes each truncated value
// to skipped instead of fn, and goes on with the next key unless skipped returns an
// error. A nil skipped stops at the first truncated value with its *TruncatedError.
func (d *Dir) RawLedgerIterationSkipping(ctx context.Context, fn func(key, value []byte) error, skipped func(*store.TruncatedError) error) error {
	return ScanKeys(ctx, d.Ledgers, d.Source(LedgersDirName).URL, fn, skipped)
}

// ScanKeys is RawLedgerIterationSkipping over any ledger store: the Badger
// ledger store's own keys and values, or another store's entries (a
// store.LedgerScanner) under the keys they would have here (EntryKey), in the
// same order. name is the store in errors.
func ScanKeys(ctx context.Context, ls store.LedgerStore, name string, fn func(key, value []byte) error, skipped func(*store.TruncatedError) error) error {
	if ks, ok := ls.(store.KeyScanner); ok {
		return ks.ScanKeys(ctx, fn, skipped)
	}
	sc, ok := ls.(store.LedgerScanner)
	if !ok {
		return fmt.Errorf("ledger store %s cannot be scanned whole", name)
	}
	key := make([]byte, 0, entryKeyLen)
	return sc.ScanEntries(ctx, func(ledgerID, entryID int64, value []byte) error {
		key = appendEntryKey(key[:0], ledgerID, entryID)
		return fn(key, value)
	}, skipped)
}

// ScanKeys passes every key and value of the ledger store to fn (store.KeyScanner).
func (l *ledgerStore) ScanKeys(ctx context.Context, fn func(key, value []byte) error, skipped func(*store.TruncatedError) error) error {
	return l.db.View(func(txn *badger.Txn) error {
		// Badger's own defaults, not ScanOptions: this is the plain Badger
		// iteration the scan ratios are measured against (docs/benchmarks.md).
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte{entryKeyPrefix}
		return Iterate(ctx, txn, opts, nil, func(item *badger.Item) error {
			return item.Value(func(v []byte) error {
				if size := truncatedSize(item, len(v)); size > 0 {
					return truncatedEntry(item.Key(), len(v), size, skipped)
				}
				return fn(item.Key(), v)
			})
		})
	})
}

// truncatedEntry reports the truncated value of the entry at key to skipped, or
// returns it when skipped is nil. Kept out of the loop above, which is the yardstick.
func truncatedEntry(key []byte, got int, size int64, skipped func(*store.TruncatedError) error) error {
	ledgerID, entryID, err := ParseEntryKey(key)
	if err != nil {
		return err
	}
	te := &store.TruncatedError{LedgerID: ledgerID, EntryID: entryID, Read: int64(got), Size: size}
	if skipped == nil {
		return te
	}
	return skipped(te)
}

func (d *Dir) logf(format string, args ...any) {
	if d.logger != nil {
		fmt.Fprintf(d.logger, format, args...)
	}
}
