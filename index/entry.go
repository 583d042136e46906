package index

import (
	"errors"
	"fmt"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/store"
)

// ErrNoBrokerIndex: the entry carries no broker entry metadata index (the topic, or at
// least this ledger, was not written with the index interceptor).
var ErrNoBrokerIndex = errors.New("entry has no broker entry index")

// Position is a managed-ledger position.
type Position = cluster.Position

// EntryInfo is what the searches need from one entry.
type EntryInfo struct {
	// Base and Last are the broker indexes of the entry's first and last message.
	Base, Last int64
	// HasIndex is false when the entry has no broker index (Base and Last are then 0).
	HasIndex bool
	// PublishTime is MessageMetadata.publish_time; BrokerTime is
	// BrokerEntryMetadata.broker_timestamp (0 when absent). Both in ms.
	PublishTime uint64
	BrokerTime  uint64
}

// Time is the entry's time for time searches: the broker timestamp when the broker
// wrote one (it is monotonic per topic), else the producer's publish time.
func (e EntryInfo) Time() uint64 {
	if e.BrokerTime != 0 {
		return e.BrokerTime
	}
	return e.PublishTime
}

// ParseEntryInfo decodes the index and times of an entry frame. An entry without a
// broker index is not an error: HasIndex says so.
func ParseEntryInfo(b []byte) (EntryInfo, error) {
	var r formats.EntryRefs // on the stack: the full parser's messages are not
	if formats.PeekEntry(b, &r) {
		return infoOfRefs(&r), nil
	}
	var p entryParser
	return p.parseFull(b)
}

// entryParser reuses its messages across entries, so scans do not allocate per entry.
type entryParser struct {
	refs formats.EntryRefs
	e    formats.Entry
	md   pulsarpb.MessageMetadata
	bm   pulsarpb.BrokerEntryMetadata
}

// parse reads an entry by formats.PeekEntry, which builds no message, and leaves
// to the full parse what PeekEntry does not take (it then says what is wrong).
func (p *entryParser) parse(b []byte) (EntryInfo, error) {
	if !formats.PeekEntry(b, &p.refs) {
		return p.parseFull(b)
	}
	return infoOfRefs(&p.refs), nil
}

func infoOfRefs(r *formats.EntryRefs) EntryInfo {
	info := EntryInfo{PublishTime: r.PublishTime}
	if r.HasBrokerMeta {
		info.BrokerTime = r.BrokerTimestamp
		if base, ok := r.BaseIndex(); ok {
			info.Base, info.Last, info.HasIndex = base, int64(r.Index), true
		}
	}
	return info
}

// parseFull is parse by formats.ParseEntryInto.
func (p *entryParser) parseFull(b []byte) (EntryInfo, error) {
	if err := formats.ParseEntryInto(b, &p.e, &p.md, &p.bm); err != nil {
		return EntryInfo{}, err
	}
	info := EntryInfo{PublishTime: p.e.Metadata.GetPublishTime()}
	if bm := p.e.BrokerMeta; bm != nil {
		info.BrokerTime = bm.GetBrokerTimestamp()
		if base, ok := formats.EntryBaseIndex(bm, p.e.Metadata); ok {
			info.Base, info.Last, info.HasIndex = base, int64(bm.GetIndex()), true
		}
	}
	return info, nil
}

// FirstIndex returns a ledger's firstEntryIndex: the broker index of the first message
// of its entry 0, index(entry 0) - num_messages_in_batch(entry 0) + 1.
// It returns an error wrapping store.ErrNotFound when entry 0 is not in the store and
// ErrNoBrokerIndex when entry 0 has no broker index.
func FirstIndex(ls store.LedgerStore, ledgerID int64) (int64, error) {
	r := newReader(ls)
	e, err := r.read(ledgerID, 0)
	if err != nil {
		return 0, err
	}
	if !e.HasIndex {
		return 0, fmt.Errorf("ledger %d entry 0: %w", ledgerID, ErrNoBrokerIndex)
	}
	return e.Base, nil
}

// Continuous reports whether a ledger whose first index is next may follow a ledger
// whose last message has index prevLast: next must be prevLast + 1.
func Continuous(prevLast, next int64) bool { return prevLast+1 == next }

// reader reads entries and counts what it read.
type reader struct {
	ls      store.LedgerStore
	p       entryParser
	reads   int
	touched map[int64]bool
}

func newReader(ls store.LedgerStore) *reader {
	return &reader{ls: ls, touched: make(map[int64]bool)}
}

// read reads and decodes one entry, counting it.
func (r *reader) read(ledgerID, entryID int64) (EntryInfo, error) {
	r.reads++
	r.touched[ledgerID] = true
	b, err := r.ls.Entry(ledgerID, entryID)
	if err != nil {
		return EntryInfo{}, err // the store names the ledger and entry
	}
	e, err := r.p.parse(b)
	if err != nil {
		return EntryInfo{}, fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	return e, nil
}

// readIndexed is read for searches by offset: an entry without a broker index is an error.
func (r *reader) readIndexed(ledgerID, entryID int64) (EntryInfo, error) {
	e, err := r.read(ledgerID, entryID)
	if err == nil && !e.HasIndex {
		err = fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, ErrNoBrokerIndex)
	}
	return e, err
}
