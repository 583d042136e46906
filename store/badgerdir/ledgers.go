package badgerdir

import (
	"context"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

// ledgerStore is the LedgerStore of a data dir's ledgers/ Badger database.
// Keys sort by ledger id, then entry id, both as unsigned 64-bit numbers.
type ledgerStore struct {
	db       *badger.DB
	readOnly bool
	dir      string // the data dir, for errors
}

func (l *ledgerStore) Entry(ledgerID, entryID int64) ([]byte, error) {
	r := l.EntryReader()
	defer r.Close()
	var v []byte
	err := r.Peek(ledgerID, entryID, func(b []byte) error {
		v = append([]byte(nil), b...) // as Badger's ValueCopy: nil for an empty value
		return nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// EntryReader reads in one read-only transaction: beginning and discarding one
// costs about as much as the point read itself.
func (l *ledgerStore) EntryReader() store.EntryReader {
	if l.db.IsClosed() {
		return closedReader{}
	}
	return &badgerEntryReader{txn: l.db.NewTransaction(false)}
}

type badgerEntryReader struct {
	txn *badger.Txn
	key []byte // reused: the item that holds it lives only during Peek
}

func (r *badgerEntryReader) Peek(ledgerID, entryID int64, fn func([]byte) error) error {
	r.key = appendEntryKey(r.key[:0], ledgerID, entryID)
	item, err := r.txn.Get(r.key)
	if err != nil {
		return fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, mapTxnError(err))
	}
	var bad, fnErr error
	err = item.Value(func(v []byte) error {
		if bad = checkEntry(item, ledgerID, entryID, len(v)); bad == nil { // names the entry
			fnErr = fn(v)
		}
		return nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, err)
	case bad != nil:
		return bad
	}
	return fnErr
}

func (r *badgerEntryReader) Close() { r.txn.Discard() }

// closedReader is the reader of a closed database: every read fails as Badger's would.
type closedReader struct{}

func (closedReader) Peek(ledgerID, entryID int64, _ func([]byte) error) error {
	return fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, badger.ErrDBClosed)
}

func (closedReader) Close() {}

func (l *ledgerStore) Entries(ctx context.Context, ledgerID, from, to int64, fn func(entryID int64, value []byte) error) error {
	if from < 0 {
		from = 0
	}
	if to >= 0 && to < from {
		return nil
	}
	return l.db.View(func(txn *badger.Txn) error {
		return Iterate(ctx, txn, ScanOptions(ledgerKeyPrefix(ledgerID)), EntryKey(ledgerID, from), func(item *badger.Item) error {
			_, entryID, err := ParseEntryKey(item.Key())
			if err != nil {
				return fmt.Errorf("ledger %d: %w", ledgerID, err)
			}
			if to >= 0 && uint64(entryID) > uint64(to) {
				return ErrStopIteration
			}
			return item.Value(func(v []byte) error {
				if err := checkEntry(item, ledgerID, entryID, len(v)); err != nil {
					return err
				}
				return fn(entryID, v)
			})
		})
	})
}

func (l *ledgerStore) LastEntry(ledgerID int64) (int64, error) {
	var last int64
	err := l.db.View(func(txn *badger.Txn) error {
		return LastKey(txn, ledgerKeyPrefix(ledgerID), entryKeyLen, func(key []byte) error {
			var err error
			_, last, err = ParseEntryKey(key)
			return err
		})
	})
	if err != nil {
		return 0, fmt.Errorf("ledger %d last entry: %w", ledgerID, err)
	}
	return last, nil
}

func (l *ledgerStore) LedgerIDs(ctx context.Context, fn func(ledgerID int64, entries int64) error) error {
	return l.db.View(func(txn *badger.Txn) error {
		opts := ScanOptions([]byte{entryKeyPrefix})
		var (
			cur   int64
			count int64
		)
		err := Iterate(ctx, txn, opts, nil, func(item *badger.Item) error {
			ledgerID, _, err := ParseEntryKey(item.Key())
			if err != nil {
				return err
			}
			if count > 0 && ledgerID != cur {
				if err := fn(cur, count); err != nil {
					return err
				}
				count = 0
			}
			cur = ledgerID
			count++
			return nil
		})
		if err != nil {
			return err
		}
		if count > 0 {
			return fn(cur, count)
		}
		return nil
	})
}

func (l *ledgerStore) PutEntry(ledgerID, entryID int64, value []byte) error {
	if l.readOnly {
		return fmt.Errorf("put ledger %d entry %d: %w", ledgerID, entryID, store.ErrReadOnly)
	}
	err := l.db.Update(func(txn *badger.Txn) error {
		return txn.Set(EntryKey(ledgerID, entryID), value)
	})
	if err != nil {
		return fmt.Errorf("put ledger %d entry %d: %w", ledgerID, entryID, mapTxnError(err))
	}
	return nil
}

// DeleteLedgerEntries streams the ledger's keys into a WriteBatch: a large ledger does
// not fit in one transaction.
func (l *ledgerStore) DeleteLedgerEntries(ledgerID int64) error {
	if l.readOnly {
		return fmt.Errorf("delete ledger %d entries: %w", ledgerID, store.ErrReadOnly)
	}
	wb := l.db.NewWriteBatch()
	defer wb.Cancel()
	err := l.db.View(func(txn *badger.Txn) error {
		return Iterate(context.Background(), txn, ScanOptions(ledgerKeyPrefix(ledgerID)), nil, func(item *badger.Item) error {
			return wb.Delete(item.KeyCopy(nil))
		})
	})
	if err == nil {
		err = wb.Flush()
	}
	if err != nil {
		return fmt.Errorf("delete ledger %d entries: %w", ledgerID, err)
	}
	return nil
}
