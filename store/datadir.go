package store

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
	"strings"

	badger "github.com/dgraph-io/badger/v4"
)

// The two Badger databases of a data dir (docs/formats.md §7). Other folders beside
// them (the mutation journal, for one) belong to other code.
const (
	MetadataDirName = "metadata"
	LedgersDirName  = "ledgers"
)

// Options control Open.
type Options struct {
	ReadOnly bool
	// NoSandbox disables the sandbox-copy fallback for read-only opens of an uncleanly
	// shut down dir: Open then fails with ErrUncleanShutdown.
	NoSandbox bool
	// SandboxDir is where the sandbox copy goes; "" means os.TempDir().
	SandboxDir string
	// Logger receives progress lines (the sandbox copy); nil is silent.
	// Badger's own logging is always off.
	Logger io.Writer
	// Metadata and Ledgers pick other stores than the data dir's own Badger
	// databases (ParseMetadataURL, ParseLedgersURL); nil keeps the data dir's.
	Metadata, Ledgers *URL
	// Remote tunes the stores the URLs name.
	Remote RemoteOptions
	// FullVerify verifies every table instead of trusting the verification cache (verifycache.go); check sets it.
	FullVerify bool
	// Pulsar: the command reads the metadata as a Pulsar cluster's, so Open fails
	// with a *NoPulsarMetadataError when the metadata store's root holds none of
	// Pulsar's top-level nodes (CheckPulsarRoot): a forgotten or wrong chroot.
	Pulsar bool
}

