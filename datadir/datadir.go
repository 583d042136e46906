// Package datadir opens the stores a command works on: the data dir's own Badger
// databases (store/badgerdir) or the stores that --metadata and --ledgers URLs
// name in their place (open.go: the one switch from URL scheme to backend, and
// the only package that imports every backend). The data dir is also the home
// of the write journal, so a writing command needs one even when both stores
// come from URLs.
package datadir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
	"github.com/ledgermedic/ledgermedic/store/etcddb"
)

// The two Badger databases of a data dir (docs/formats.md §7). Other folders beside
// them (the mutation journal, for one) belong to other code.
const (
	MetadataDirName = badgerdir.MetadataDirName
	LedgersDirName  = badgerdir.LedgersDirName
)

// DataDir is an open data dir.
type DataDir struct {
	Path     string // as given
	Metadata store.MetadataStore
	Ledgers  store.LedgerStore
	ReadOnly bool
	// SandboxPath is non-empty when at least one database is served from a sandbox copy.
	SandboxPath string
	// Notes are things the user must be told, such as a sandbox copy being inspected.
	Notes []string
	// Sources describe the metadata and ledger stores in use, in that order.
	Sources []store.SourceInfo
	// Damage lists the damaged files a read-only open found and read around
	// (store/badgerdir); a writable open refuses a damaged store with ErrStoreDamaged.
	Damage []Damage

	local  *badgerdir.Dir // the data dir's own databases, those opened
	remote []io.Closer
}

// Open opens an existing data dir, or the stores opts.Metadata and opts.Ledgers
// name in its place. path may be "" when both stores come from URLs (nothing can
// then be written: the journal lives in the data dir). A read-only open writes no
// byte of the dir.
func Open(path string, opts store.Options) (*DataDir, error) {
	var local []string
	if opts.Metadata == nil {
		local = append(local, MetadataDirName)
	}
	if opts.Ledgers == nil {
		local = append(local, LedgersDirName)
	}
	if path == "" && (len(local) > 0 || !opts.ReadOnly) {
		return nil, fmt.Errorf("%w: --data-dir is required (it holds the %s and the write journal)", store.ErrNeedsDataDir, describeLocal(local))
	}
	if len(local) > 0 {
		if err := badgerdir.CheckLayout(path, local); err != nil {
			return nil, err
		}
	} else if path != "" {
		if err := checkJournalHome(path); err != nil {
			return nil, err
		}
	}
	d := &DataDir{Path: path, ReadOnly: opts.ReadOnly, local: badgerdir.New(path, opts)}
	err := d.openStores(opts)
	d.Notes, d.Damage, d.SandboxPath = d.local.Notes, d.local.Damage, d.local.SandboxPath
	if err != nil {
		d.Close()
		return nil, err
	}
	d.local.Start()
	return d, nil
}

// openStores opens the metadata store and then the ledger store, each from its
// URL or from the data dir.
func (d *DataDir) openStores(opts store.Options) error {
	if opts.Metadata != nil {
		mb, err := openMetadataURL(*opts.Metadata, opts)
		if err != nil {
			return chrootMissing(*opts.Metadata, opts, err)
		}
		d.remote = append(d.remote, mb)
		d.Metadata = mb
		d.Sources = append(d.Sources, mb.Source())
	} else {
		m, err := d.local.OpenMetadata(opts)
		if err != nil {
			return err
		}
		d.Metadata = m
		d.Sources = append(d.Sources, d.local.Source(MetadataDirName))
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
		l, err := d.local.OpenLedgers(opts)
		if err != nil {
			return err
		}
		d.Ledgers = l
		d.Sources = append(d.Sources, d.local.Source(LedgersDirName))
	}
	return nil
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
		return fmt.Errorf("%s: %w: not a directory", path, store.ErrNotDataDir)
	}
	return nil
}

// Create makes a new, empty, writable data dir at path. path may exist (holding, say,
// a journal) but must not already hold either database.
func Create(path string) (*DataDir, error) {
	b, err := badgerdir.Create(path)
	if err != nil {
		return nil, err
	}
	return &DataDir{
		Path: path, Metadata: b.Metadata, Ledgers: b.Ledgers, local: b,
		Sources: []store.SourceInfo{b.Source(MetadataDirName), b.Source(LedgersDirName)},
	}, nil
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
	if d.local != nil {
		if err := d.local.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close data dir %s: %w", d.Path, err)
	}
	return nil
}

