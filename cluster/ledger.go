package cluster

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/store"
)

// IsOpen reports whether LedgerInfo i of info is the open last ledger: the last
// one, stored with 0 entries. The broker writes a new ledger's LedgerInfo with no
// entries (ManagedLedgerImpl.createComplete) and fills it in only when it closes
// the ledger on roll-over (ledgerClosed, which drops a closed empty ledger), so
// its count is not in metadata. A terminated managed ledger is no exception:
// asyncTerminate closes the BookKeeper ledger but stores the LedgerInfo as it was,
// and a broker opening the topic rebuilds the last LedgerInfo from the ledger
// either way (ManagedLedgerImpl.initialize, "Last ledger stat may be zeroed").
func IsOpen(info *mlpb.ManagedLedgerInfo, i int) bool {
	lis := info.GetLedgerInfo()
	return i == len(lis)-1 && lis[i].GetEntries() == 0
}

// OffloadedAway reports whether a ledger's entries live only in tiered storage:
// the offload completed and the BookKeeper ledger was deleted (OffloadContext
// complete and bookkeeperDeleted). Such a ledger rightly has no ledger node and
// no entries in the ledger store. An offload that completed without the delete
// still has its BookKeeper copy.
func OffloadedAway(li *mlpb.ManagedLedgerInfo_LedgerInfo) bool {
	oc := li.GetOffloadContext()
	return oc.GetComplete() && oc.GetBookkeeperDeleted()
}

// Offload states of a LedgerInfo, as views show them.
const (
	OffloadNone       = "no"
	OffloadInProgress = "in-progress"
	OffloadComplete   = "complete"            // tiered copy done, BookKeeper copy kept
	OffloadAway       = "complete,bk-deleted" // OffloadedAway
)

// OffloadState names how far a ledger's offload went.
func OffloadState(li *mlpb.ManagedLedgerInfo_LedgerInfo) string {
	oc := li.GetOffloadContext()
	switch {
	case oc == nil:
		return OffloadNone
	case OffloadedAway(li):
		return OffloadAway
	case oc.GetComplete():
		return OffloadComplete
	}
	return OffloadInProgress
}