// DataDir is an open data dir.
type DataDir struct {
	Path     string // as given
	Metadata MetadataStore
	Ledgers  LedgerStore
	ReadOnly bool
	// SandboxPath is non-empty when at least one database is served from a sandbox copy.
	SandboxPath string
	// releaseSandbox gives up the lock that marks SandboxPath as in use.
	releaseSandbox func()
	// Notes are things the user must be told, such as a sandbox copy being inspected.
	Notes []string
	// Sources describe the metadata and ledger stores in use, in that order.
	Sources []SourceInfo
	// Damage lists the damaged files a read-only open found and read around
	// (readonly.go); a writable open refuses a damaged store with ErrStoreDamaged.
	Damage []Damage

	meta    *badger.DB // nil when the metadata comes from a URL
	ledgers *badger.DB // nil when the ledgers come from a URL
	remote  []io.Closer
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

// Open opens an existing data dir, or the stores opts.Metadata and opts.Ledgers
// name in its place. path may be "" when both stores come from URLs (nothing can
// then be written: the journal lives in the data dir). A read-only open writes no
// byte of the dir.
func Open(path string, opts Options) (*DataDir, error) {
	var local []string
	if opts.Metadata == nil {
		local = append(local, MetadataDirName)
	}
	if opts.Ledgers == nil {
		local = append(local, LedgersDirName)
	}
	if path == "" && (len(local) > 0 || !opts.ReadOnly) {
		return nil, fmt.Errorf("%w: --data-dir is required (it holds the %s and the write journal)", ErrNeedsDataDir, describeLocal(local))
	}
	if len(local) > 0 {
		if err := checkLayout(path, local); err != nil {
			return nil, err
		}
	} else if path != "" {
		if err := checkJournalHome(path); err != nil {
			return nil, err
		}
	}
	d := &DataDir{Path: path, ReadOnly: opts.ReadOnly, logger: opts.Logger}
	if err := d.openStores(opts); err != nil {
		d.Close()
		return nil, err
	}
	d.trimmer = startTrimmer(d.tableDirs(), false)
	return d, nil
}

// tableDirs are the folders the table files of the data dir's own databases are
// mapped from: the databases' folders, and the sandbox folders Badger opened in
// their place (whose links resolve to the former).
func (d *DataDir) tableDirs() []string {
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

// openStores opens the metadata store and then the ledger store, each from its
// URL or from the data dir.
func (d *DataDir) openStores(opts Options) error {
	var err error
	if opts.Metadata != nil {
		mb, err := openMetadataURL(*opts.Metadata, opts)
		if err != nil {
			return chrootMissing(*opts.Metadata, opts, err)
		}
		d.remote = append(d.remote, mb)
		d.Metadata = mb
		d.Sources = append(d.Sources, mb.Source())
	} else {
		if d.meta, err = d.openDB(MetadataDirName, opts); err != nil {
			return err
		}
		d.Metadata = &metadataStore{db: d.meta, readOnly: d.ReadOnly}
		d.Sources = append(d.Sources, d.localSource(MetadataDirName))
	}
	if opts.Pulsar {
		if err := CheckPulsarRoot(context.Background(), d.Metadata, opts.Metadata, d.Sources[0].URL, opts); err != nil {
			return err
		}
	}
	if opts.Ledgers != nil {
		lb, err := openLedgersURL(*opts.Ledgers, opts, d.Metadata)
		if err != nil {
			return err
		}
		d.remote = append(d.remote, lb)
		d.Ledgers = lb
		d.Sources = append(d.Sources, lb.Source())
	} else {
		if d.ledgers, err = d.openDB(LedgersDirName, opts); err != nil {
			return err
		}
		d.Ledgers = &ledgerStore{db: d.ledgers, readOnly: d.ReadOnly}
		d.Sources = append(d.Sources, d.localSource(LedgersDirName))
	}
	// Bookie dirs: digests are checked with each ledger's BookKeeper metadata (bookie.go).
	if bs, ok := d.Ledgers.(*BookieStore); ok {
		bs.SetLedgerMeta(LedgerMetaFromStore(d.Metadata))
	}
	return nil
}

func (d *DataDir) localSource(name string) SourceInfo {
	return SourceInfo{URL: filepath.Join(d.Path, name), Kind: "badger", ReadOnly: d.ReadOnly}
}

func describeLocal(local []string) string {
	if len(local) == 0 {
		return "journal"
	}
	return strings.Join(local, " and ") + " store"
}

// checkJournalHome accepts a data dir that only holds a journal (or does not
// exist yet) for commands whose stores both come from URLs.
func checkJournalHome(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", path, ErrNotDataDir)
	}
	return nil
}

// Create makes a new, empty, writable data dir at path. path may exist (holding, say,
// a journal) but must not already hold either database.
func Create(path string) (*DataDir, error) {
	for _, name := range []string{MetadataDirName, LedgersDirName} {
		p := filepath.Join(path, name)
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("create data dir %s: %s already exists: %w", path, p, fs.ErrExist)
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	d := &DataDir{Path: path}
	var err error
	if d.meta, err = openBadger(filepath.Join(path, MetadataDirName), false); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", path, err)
	}
	if d.ledgers, err = openBadger(filepath.Join(path, LedgersDirName), false); err != nil {
		d.Close()
		return nil, fmt.Errorf("create data dir %s: %w", path, err)
	}
	d.initStores()
	return d, nil
}

func (d *DataDir) initStores() {
	d.Sources = []SourceInfo{d.localSource(MetadataDirName), d.localSource(LedgersDirName)}
	d.Metadata = &metadataStore{db: d.meta, readOnly: d.ReadOnly}
	d.Ledgers = &ledgerStore{db: d.ledgers, readOnly: d.ReadOnly}
}

// checkLayout tells a data dir from anything else before Badger sees the path:
// a writable Badger open would create a missing database, a read-only one would
// fail with a less helpful message. names are the databases to be opened from it.
func checkLayout(path string, names []string) error {
	st, err := os.Stat(path)
	if err != nil {
		return layoutError(path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", path, ErrNotDataDir)
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
			return fmt.Errorf("%s: %w: %s is not a directory", path, ErrNotDataDir, p)
		}
	}
	switch len(missing) {
	case 2:
		return fmt.Errorf("%s: %w: neither %s nor %s is present", path, ErrNotDataDir, missing[0], missing[1])
	case 1:
		return fmt.Errorf("%s: %w: %s is missing", path, ErrNotDataDir, missing[0])
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
			return fmt.Errorf("%s: %w: %s/ is not a Badger database (no MANIFEST)", path, ErrNotDataDir, name)
		}
	}
	return nil
}

// layoutError is a data dir's file that cannot be looked at: a missing dir is not a
// data dir; anything else (EACCES, ENOTDIR, ELOOP) is said as the system said it,
// with the path.
func layoutError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w: %w", path, ErrNotDataDir, err)
	}
	return fmt.Errorf("data dir %s: %w", path, err)
}

// openDB opens one database of the dir: verified first, read-only through a
// sandbox Badger cannot use to change the original (readonly.go).
func (d *DataDir) openDB(name string, opts Options) (*badger.DB, error) {
	return d.openVerified(name, opts)
}

