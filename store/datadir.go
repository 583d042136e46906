package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	badger "github.com/dgraph-io/badger/v4"
)

// The two Badger databases of a data dir (FORMATS.md section 7). Other folders beside
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
}

// DataDir is an open data dir.
type DataDir struct {
	Path     string // as given
	Metadata MetadataStore
	Ledgers  LedgerStore
	ReadOnly bool
	// SandboxPath is non-empty when at least one database is served from a sandbox copy.
	SandboxPath string
	// Notes are things the user must be told, such as a sandbox copy being inspected.
	Notes []string

	meta    *badger.DB
	ledgers *badger.DB
	logger  io.Writer
}

// Open opens an existing data dir. A read-only open writes no byte of the dir.
func Open(path string, opts Options) (*DataDir, error) {
	if err := checkLayout(path); err != nil {
		return nil, err
	}
	d := &DataDir{Path: path, ReadOnly: opts.ReadOnly, logger: opts.Logger}
	var err error
	if d.meta, err = d.openDB(MetadataDirName, opts); err != nil {
		d.Close()
		return nil, err
	}
	if d.ledgers, err = d.openDB(LedgersDirName, opts); err != nil {
		d.Close()
		return nil, err
	}
	d.initStores()
	return d, nil
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
	d.Metadata = &metadataStore{db: d.meta, readOnly: d.ReadOnly}
	d.Ledgers = &ledgerStore{db: d.ledgers, readOnly: d.ReadOnly}
}

// checkLayout tells a data dir from anything else before Badger sees the path:
// a writable Badger open would create a missing database, a read-only one would
// fail with a less helpful message.
func checkLayout(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", path, ErrNotDataDir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", path, ErrNotDataDir)
	}
	var missing []string
	for _, name := range []string{MetadataDirName, LedgersDirName} {
		if st, err := os.Stat(filepath.Join(path, name)); err != nil || !st.IsDir() {
			missing = append(missing, name+"/")
		}
	}
	switch len(missing) {
	case 2:
		return fmt.Errorf("%s: %w: neither %s nor %s is present", path, ErrNotDataDir, missing[0], missing[1])
	case 1:
		return fmt.Errorf("%s: %w: %s is missing", path, ErrNotDataDir, missing[0])
	}
	for _, name := range []string{MetadataDirName, LedgersDirName} {
		if _, err := os.Stat(filepath.Join(path, name, "MANIFEST")); err != nil {
			return fmt.Errorf("%s: %w: %s/ is not a Badger database (no MANIFEST)", path, ErrNotDataDir, name)
		}
	}
	return nil
}

// openDB opens one database of the dir, falling back to a sandbox copy when a
// read-only open meets an unclean shutdown.
func (d *DataDir) openDB(name string, opts Options) (*badger.DB, error) {
	var adjust []func(badger.Options) badger.Options
	if !opts.ReadOnly {
		adjust = append(adjust, sessionOptions)
	}
	db, err := openBadger(filepath.Join(d.Path, name), opts.ReadOnly, adjust...)
	if err == nil {
		return db, nil
	}
	if !opts.ReadOnly || opts.NoSandbox || !errors.Is(err, ErrUncleanShutdown) {
		return nil, err
	}
	return d.openSandboxed(name, opts)
}

// Close closes both databases and removes the sandbox copy, if any.
func (d *DataDir) Close() error {
	var errs []error
	for _, db := range []**badger.DB{&d.meta, &d.ledgers} {
		if *db == nil {
			continue
		}
		if err := (*db).Close(); err != nil {
			errs = append(errs, err)
		}
		*db = nil
	}
	if d.SandboxPath != "" {
		if err := os.RemoveAll(d.SandboxPath); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox copy: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close data dir %s: %w", d.Path, err)
	}
	return nil
}

// BackupMetadata writes a Badger backup (badger's protobuf KV list) of the metadata
// database to w, to be taken before a write.
func (d *DataDir) BackupMetadata(w io.Writer) error {
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