// BackupMetadata writes a backup of the metadata store to w, to be taken before a
// write: a Badger backup (badger's protobuf KV list) of a data dir's own
// metadata database, the one store that can write one (store.Backuper).
func (d *DataDir) BackupMetadata(w io.Writer) error {
	b, ok := d.ownMetadata().(store.Backuper)
	if !ok {
		// A store of another kind, which a Badger backup cannot hold.
		src := d.Sources[0]
		return fmt.Errorf("back up %s: %w: --backup writes a Badger backup of a data dir's own metadata store, and %s is a %s store; "+
			"take a copy of it with ledgermedic import --out DIR", src.URL, errors.ErrUnsupported, src.URL, src.Kind)
	}
	if err := b.Backup(w); err != nil {
		return fmt.Errorf("back up %s: %w", filepath.Join(d.Path, MetadataDirName), err)
	}
	return nil
}

// ownMetadata and ownLedgers are the stores the Badger fast paths read: the data
// dir's own databases when they are open (a caller may have put a wrapper in
// Metadata or Ledgers; the fast paths read the databases beneath it), else the
// stores opened from URLs.
func (d *DataDir) ownMetadata() store.MetadataStore {
	if d.local != nil && d.local.Metadata != nil {
		return d.local.Metadata
	}
	return d.Metadata
}

func (d *DataDir) ownLedgers() store.LedgerStore {
	if d.local != nil && d.local.Ledgers != nil {
		return d.local.Ledgers
	}
	return d.Ledgers
}

// ledgerName is the ledger store in errors.
func (d *DataDir) ledgerName() string { return d.Sources[len(d.Sources)-1].URL }

// RawLedgerIteration passes every ledger-store key and value to fn with plain Badger
// iteration (values prefetched, not copied): the yardstick for other packages' scans.
// key and value are valid only during fn. It stops at the first truncated value with
// a *TruncatedError. A ledger store of another kind passes its entries under the
// keys they would have in the data dir (badgerdir.ScanKeys).
func (d *DataDir) RawLedgerIteration(ctx context.Context, fn func(key, value []byte) error) error {
	return d.RawLedgerIterationSkipping(ctx, fn, nil)
}

// RawLedgerIterationSkipping is RawLedgerIteration that passes each truncated value
// to skipped instead of fn, and goes on with the next key unless skipped returns an
// error. A nil skipped stops at the first truncated value with its *TruncatedError.
func (d *DataDir) RawLedgerIterationSkipping(ctx context.Context, fn func(key, value []byte) error, skipped func(*store.TruncatedError) error) error {
	return badgerdir.ScanKeys(ctx, d.ownLedgers(), d.ledgerName(), fn, skipped)
}

// LedgerRanges is store.LedgerRanges of the ledger store.
func (d *DataDir) LedgerRanges(n int) ([]store.LedgerRange, bool) {
	return store.LedgerRanges(d.ownLedgers(), n)
}

// EstimateEntries is store.EstimateEntries of the ledger store.
func (d *DataDir) EstimateEntries() (int64, bool) { return store.EstimateEntries(d.ownLedgers()) }

// ScanLedgerRange is store.ScanLedgerRange of the ledger store.
func (d *DataDir) ScanLedgerRange(ctx context.Context, r store.LedgerRange, fn func(ledgerID, entryID int64, value []byte) error, skipped func(*store.TruncatedError) error) error {
	return store.ScanLedgerRange(ctx, d.ownLedgers(), d.ledgerName(), r, fn, skipped)
}

// Damage is a damaged file of the data dir's own databases that a read-only
// open read around (store/badgerdir).
type Damage = badgerdir.Damage

// SandboxNoteDB says whether a note is a sandbox copy's, and of which database
// (store/badgerdir): the caller may say those once for all databases.
func SandboxNoteDB(note string) (db string, ok bool) { return badgerdir.SandboxNoteDB(note) }

// ErrEtcdNoTime: an etcd db was asked for a point in time, which etcd does not
// record (store/etcddb); the user must give a revision.
var ErrEtcdNoTime = etcddb.ErrEtcdNoTime
