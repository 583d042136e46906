package store

import (
	"bytes"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// BulkWriter loads many nodes and entries fast (fixtures, tests), through one Badger
// WriteBatch per database. Writes are not visible until Flush returns; call Flush
// before dropping the writer. Not for repairs: there is no compare-and-set.
type BulkWriter struct {
	d       *DataDir
	meta    *badger.WriteBatch
	ledgers *badger.WriteBatch
}

// NewBulkWriter returns a writer on d. On a read-only dir every write fails with ErrReadOnly.
func (d *DataDir) NewBulkWriter() *BulkWriter {
	return &BulkWriter{d: d}
}

func (b *BulkWriter) batch(wb **badger.WriteBatch, db *badger.DB) (*badger.WriteBatch, error) {
	if b.d.ReadOnly {
		return nil, ErrReadOnly
	}
	if *wb == nil {
		*wb = db.NewWriteBatch()
	}
	return *wb, nil
}

// PutNode writes a metadata node. value is copied.
func (b *BulkWriter) PutNode(path string, value []byte) error {
	wb, err := b.batch(&b.meta, b.d.meta)
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
	wb, err := b.batch(&b.ledgers, b.d.ledgers)
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
	wb, err := b.batch(&b.meta, b.d.meta)
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
	wb, err := b.batch(&b.ledgers, b.d.ledgers)
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
		return fmt.Errorf("bulk write to %s: %w", b.d.Path, err)
	}
	return nil
}
