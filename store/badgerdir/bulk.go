package badgerdir

import (
	"bytes"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

// BulkWriter loads many nodes and entries fast (fixtures, tests), through one Badger
// WriteBatch per database. Writes are not visible until Flush returns; call Flush
// before dropping the writer. Not for repairs: there is no compare-and-set.
type BulkWriter struct {
	path             string // the data dir, for errors
	readOnly         bool
	metaDB, ledgerDB *badger.DB
	meta             *badger.WriteBatch
	ledgers          *badger.WriteBatch
}

// NewBulkWriter returns a writer on d. On a read-only dir every write fails with ErrReadOnly.
func (d *Dir) NewBulkWriter() *BulkWriter {
	return NewBulkWriter(d.Metadata, d.Ledgers)
}

// NewBulkWriter returns a writer on the stores of a data dir created or opened
// writable (their own Badger databases). A write to a store of another kind fails.
func NewBulkWriter(meta store.MetadataStore, ledgers store.LedgerStore) *BulkWriter {
	b := &BulkWriter{}
	if m, ok := meta.(*metadataStore); ok {
		b.path, b.readOnly, b.metaDB = m.dir, m.readOnly, m.db
	}
	if l, ok := ledgers.(*ledgerStore); ok {
		b.path, b.readOnly, b.ledgerDB = l.dir, b.readOnly || l.readOnly, l.db
	}
	return b
}

func (b *BulkWriter) batch(wb **badger.WriteBatch, db *badger.DB) (*badger.WriteBatch, error) {
	if b.readOnly {
		return nil, store.ErrReadOnly
	}
	if db == nil {
		return nil, errNotBadger
	}
	if *wb == nil {
		*wb = db.NewWriteBatch()
	}
	return *wb, nil
}

// errNotBadger: a bulk write to a store that is not one of the data dir's own databases.
var errNotBadger = errors.New("bulk writes go to a data dir's own Badger databases only")

// PutNode writes a metadata node. value is copied.
func (b *BulkWriter) PutNode(path string, value []byte) error {
	wb, err := b.batch(&b.meta, b.metaDB)
	if err == nil {
		err = wb.Set([]byte(path), bytes.Clone(value))
	}
	if err != nil {
		return fmt.Errorf("bulk put metadata node %q: %w", path, err)
	}
	return nil
}

// PutEntry writes a ledger entry. value is copied.
func (b *BulkWriter) PutEntry(ledgerID, entryID int64, value []byte) error {
	wb, err := b.batch(&b.ledgers, b.ledgerDB)
	if err == nil {
		err = wb.Set(EntryKey(ledgerID, entryID), bytes.Clone(value))
	}
	if err != nil {
		return fmt.Errorf("bulk put ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	return nil
}

// DeleteNode deletes a metadata node (absent nodes are fine).
func (b *BulkWriter) DeleteNode(path string) error {
	wb, err := b.batch(&b.meta, b.metaDB)
	if err == nil {
		err = wb.Delete([]byte(path))
	}
	if err != nil {
		return fmt.Errorf("bulk delete metadata node %q: %w", path, err)
	}
	return nil
}

// DeleteEntry deletes a ledger entry (absent entries are fine).
func (b *BulkWriter) DeleteEntry(ledgerID, entryID int64) error {
	wb, err := b.batch(&b.ledgers, b.ledgerDB)
	if err == nil {
		err = wb.Delete(EntryKey(ledgerID, entryID))
	}
	if err != nil {
		return fmt.Errorf("bulk delete ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	return nil
}

// Flush commits everything written so far. The writer stays usable.
func (b *BulkWriter) Flush() error {
	var errs []error
	for _, wb := range []**badger.WriteBatch{&b.meta, &b.ledgers} {
		if *wb == nil {
			continue
		}
		if err := (*wb).Flush(); err != nil {
			errs = append(errs, err)
		}
		*wb = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bulk write to %s: %w", b.path, err)
	}
	return nil
}