// ParseFirstEntryIndex reads a firstEntryIndex property value: a non-negative
// decimal (docs/formats.md §1.5). Anything else is not a value.
func ParseFirstEntryIndex(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// FirstEntryIndex returns a ledger's firstEntryIndex property under key. has
// says the property is set; ok that it holds a valid value. A ledger counts as
// covered by the index only when ok.
func FirstEntryIndex(li *mlpb.ManagedLedgerInfo_LedgerInfo, key string) (v int64, has, ok bool) {
	s, has := formats.LedgerProperty(li, KeyFor(key))
	if !has {
		return 0, false, false
	}
	v, ok = ParseFirstEntryIndex(s)
	return v, true, ok
}

// Coverage counts a managed ledger's LedgerInfos with entries (the open last
// ledger has none recorded yet) and how many of them carry a valid
// firstEntryIndex under key.
func Coverage(info *mlpb.ManagedLedgerInfo, key string) (withEntries, covered int) {
	for _, li := range info.GetLedgerInfo() {
		if li.GetEntries() > 0 {
			withEntries++
			if _, _, ok := FirstEntryIndex(li, key); ok {
				covered++
			}
		}
	}
	return withEntries, covered
}

// Ledger is what metadata (and, for the open ledger, the store's last entry id)
// says about one ledger of a managed ledger. It reads no entry.
type Ledger struct {
	ID int64
	// Entries is LedgerInfo.entries; for the open last ledger, what the store holds
	// (OpenLedgerEntries), unless CountUnknown.
	Entries int64
	// CountUnknown: the open ledger's count was not looked up (MetadataLedgers);
	// Entries is then 0.
	CountUnknown bool
	// Timestamp is the LedgerInfo timestamp (close time, ms); 0 for the open ledger.
	Timestamp int64
	First     int64 // firstEntryIndex, when HasFirst
	HasFirst  bool
	// BadFirst holds a property value that is not a non-negative decimal.
	BadFirst string
	// NotLocal: OffloadedAway, so its entries are not in the ledger store.
	NotLocal bool
	Open     bool // IsOpen
}

// Ledgers lists the ledgers of a managed ledger in order. The open last ledger's
// count comes from the store's last entry id (a key lookup, not an entry read).
func Ledgers(info *mlpb.ManagedLedgerInfo, ls store.LedgerStore, key string) ([]Ledger, error) {
	out := MetadataLedgers(info, key)
	for i := range out {
		if l := &out[i]; l.CountUnknown {
			n, err := OpenLedgerEntries(ls, l.ID)
			if err != nil {
				return nil, err
			}
			l.Entries, l.CountUnknown = n, false
		}
	}
	return out, nil
}

// MetadataLedgers is Ledgers from metadata alone: the open ledger is
// CountUnknown. For callers that need its count only sometimes (back-fill reads
// its entry 0 anyway, which settles that it is not empty).
func MetadataLedgers(info *mlpb.ManagedLedgerInfo, key string) []Ledger {
	lis := info.GetLedgerInfo()
	out := make([]Ledger, 0, len(lis))
	for i, li := range lis {
		l := Ledger{
			ID:        li.GetLedgerId(),
			Entries:   li.GetEntries(),
			Timestamp: li.GetTimestamp(),
			NotLocal:  OffloadedAway(li),
			Open:      IsOpen(info, i),
		}
		if v, has, ok := FirstEntryIndex(li, key); ok {
			l.First, l.HasFirst = v, true
		} else if has {
			l.BadFirst, _ = formats.LedgerProperty(li, KeyFor(key))
		}
		l.CountUnknown = l.Open
		out = append(out, l)
	}
	return out
}

// OpenLedgerEntries is the open ledger's entry count: what the store holds (its
// last entry id + 1), 0 when it holds none.
func OpenLedgerEntries(ls store.LedgerStore, id int64) (int64, error) {
	last, err := ls.LastEntry(id)
	switch {
	case err == nil:
		return last + 1, nil
	case errors.Is(err, store.ErrNotFound):
		return 0, nil
	}
	return 0, fmt.Errorf("open ledger %d: %w", id, err)
}

// Presence is what the two stores hold of one ledger.
type Presence struct {
	Node    bool // the ledger's metadata node exists (a damaged one does)
	Entries bool // the ledger store holds at least one of its entries
}

// Lost reports a ledger that metadata names but neither store holds: no ledger
// node and no entries. (An OffloadedAway ledger looks the same and is not lost;
// callers that know its LedgerInfo ask OffloadedAway first.)
func (p Presence) Lost() bool { return !p.Node && !p.Entries }

// LedgerNodeExists reports whether a ledger's metadata node exists; a node whose
// value is damaged exists.
func LedgerNodeExists(ms store.MetadataStore, id int64) (bool, error) {
	return LedgerNodeExistsIn(ms.Get, id)
}

// LedgerNodeExistsIn is LedgerNodeExists with the node read by get (a
// read-ahead reader, or a store other than the data dir's metadata).
func LedgerNodeExistsIn(get func(string) (store.Node, error), id int64) (bool, error) {
	path := formats.LedgerPath(id)
	if path == "" {
		return false, nil // a negative id (a damaged pointer): no node can have it
	}
	_, err := get(path)
	switch {
	case err == nil, errors.Is(err, store.ErrTruncatedValue):
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
}

// LedgerNodesExist is LedgerNodeExists for many ledgers, their nodes read ahead
// in batches (store.ReadAhead): a live store then answers the ledgers of
// thousands of schema versions in tens of round trips, not thousands.
func LedgerNodesExist(ms store.MetadataStore, ids []int64) ([]bool, error) {
	out := make([]bool, 0, len(ids))
	// A window at a time: what is read ahead is held until it is answered.
	for lo := 0; lo < len(ids); lo += ledgerLookupWindow {
		window := ids[lo:min(lo+ledgerLookupWindow, len(ids))]
		paths := make([]string, 0, len(window))
		for _, id := range window {
			if p := formats.LedgerPath(id); p != "" {
				paths = append(paths, p)
			}
		}
		ahead := store.ReadAhead(ms, paths)
		for _, id := range window {
			ok, err := LedgerNodeExistsIn(ahead.Get, id)
			if err != nil {
				return nil, err
			}
			out = append(out, ok)
		}
	}
	return out, nil
}

// ledgerLookupWindow ledgers are looked up at once by LedgerNodesExist.
const ledgerLookupWindow = 1000

// LedgerPresence looks up a ledger's node and whether it has any entry: two key
// lookups, no entry read.
func LedgerPresence(ms store.MetadataStore, ls store.LedgerStore, id int64) (Presence, error) {
	node, err := LedgerNodeExists(ms, id)
	if err != nil {
		return Presence{}, err
	}
	return PresenceWithNode(ls, id, node)
}

// LedgerPresences is LedgerPresence for many ledgers, their nodes looked up in
// batches (LedgerNodesExist).
func LedgerPresences(ms store.MetadataStore, ls store.LedgerStore, ids []int64) ([]Presence, error) {
	nodes, err := LedgerNodesExist(ms, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Presence, len(ids))
	for i, id := range ids {
		if out[i], err = PresenceWithNode(ls, id, nodes[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PresenceWithNode completes a ledger's Presence, its node already looked up,
// with whether it has any entry.
func PresenceWithNode(ls store.LedgerStore, id int64, node bool) (Presence, error) {
	p := Presence{Node: node}
	_, err := ls.LastEntry(id)
	switch {
	case err == nil:
		p.Entries = true
	case !errors.Is(err, store.ErrNotFound):
		return p, err
	}
	return p, nil
}
