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
	return topicIndexedAt(mlIndex, len(ledgerIDs), func(i int) (bool, error) { return entry0Indexed(ledgerIDs[i]) })
}

// topicIndexedAt is TopicIndexed asking about ledgers by position, oldest first.
func topicIndexedAt(mlIndex bool, ledgers int, entry0Indexed func(i int) (bool, error)) (Indexed, error) {
	if mlIndex {
		return IndexedByProperty, nil
	}
	for i := ledgers - 1; i >= 0; i-- {
		ok, err := entry0Indexed(i)
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
	return InfoIndexedKnown(info, ls, nil)
}

// Entry0Read is what a caller's own read of a ledger's entry 0 said, so that
// InfoIndexedKnown need not read it again: Read false means it was not read.
type Entry0Read struct {
	Read     bool
	HasIndex bool  // Entry0HasIndex of the value, when Err is nil
	Err      error // the read's error (store.ErrNotFound, a *store.TruncatedError, ...)
}

// InfoIndexedKnown is InfoIndexed where known (nil: none) answers for the
// ledgers, by position in info's LedgerInfo, whose entry 0 the caller has read
// already; the others are read from ls, in one store reader.
func InfoIndexedKnown(info *mlpb.ManagedLedgerInfo, ls store.LedgerStore, known func(i int) Entry0Read) (Indexed, error) {
	_, prop := HasMLIndex(info)
	lis := info.GetLedgerInfo()
	var r store.EntryReader
	defer func() {
		if r != nil {
			r.Close()
		}
	}()
	return topicIndexedAt(prop, len(lis), func(i int) (bool, error) {
		if known != nil {
			if k := known(i); k.Read {
				return entry0Verdict(k.HasIndex, k.Err)
			}
		}
		if r == nil {
			r = ls.EntryReader()
		}
		return entry0IndexedIn(r, lis[i].GetLedgerId())
	})
}

// Entry0Indexed reads entry 0 of a ledger and reports whether it carries a
// broker index. A missing, damaged or undecodable entry says no (check reports
// those); other read errors are returned.
func Entry0Indexed(ls store.LedgerStore, id int64) (bool, error) {
	r := ls.EntryReader()
	defer r.Close()
	return entry0IndexedIn(r, id)
}

func entry0IndexedIn(r store.EntryReader, id int64) (bool, error) {
	var ok bool
	err := r.Peek(id, 0, func(v []byte) error {
		ok = Entry0HasIndex(v)
		return nil
	})
	return entry0Verdict(ok, err)
}

// entry0Verdict is Entry0Indexed's answer from a read of entry 0 (hasIndex:
// Entry0HasIndex of its value, when err is nil).
func entry0Verdict(hasIndex bool, err error) (bool, error) {
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTruncatedValue):
		return false, nil
	case err != nil:
		return false, err
	}
	return hasIndex, nil
}

// Entry0HasIndex says whether an entry's bytes carry a broker index, as the
// indexed rule reads them.
func Entry0HasIndex(v []byte) bool { return formats.HasBrokerIndex(v) }