// Close closes both stores and removes the sandbox copy, if any.
func (d *DataDir) Close() error {
	var errs []error
	for _, c := range d.remote {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	d.remote = nil
	// No table may be unmapped while the trimmer runs (trim.go).
	d.trimmer.Stop()
	d.trimmer = nil
	mappingsMu.Lock()
	var flat []*badger.DB
	for _, s := range d.sessions {
		if needsFlatten(s.db, s.since) {
			flat = append(flat, s.db)
		}
	}
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
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close data dir %s: %w", d.Path, err)
	}
	return nil
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

// BackupMetadata writes a Badger backup (badger's protobuf KV list) of the metadata
// database to w, to be taken before a write.
func (d *DataDir) BackupMetadata(w io.Writer) error {
	if d.meta == nil {
		// Not a read-only data dir: a store of another kind, which a Badger backup cannot hold.
		src := d.Sources[0]
		return fmt.Errorf("back up %s: %w: --backup writes a Badger backup of a data dir's own metadata store, and %s is a %s store; "+
			"take a copy of it with ledgermedic import --out DIR", src.URL, errors.ErrUnsupported, src.URL, src.Kind)
	}
	if _, err := d.meta.Backup(w, 0); err != nil {
		return fmt.Errorf("back up %s: %w", filepath.Join(d.Path, MetadataDirName), err)
	}
	return nil
}

// RawLedgerIteration passes every ledger-store key and value to fn with plain Badger
// iteration (values prefetched, not copied): the yardstick for other packages' scans.
// key and value are valid only during fn. It stops at the first truncated value with
// a *TruncatedError.
func (d *DataDir) RawLedgerIteration(ctx context.Context, fn func(key, value []byte) error) error {
	return d.RawLedgerIterationSkipping(ctx, fn, nil)
}

// RawLedgerIterationSkipping is RawLedgerIteration that passes each truncated value
// to skipped instead of fn, and goes on with the next key unless skipped returns an
// error. A nil skipped stops at the first truncated value with its *TruncatedError.
func (d *DataDir) RawLedgerIterationSkipping(ctx context.Context, fn func(key, value []byte) error, skipped func(*TruncatedError) error) error {
	if d.ledgers == nil {
		return d.scanLedgerBackend(ctx, fn, skipped)
	}
	return d.ledgers.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte{entryKeyPrefix}
		it := txn.NewIterator(opts)
		defer it.Close()
		n := 0
		for it.Rewind(); it.Valid(); it.Next() {
			if n%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			n++
			item := it.Item()
			err := item.Value(func(v []byte) error {
				if size := truncatedSize(item, len(v)); size > 0 {
					return truncatedEntry(item.Key(), len(v), size, skipped)
				}
				return fn(item.Key(), v)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// scanLedgerBackend is RawLedgerIterationSkipping over a ledger store opened from a
// URL: the same keys (EntryKey) and values, in the same order.
func (d *DataDir) scanLedgerBackend(ctx context.Context, fn func(key, value []byte) error, skipped func(*TruncatedError) error) error {
	sc, ok := d.Ledgers.(LedgerScanner)
	if !ok {
		return fmt.Errorf("ledger store %s cannot be scanned whole", d.Sources[len(d.Sources)-1].URL)
	}
	key := make([]byte, 0, entryKeyLen)
	return sc.ScanEntries(ctx, func(ledgerID, entryID int64, value []byte) error {
		key = appendEntryKey(key[:0], ledgerID, entryID)
		return fn(key, value)
	}, skipped)
}

// truncatedEntry reports the truncated value of the entry at key to skipped, or
// returns it when skipped is nil. Kept out of the loop above, which is the yardstick.
func truncatedEntry(key []byte, got int, size int64, skipped func(*TruncatedError) error) error {
	ledgerID, entryID, err := ParseEntryKey(key)
	if err != nil {
		return err
	}
	te := &TruncatedError{LedgerID: ledgerID, EntryID: entryID, Read: int64(got), Size: size}
	if skipped == nil {
		return te
	}
	return skipped(te)
}

func (d *DataDir) logf(format string, args ...any) {
	if d.logger != nil {
		fmt.Fprintf(d.logger, format, args...)
	}
}
