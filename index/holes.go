package index

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ledgermedic/ledgermedic/store"
)

// Holes: ledgers, or runs of a ledger's entries, that metadata counts but the
// ledger store does not hold. A ledger offloaded away (cluster.OffloadedAway) is
// a hole from the start; a lost one (cluster.Presence.Lost, or entries gone
// although its node is there) is found when a search reads into it. Every search
// ends in the one rule about what a hole means for the answer: settle by offset
// (firstEntryIndex, firstEntryIndex+legacy, legacy), settleTime by time.

// entryRange is the run [lo, hi) of a ledger's entry ids the ledger store holds.
type entryRange struct{ lo, hi int64 }

func (r entryRange) empty() bool     { return r.lo >= r.hi }
func (r entryRange) count() int64    { return max(r.hi-r.lo, 0) }
func wholeLedger(n int64) entryRange { return entryRange{0, n} }

// hole reports whether the store holds none of refs[i]'s entries.
func (f *Finder) hole(i int) bool { return f.stored[i].empty() }

// isLost tells a lost ledger from an offloaded one.
func (f *Finder) isLost(i int) bool { return f.lost[f.refs[i].ID] }

// nextStored is the first ledger at or after refs[i] whose entries the store holds
// (some of them), or len(refs).
func (f *Finder) nextStored(i int) int {
	for i < len(f.refs) && f.hole(i) {
		i++
	}
	return i
}

// firstStored is the entry a candidate at refs[i] starts at (0 past the end).
func (f *Finder) firstStored(i int) int64 {
	if i < len(f.refs) {
		return f.stored[i].lo
	}
	return 0
}

