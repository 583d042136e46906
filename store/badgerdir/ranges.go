package badgerdir

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

// LedgerRanges cuts the ledger store into at most n ranges of whole ledgers
// holding about equal numbers of entries, in key order, from Badger's table
// metadata (key ranges and key counts; nothing is read) (store.RangeScanner).
func (l *ledgerStore) LedgerRanges(n int) (ranges []store.LedgerRange) {
	cuts := ledgerCuts(l.db.Tables(), n)
	var start uint64
	for _, c := range cuts {
		ranges = append(ranges, store.LedgerRange{First: start, End: c, HasEnd: true})
		start = c
	}
	return append(ranges, store.LedgerRange{First: start})
}

// LedgerRanges is store.LedgerRanges of the dir's ledger store.
func (d *Dir) LedgerRanges(n int) ([]store.LedgerRange, bool) {
	return store.LedgerRanges(d.Ledgers, n)
}

// EstimateEntries is store.EstimateEntries of the dir's ledger store.
func (d *Dir) EstimateEntries() (int64, bool) { return store.EstimateEntries(d.Ledgers) }

// ScanLedgerRange is store.ScanLedgerRange of the dir's ledger store.
func (d *Dir) ScanLedgerRange(ctx context.Context, r store.LedgerRange, fn func(ledgerID, entryID int64, value []byte) error, skipped func(*store.TruncatedError) error) error {
	return store.ScanLedgerRange(ctx, d.Ledgers, d.Source(LedgersDirName).URL, r, fn, skipped)
}

// EstimateEntries is about how many entries the ledger store holds, from
// Badger's table metadata (key counts, which include overwritten and deleted
// versions not yet compacted away). (store.RangeScanner)
func (l *ledgerStore) EstimateEntries() (n int64, ok bool) {
	for _, t := range l.db.Tables() {
		lo, hi := tableKeys(t)
		if hi == nil || hi[0] < entryKeyPrefix || lo[0] > entryKeyPrefix {
			continue
		}
		n += int64(t.KeyCount)
	}
	return n, true
}

// tableKeys returns a table's smallest and biggest user keys (Badger's keys end
// with an 8-byte version), nil when they are empty.
func tableKeys(t badger.TableInfo) (lo, hi []byte) {
	strip := func(k []byte) []byte {
		if len(k) <= 8 {
			return nil
		}
		return k[:len(k)-8]
	}
	lo, hi = strip(t.Left), strip(t.Right)
	if lo == nil || hi == nil {
		return nil, nil
	}
	return lo, hi
}

// ledgerOfKey returns the ledger id a key at or after the entry prefix falls in,
// as an unsigned number: keys short of a whole id are padded with zeros.
func ledgerOfKey(k []byte) uint64 {
	var id [8]byte
	copy(id[:], k[1:])
	return binary.BigEndian.Uint64(id[:])
}

// ledgerCuts picks up to n-1 ledger ids at which to cut the store so each range
// gets about the same share of the tables' keys. Every table's key count is
// spread evenly over the stretches between the table boundaries it covers.
func ledgerCuts(tables []badger.TableInfo, n int) []uint64 {
	type span struct {
		lo, hi uint64 // ledgers
		keys   float64
	}
	var (
		spans []span
		ids   []uint64
	)
	for _, t := range tables {
		lo, hi := tableKeys(t)
		if lo == nil || hi[0] < entryKeyPrefix || lo[0] > entryKeyPrefix {
			continue
		}
		l, h := uint64(0), ^uint64(0)
		if lo[0] == entryKeyPrefix && len(lo) > 1 {
			l = ledgerOfKey(lo)
		}
		if hi[0] == entryKeyPrefix && len(hi) > 1 {
			h = ledgerOfKey(hi)
		}
		spans = append(spans, span{l, h, float64(t.KeyCount)})
		ids = append(ids, l, h)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) < 2 {
		return nil
	}
	// weight[i] is the keys of the stretch of ledgers from ids[i] to ids[i+1].
	weight := make([]float64, len(ids)-1)
	var total float64
	for _, s := range spans {
		i, _ := slices.BinarySearch(ids, s.lo)
		j, _ := slices.BinarySearch(ids, s.hi)
		i = min(i, len(weight)-1)
		j = max(j, i+1) // a table within one ledger
		for k := i; k < j; k++ {
			weight[k] += s.keys / float64(j-i)
		}
		total += s.keys
	}
	if total == 0 {
		return nil
	}
	var (
		cuts []uint64
		acc  float64
	)
	for i, w := range weight {
		acc += w
		if len(cuts) < n-1 && acc >= total*float64(len(cuts)+1)/float64(n) {
			// Cut after the stretch: ids[i+1] starts the next range. A ledger
			// cut through by a table boundary goes whole to the next range.
			if c := ids[i+1]; c > 0 && c != ^uint64(0) && (len(cuts) == 0 || c > cuts[len(cuts)-1]) {
				cuts = append(cuts, c)
			}
		}
	}
	return cuts
}

// ScanLedgerRange passes every entry of the range to fn in key order, and each
// truncated value to skipped (nil: stop there with its *TruncatedError). Values
// are read in place, not prefetched: Badger's prefetching starts a goroutine and
// makes a copy per value, which costs a scan about as much as the iteration
// itself. value is valid only during fn. Bookie dirs can be scanned whole or one
// ledger at a time.
func (l *ledgerStore) ScanLedgerRange(ctx context.Context, r store.LedgerRange, fn func(ledgerID, entryID int64, value []byte) error, skipped func(*store.TruncatedError) error) error {
	start := binary.BigEndian.AppendUint64([]byte{entryKeyPrefix}, r.First)
	var end []byte
	if r.HasEnd {
		end = binary.BigEndian.AppendUint64([]byte{entryKeyPrefix}, r.End)
	}
	return l.db.View(func(txn *badger.Txn) error {
		opts := ScanOptions([]byte{entryKeyPrefix})
		if id, ok := r.Single(); ok {
			opts.Prefix = ledgerKeyPrefix(id)
		}
		return Iterate(ctx, txn, opts, start, func(item *badger.Item) error {
			k := item.Key()
			if end != nil && bytes.Compare(k, end) >= 0 {
				return ErrStopIteration
			}
			ledgerID, entryID, err := ParseEntryKey(k)
			if err != nil {
				return err
			}
			return item.Value(func(v []byte) error {
				if size := truncatedSize(item, len(v)); size > 0 {
					te := &store.TruncatedError{LedgerID: ledgerID, EntryID: entryID, Read: int64(len(v)), Size: size}
					if skipped == nil {
						return te
					}
					return skipped(te)
				}
				return fn(ledgerID, entryID, v)
			})
		})
	})
}
