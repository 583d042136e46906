package store

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// LedgerRange is a run of whole ledgers in the ledger store's key order: the
// ledgers whose id, as an unsigned number (the key order), is >= First and, when
// the range has an end, < End. Scans that cut the store into ranges of whole
// ledgers never see one ledger in two ranges.
type LedgerRange struct {
	First  uint64
	End    uint64
	HasEnd bool
}

// WholeLedgerStore is the range of every ledger.
var WholeLedgerStore = LedgerRange{}

// OneLedger is the range of ledger id alone.
func OneLedger(id int64) LedgerRange {
	return LedgerRange{First: uint64(id), End: uint64(id) + 1, HasEnd: uint64(id) != ^uint64(0)}
}

// Whole reports whether the range is every ledger.
func (r LedgerRange) Whole() bool { return r.First == 0 && !r.HasEnd }

// Single returns the one ledger of a range of one ledger.
func (r LedgerRange) Single() (int64, bool) {
	return int64(r.First), r.HasEnd && r.End == r.First+1
}

func (r LedgerRange) String() string {
	if !r.HasEnd {
		return fmt.Sprintf("ledgers %d..", r.First)
	}
	return fmt.Sprintf("ledgers %d..%d", r.First, r.End-1)
}

// RangeScanner is a ledger store that cuts itself into ranges of whole ledgers
// from its own index, without reading entries, and scans each range (the data
// dir's Badger ledger store, from its table metadata).
type RangeScanner interface {
	// LedgerRanges cuts the store into at most n > 1 ranges of whole ledgers
	// holding about equal numbers of entries, in key order.
	LedgerRanges(n int) []LedgerRange
	// EstimateEntries is about how many entries the store holds; ok is false
	// when it keeps no such figures.
	EstimateEntries() (n int64, ok bool)
	// ScanLedgerRange is the package function ScanLedgerRange for this store.
	ScanLedgerRange(ctx context.Context, r LedgerRange, fn func(ledgerID, entryID int64, value []byte) error, skipped func(*TruncatedError) error) error
}

// KeyScanner is a ledger store with keys of its own (the data dir's Badger
// ledger store) that can pass every key and value to fn in key order: the
// yardstick scan of the benchmarks. key and value are valid only during fn;
// skipped receives truncated values (nil: stop there).
type KeyScanner interface {
	ScanKeys(ctx context.Context, fn func(key, value []byte) error, skipped func(*TruncatedError) error) error
}

// Backuper is a store that can write a backup of itself to w (the data dir's
// Badger metadata store: Badger's protobuf KV list), taken before a write.
type Backuper interface {
	Backup(w io.Writer) error
}

// LedgerRanges cuts ls into at most n ranges of whole ledgers (RangeScanner).
// splittable is false for stores that can only be read front to back (bookie
// dirs): they give one range.
func LedgerRanges(ls LedgerStore, n int) (ranges []LedgerRange, splittable bool) {
	rs, ok := ls.(RangeScanner)
	if !ok || n <= 1 {
		return []LedgerRange{WholeLedgerStore}, ok
	}
	return rs.LedgerRanges(n), true
}

// EstimateEntries is about how many entries ls holds (RangeScanner). ok is
// false when the store keeps no such figures; the count then is unknown until
// a scan ends.
func EstimateEntries(ls LedgerStore) (n int64, ok bool) {
	rs, ok := ls.(RangeScanner)
	if !ok {
		return 0, false
	}
	return rs.EstimateEntries()
}

// ScanLedgerRange passes every entry of the range to fn in key order, and each
// truncated value to skipped (nil: stop there with its *TruncatedError). value
// is valid only during fn. A store that is no RangeScanner (bookie dirs) can be
// scanned whole (a LedgerScanner) or one ledger at a time; name is the store in
// errors.
func ScanLedgerRange(ctx context.Context, ls LedgerStore, name string, r LedgerRange, fn func(ledgerID, entryID int64, value []byte) error, skipped func(*TruncatedError) error) error {
	if rs, ok := ls.(RangeScanner); ok {
		return rs.ScanLedgerRange(ctx, r, fn, skipped)
	}
	if r.Whole() {
		sc, ok := ls.(LedgerScanner)
		if !ok {
			return fmt.Errorf("ledger store %s cannot be scanned whole", name)
		}
		return sc.ScanEntries(ctx, fn, skipped)
	}
	id, ok := r.Single()
	if !ok {
		return fmt.Errorf("ledger store %s: %s: only whole stores and single ledgers can be scanned", name, r)
	}
	for from := int64(0); ; {
		err := ls.Entries(ctx, id, from, -1, func(entryID int64, v []byte) error { return fn(id, entryID, v) })
		var te *TruncatedError
		// The bad entry's id must lie ahead, or the next round would not get past it.
		if skipped == nil || !errors.As(err, &te) || te.Path != "" || te.LedgerID != id || te.EntryID < from || te.EntryID+1 < 0 {
			return err
		}
		if err := skipped(te); err != nil {
			return err
		}
		from = te.EntryID + 1
	}
}