// storedEnds returns the first and last entry id the store holds of a ledger: a
// seek and a key lookup. ok is false when it holds none.
func storedEnds(ctx context.Context, ls store.LedgerStore, id int64) (first, last int64, ok bool, err error) {
	last, err = ls.LastEntry(id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	errStop := errors.New("stop")
	first = last
	err = ls.Entries(ctx, id, 0, last, func(e int64, _ []byte) error {
		first = e
		return errStop
	})
	var te *store.TruncatedError
	switch {
	case errors.As(err, &te):
		first = te.EntryID // a damaged value is still a stored entry
	case err != nil && !errors.Is(err, errStop):
		return 0, 0, false, err
	}
	return first, last, true, nil
}

// markLost records that entry of ledger id is not in the store although metadata
// counts it. What the store still holds of the ledger, when it is its head or tail
// around the missing entry, stays searchable; a gap between stored entries takes
// the whole ledger out (finding every gap would read every key). It returns false
// when nothing changed (no ledger has id, or it was already out).
func (f *Finder) markLost(ctx context.Context, id, entry int64) (bool, error) {
	i := slices.IndexFunc(f.refs, func(r ledgerRef) bool { return r.ID == id })
	if i < 0 || f.hole(i) {
		return false, nil
	}
	old := f.stored[i]
	first, last, ok, err := storedEnds(ctx, f.ls, id)
	if err != nil {
		return false, fmt.Errorf("ledger %d: %w", id, err)
	}
	var r entryRange
	if ok && (entry < first || entry > last) {
		r = entryRange{max(old.lo, first), min(old.hi, last+1)}
	}
	if r.empty() {
		r = entryRange{}
	}
	f.stored[i] = r
	f.lost[id] = true
	f.all = f.localSpan(0, len(f.refs), nil)
	f.lostNotes = append(f.lostNotes, f.lostNote(i, entry, r))
	return true, nil
}

// lostNote says what a search found missing of refs[i], in back-fill's terms
// when the metadata store is known (missingState: lost is neither a node nor any
// entry, cluster.Presence.Lost).
func (f *Finder) lostNote(i int, entry int64, r entryRange) string {
	ref := f.refs[i]
	if !r.empty() {
		return fmt.Sprintf("ledger %d is partly lost: entry %d is not in the ledger store although metadata counts it; "+
			"entries %d..%d of its %d are, and only they were searched", ref.ID, entry, r.lo, r.hi-1, ref.Entries)
	}
	why := fmt.Sprintf("entry %d is not in the ledger store although metadata counts it", entry)
	if f.ms != nil {
		switch missingState(f.ms, f.ls, ref.ID) {
		case SkipLost:
			why = "neither its ledger node nor any of its entries is stored"
		case SkipEntriesLost:
			why = "its ledger node exists but none of its entries is stored"
		case SkipEntry0Missing:
			why = fmt.Sprintf("entry %d is missing between entries the store holds", entry)
		}
	}
	return fmt.Sprintf("ledger %d is lost (%s): it was left out of the search", ref.ID, why)
}

// piece is one part of a gap between two stored entries: all of refs[ref], its
// head (entries before the first stored) or its tail (after the last stored).
type piece struct {
	ref int
	// start is the first index of the piece, known when it begins at the
	// ledger's entry 0 and the ledger has firstEntryIndex.
	start      int64
	startKnown bool
}

// gapBefore lists, in order, the pieces of ledgers the store does not hold
// between the stored entry just before entry ei of refs[ci] (ci == len(refs):
// past the end) and that entry.
func (f *Finder) gapBefore(ci int, ei int64) []piece {
	var out []piece
	fromStart := func(i int) piece {
		return piece{ref: i, start: f.refs[i].First, startKnown: f.refs[i].HasFirst}
	}
	if ci < len(f.refs) {
		if lo := f.stored[ci].lo; ei > lo {
			return nil // the entry before it is stored
		} else if lo > 0 {
			out = append(out, fromStart(ci)) // its head is missing
		}
	}
	for i := ci - 1; i >= 0; i-- {
		if f.hole(i) {
			out = append(out, fromStart(i))
			continue
		}
		if f.stored[i].hi < f.refs[i].Entries {
			out = append(out, piece{ref: i}) // its tail is missing
		}
		break
	}
	slices.Reverse(out)
	return out
}

// settle answers a search by offset from its candidate: entry ei of refs[ci], the
// first stored entry at or after where t can be (e its indexes when the search
// read it, nil when metadata chose it), or ci == len(refs) when no stored entry
// reaches t.
//
// This is the rule about holes every search by offset follows. Broker indexes are
// continuous (an entry's first index is the previous entry's last + 1,
// AppendIndexMetadataInterceptor), so when t is before the candidate and ledgers
// or runs of entries the store does not hold lie just before it, t is in one of
// them: the answer names that ledger, lost or offloaded, never the entry after it.
// Of several such ledgers, firstEntryIndex values (where they are known) narrow
// the choice; the first lost one left is named, else the first.
func (s *searcher) settle(t int64, ci int, ei int64, e *EntryInfo) error {
	if e != nil && e.Base <= t {
		s.ans.land(Position{LedgerID: s.refs[ci].ID, EntryID: ei}, *e)
		return nil
	}
	if gap := s.gapBefore(ci, ei); len(gap) > 0 {
		s.inGap(t, gap, ci, ei, e)
		return nil
	}
	if ci == len(s.refs) {
		s.pastEnd()
		return nil
	}
	if e == nil {
		v, err := s.readIndexed(s.refs[ci].ID, ei)
		if err != nil {
			return err
		}
		e = &v
	}
	s.ans.land(Position{LedgerID: s.refs[ci].ID, EntryID: ei}, *e)
	return nil
}

// settleTime is settle for a search by time, with the candidate the first stored
// entry whose time reaches t (ci == len(refs): none). Times are not continuous as
// offsets are, so the ledger close time (LedgerInfo timestamp, at or after its last
// entry; 0 when not recorded) decides instead: the first piece of the gap before
// the candidate whose ledger closed at or after t may hold the first entry at or
// after t, and is the answer. A ledger closed before t holds only older entries.
func (s *searcher) settleTime(t uint64, ci int, ei int64, e *EntryInfo) error {
	for _, p := range s.gapBefore(ci, ei) {
		ref := s.refs[p.ref]
		if ref.Timestamp != 0 && ref.Timestamp < int64(t) {
			continue
		}
		s.holeAnswer(p.ref, -1)
		s.ans.note("ledger %d %s and closed at or after the target time: the first entry at or after it may be in it; "+
			"its entries are not in the ledger store", ref.ID, s.absent(ref.ID))
		return nil
	}
	if ci == len(s.refs) {
		s.pastEnd()
		return nil
	}
	s.ans.land(Position{LedgerID: s.refs[ci].ID, EntryID: ei}, *e)
	return nil
}

// inGap answers with the piece of gap that holds t.
func (s *searcher) inGap(t int64, gap []piece, ci int, ei int64, e *EntryInfo) {
	lo, hi := 0, len(gap)
	for k, p := range gap {
		if !p.startKnown {
			continue
		}
		if p.start > t {
			hi = k
			break
		}
		lo = k
	}
	if hi == 0 {
		// t is before the first index of the gap's first ledger: the answer is its entry 0.
		p := gap[0]
		s.holeAnswer(p.ref, 0)
		s.ans.note("the answer is entry 0 of ledger %d, which %s: its entries are not in the ledger store",
			s.refs[p.ref].ID, s.absent(s.refs[p.ref].ID))
		return
	}
	cands := gap[lo:hi]
	pick := cands[0]
	for _, c := range cands {
		if s.isLost(c.ref) {
			pick = c
			break
		}
	}
	id := s.refs[pick.ref].ID
	s.holeAnswer(pick.ref, -1)
	next := "no later entry is stored"
	if ci < len(s.refs) {
		next = fmt.Sprintf("the next entry the ledger store holds is %v", Position{LedgerID: s.refs[ci].ID, EntryID: ei})
		if e != nil {
			next += fmt.Sprintf(" (offset %d)", e.Base)
		}
	}
	if len(cands) == 1 {
		s.ans.note("offset %d is in ledger %d, which %s: its entries are not in the ledger store; %s", t, id, s.absent(id), next)
		return
	}
	ids := make([]int64, len(cands))
	for k, c := range cands {
		ids[k] = s.refs[c.ref].ID
	}
	s.ans.note("offset %d is in one of ledgers %s, whose entries are not in the ledger store; ledger %d %s; %s",
		t, idList(ids), id, s.absent(id), next)
}

// holeAnswer answers "in ledger refs[i]", lost or offloaded.
func (s *searcher) holeAnswer(i int, entry int64) {
	s.ans.Found = false
	s.ans.Base, s.ans.Last, s.ans.PublishTime, s.ans.BrokerTime = 0, 0, 0, 0
	s.ans.Position = Position{LedgerID: s.refs[i].ID, EntryID: entry}
	if s.isLost(i) {
		s.ans.Lost = true
	} else {
		s.ans.NotLocal = true
	}
}

// Result names what an answer says: found, offloaded, lost or past-end.
func (a *Answer) Result() string {
	switch {
	case a.Found:
		return ResultFound
	case a.NotLocal:
		return ResultOffloaded
	case a.Lost:
		return ResultLost
	}
	return ResultPastEnd
}

// Results an Answer can have.
const (
	ResultFound     = "found"
	ResultOffloaded = "offloaded"
	ResultLost      = "lost"
	ResultPastEnd   = "past-end"
)

// Agrees reports whether two searches gave the same answer: the same result at
// the same position.
func (a *Answer) Agrees(b *Answer) bool {
	return a.Result() == b.Result() && a.Position == b.Position
}
