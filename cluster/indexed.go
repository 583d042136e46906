package cluster

import (
	"errors"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/store"
)

// Indexed says how a topic is known to carry a broker entry index.
type Indexed int

const (
	NotIndexed        Indexed = iota
	IndexedByProperty         // the managed-ledger property "index" is set
	IndexedByEntry            // entry 0 of one of its ledgers carries BrokerEntryMetadata.index
)

func (x Indexed) String() string {
	switch x {
	case IndexedByProperty:
		return "ml-property"
	case IndexedByEntry:
		return "entry-metadata"
	}
	return "no"
}

// HasMLIndex reports whether the managed-ledger property "index" is set, and its value.
func HasMLIndex(info *mlpb.ManagedLedgerInfo) (string, bool) {
	return formats.MLProperty(info, MLIndexProperty)
}

// TopicIndexed is the one rule for "is this topic indexed": the managed-ledger
// property "index" is set, or entry 0 of any of its ledgers carries a broker
// index. The broker's index interceptor writes the property on every metadata
// update while it is on (ManagedLedgerInterceptorImpl.onUpdateManagedLedgerInfo)
// and an index into every entry it appends (AppendIndexMetadataInterceptor); it
// is broker configuration, so it may have been turned on after older ledgers
// were written, or off before the newest: any indexed ledger makes the topic
// indexed, and ledgers without an index are skipped one by one.
//
// ledgerIDs are the topic's ledgers, oldest first; entry0Indexed is asked
// newest first and the first yes stops the search.
func TopicIndexed(mlIndex bool, ledgerIDs []int64, entry0Indexed func(ledgerID int64) (bool, error)) (Indexed, error) {
	if mlIndex {
		return IndexedByProperty, nil
	}
	for i := len(ledgerIDs) - 1; i >= 0; i-- {
		ok, err := entry0Indexed(ledgerIDs[i])
		if err != nil {
			return NotIndexed, err
		}
		if ok {
			return IndexedByEntry, nil
		}
	}
	return NotIndexed, nil
}

// InfoIndexed is TopicIndexed for a decoded managed ledger, reading entry 0 of
// its ledgers from ls (Entry0Indexed) until one has a broker index.
func InfoIndexed(info *mlpb.ManagedLedgerInfo, ls store.LedgerStore) (Indexed, error) {
	_, prop := HasMLIndex(info)
	ids := make([]int64, len(info.GetLedgerInfo()))
	for i, li := range info.GetLedgerInfo() {
		ids[i] = li.GetLedgerId()
	}
	return TopicIndexed(prop, ids, func(id int64) (bool, error) { return Entry0Indexed(ls, id) })
}

// Entry0Indexed reads entry 0 of a ledger and reports whether it carries a
// broker index. A missing, damaged or undecodable entry says no (check reports
// those); other read errors are returned.
func Entry0Indexed(ls store.LedgerStore, id int64) (bool, error) {
	v, err := ls.Entry(id, 0)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTruncatedValue):
		return false, nil
	case err != nil:
		return false, err
	}
	return formats.HasBrokerIndex(v), nil
}
