package index

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/store"
)

// ledgerRef is what the searches know about one ledger from metadata alone.
type ledgerRef struct {
	ID      int64
	Entries int64 // entries to search; for the open last ledger, what the store holds
	// Timestamp is the LedgerInfo timestamp (close time, ms); 0 for the open ledger.
	Timestamp int64
	First     int64 // firstEntryIndex, when HasFirst
	HasFirst  bool
	// BadFirst holds a property value that is not a non-negative decimal.
	BadFirst string
	// NotLocal: the ledger was offloaded and deleted from BookKeeper, so its entries
	// are not in the ledger store.
	NotLocal bool
	Open     bool
}

// offloadedAway reports whether a LedgerInfo says its entries live only in tiered storage.
func offloadedAway(li *mlpb.ManagedLedgerInfo_LedgerInfo) bool {
	oc := li.GetOffloadContext()
	return oc.GetComplete() && oc.GetBookkeeperDeleted()
}

// parseFirst reads a firstEntryIndex property value.
func parseFirst(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// ledgerRefs lists the ledgers of a managed ledger in order, reading no entry. The
// LedgerInfo of the open last ledger says 0 entries, so its count comes from the
// store's last entry id (a key lookup, not an entry read).
func ledgerRefs(info *mlpb.ManagedLedgerInfo, ls store.LedgerStore, key string) ([]ledgerRef, error) {
	lis := info.GetLedgerInfo()
	refs := make([]ledgerRef, 0, len(lis))
	for i, li := range lis {
		r := ledgerRef{
			ID:        li.GetLedgerId(),
			Entries:   li.GetEntries(),
			Timestamp: li.GetTimestamp(),
			NotLocal:  offloadedAway(li),
			Open:      i == len(lis)-1 && li.GetEntries() == 0 && info.TerminatedPosition == nil,
		}
		if v, ok := formats.LedgerProperty(li, key); ok {
			if r.First, r.HasFirst = parseFirst(v); !r.HasFirst {
				r.BadFirst = v
			}
		}
		if r.Open {
			last, err := ls.LastEntry(r.ID)
			switch {
			case err == nil:
				r.Entries = last + 1
			case !errors.Is(err, store.ErrNotFound):
				return nil, fmt.Errorf("open ledger %d: %w", r.ID, err)
			}
		}
		refs = append(refs, r)
	}
	return refs, nil
}
