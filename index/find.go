package index

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/store"
)

// Search methods an Answer can report.
const (
	MethodIndex  = "firstEntryIndex"        // ledger chosen from metadata, one ledger searched
	MethodLegacy = "legacy"                 // binary search over the entries of every ledger
	MethodMixed  = "firstEntryIndex+legacy" // legacy search over a span of ledgers lacking the property
	MethodTime   = "ledger-timestamp"       // ledger chosen by close time, then searched by entry time
)

// FindOptions tune a search.
type FindOptions struct {
	Key    string // LedgerInfo property; "" means cluster.FirstEntryIndexKey
	Legacy bool   // ignore firstEntryIndex and search like upstream does without it
	// Metadata, when set, is asked why a lost ledger's entries are missing
	// (cluster.LedgerPresence), for the answer's notes; answers do not depend on it.
	Metadata store.MetadataStore
}

func (o FindOptions) key() string { return cluster.KeyFor(o.Key) }

// Answer is where a search landed and what it cost.
type Answer struct {
	// Found: Position is the first entry whose last offset (or time) reaches the target.
	Found bool `json:"found"`
	// PastEnd: no entry reaches the target; Position is where the next entry will go.
	PastEnd bool `json:"past_end"`
	// NotLocal: the target lies in a ledger whose entries are not in the ledger store
	// (offloaded); Position names the ledger and EntryID is -1 (0 when the target is
	// before the ledger's firstEntryIndex: the answer is its entry 0).
	NotLocal bool `json:"not_local"`
	// Lost: the target lies in a ledger whose entries are gone from the ledger
	// store (and not offloaded); Position as for NotLocal.
	Lost     bool     `json:"lost"`
	Position Position `json:"position"`
	// Base and Last are the broker indexes of the entry's first and last message.
	Base        int64  `json:"base_offset"`
	Last        int64  `json:"last_offset"`
	PublishTime uint64 `json:"publish_time,omitempty"`
	BrokerTime  uint64 `json:"broker_time,omitempty"`
	Method      string `json:"method"`
	// EntryReads counts entries read; LedgersTouched the distinct ledgers they came from.
	EntryReads     int           `json:"entry_reads"`
	LedgersTouched int           `json:"ledgers_touched"`
	Elapsed        time.Duration `json:"elapsed_ns"`
	Notes          []string      `json:"notes,omitempty"`
}

func (a *Answer) note(format string, args ...any) {
	a.Notes = append(a.Notes, fmt.Sprintf(format, args...))
}

func (a *Answer) land(p Position, e EntryInfo) {
	a.Found, a.Position = true, p
	a.Base, a.Last, a.PublishTime, a.BrokerTime = e.Base, e.Last, e.PublishTime, e.BrokerTime
}

// Finder answers searches on one managed ledger. It holds what metadata says
// (ledger order, entry counts, firstEntryIndex values), worked out once, so each
// search costs only its entry reads and a binary search in memory.
type Finder struct {
	ls   store.LedgerStore
	ms   store.MetadataStore // nil: notes say less about lost ledgers
	key  string
	refs []ledgerRef // non-empty ledgers, in order
	// stored[i] is the run of refs[i]'s entries the ledger store holds: none for an
	// offloaded ledger, less than all for a lost one (holes.go).
	stored []entryRange
	// known lists the positions in refs with a firstEntryIndex, when they increase.
	known []int
	// legacyWhy, when set, is why searches by offset must use the legacy search.
	legacyWhy string
	notes     []string // said with every answer
	all       *span    // every stored entry, for the legacy search
	// lost holds ledgers a search found entries missing from (not offloaded), and
	// lostNotes what was found; later searches go around them.
	lost      map[int64]bool
	lostNotes []string
}

// NewFinder reads the managed ledger's metadata; it reads no entry (only the
// open last ledger's last entry id, a key lookup).
func NewFinder(ls store.LedgerStore, info *mlpb.ManagedLedgerInfo, opts FindOptions) (*Finder, error) {
	refs, err := ledgerRefs(info, ls, opts.key())
	if err != nil {
		return nil, err
	}
	f := &Finder{ls: ls, ms: opts.Metadata, key: opts.key(), lost: map[int64]bool{}}
	for _, ref := range refs {
		if ref.Entries > 0 {
			f.refs = append(f.refs, ref)
			r := wholeLedger(ref.Entries)
			if ref.NotLocal {
				r = entryRange{}
			}
			f.stored = append(f.stored, r)
		}
	}
	for i, ref := range f.refs {
		if ref.BadFirst != "" {
			f.notes = append(f.notes, fmt.Sprintf("ledger %d: %s %q is not a decimal index; treated as missing", ref.ID, f.key, ref.BadFirst))
		}
		if !ref.HasFirst {
			continue
		}
		if n := len(f.known); n > 0 && f.refs[f.known[n-1]].First >= ref.First && f.legacyWhy == "" {
			prev := f.refs[f.known[n-1]]
			f.legacyWhy = fmt.Sprintf("%s does not increase (ledger %d: %d, ledger %d: %d); used the legacy search; run index backfill --verify",
				f.key, prev.ID, prev.First, ref.ID, ref.First)
		}
		f.known = append(f.known, i)
	}
	if len(f.known) == 0 && len(f.refs) > 0 {
		f.legacyWhy = fmt.Sprintf("no ledger has %s: legacy search over all %d ledgers", f.key, len(f.refs))
	}
	f.all = f.localSpan(0, len(f.refs), nil)
	return f, nil
}

// searcher carries one search's reader and answer.
type searcher struct {
	*Finder
	ctx context.Context
	r   *reader
	ans *Answer
}

func (f *Finder) newSearcher(ctx context.Context) *searcher {
	return &searcher{Finder: f, ctx: ctx, r: newReader(f.ls), ans: &Answer{Notes: append([]string(nil), f.notes...)}}
}

func (s *searcher) finish(start time.Time) *Answer {
	s.ans.EntryReads = s.r.reads
	s.ans.LedgersTouched = len(s.r.touched)
	s.ans.Elapsed = time.Since(start)
	return s.ans
}

// FindOffset builds a Finder and runs one Offset search.
func FindOffset(ctx context.Context, ls store.LedgerStore, info *mlpb.ManagedLedgerInfo, target int64, opts FindOptions) (*Answer, error) {
	f, err := NewFinder(ls, info, opts)
	if err != nil {
		return nil, err
	}
	return f.Offset(ctx, target, opts.Legacy)
}

// Offset finds the first entry whose last broker index is >= target (KoP,
// PIP-415). With firstEntryIndex on the ledgers, the ledger comes from metadata
// and only that ledger's entries are read (at most ⌈log2 E⌉+1 of them). Where some
// ledgers lack the property, the legacy search runs over just that span, and the
// answer says so. legacy forces the search upstream runs without the property.
func (f *Finder) Offset(ctx context.Context, target int64, legacy bool) (*Answer, error) {
	start := time.Now()
	if target < 0 {
		return nil, fmt.Errorf("offset %d: offsets are not negative", target)
	}
	return f.aroundLost(ctx, func() (*searcher, error) {
		s := f.newSearcher(ctx)
		return s, s.findOffset(target, legacy)
	}, start)
}

// missingEntry is a read of an entry the ledger store does not hold although
// metadata counts it: its ledger is lost (wholly or in part).
type missingEntry struct {
	ledger, entry int64
	err           error
}

func (m *missingEntry) Error() string { return m.err.Error() }
func (m *missingEntry) Unwrap() error { return m.err }

// aroundLost runs a search; when it reads into a ledger whose entries are gone,
// it marks what is gone (markLost) and searches again without it. In an incident
// holes are normal: an answer in an intact ledger must not depend on a lost one.
func (f *Finder) aroundLost(ctx context.Context, search func() (*searcher, error), start time.Time) (*Answer, error) {
	// Each ledger can be cut at most twice (to the entries around a missing one, then out).
	for range 2*len(f.refs) + 1 {
		s, err := search()
		var m *missingEntry
		if errors.As(err, &m) {
			changed, merr := f.markLost(ctx, m.ledger, m.entry)
			if merr != nil {
				return nil, merr
			}
			if changed {
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		s.ans.Notes = append(append([]string(nil), f.lostNotes...), s.ans.Notes...)
		return s.finish(start), nil
	}
	return nil, fmt.Errorf("search did not settle around lost ledgers")
}

// absent says why a ledger's entries are not searched.
func (f *Finder) absent(id int64) string {
	if f.lost[id] {
		return "is lost"
	}
	return "was offloaded"
}

func (s *searcher) findOffset(t int64, legacy bool) error {
	if len(s.refs) == 0 {
		s.ans.Method = MethodIndex
		s.ans.PastEnd = true
		s.ans.note("the managed ledger has no entries")
		return nil
	}
	if legacy || s.legacyWhy != "" {
		s.ans.Method = MethodLegacy
		if !legacy {
			s.ans.note("%s", s.legacyWhy)
		}
		s.noteSkipped(s.all)
		return s.legacyOffset(t, s.all, len(s.refs))
	}
	known := s.known
	// k: the last ledger whose first index is <= t; j: the next ledger with a known one.
	n := sort.Search(len(known), func(i int) bool { return s.refs[known[i]].First > t })
	kpos, jpos := -1, -1
	if n > 0 {
		kpos = known[n-1]
	}
	if n < len(known) {
		jpos = known[n]
	}
	spanStart, spanEnd := max(kpos, 0), len(s.refs)
	if jpos >= 0 {
		spanEnd = jpos
	}
	switch {
	case kpos >= 0 && spanEnd == kpos+1:
		s.ans.Method = MethodIndex
		return s.searchOneLedger(t, kpos, jpos)
	case spanStart == spanEnd: // t is before the first ledger's first index
		s.ans.Method = MethodIndex
		c := s.nextStored(jpos)
		return s.settle(t, c, s.firstStored(c), nil)
	}
	s.ans.Method = MethodMixed
	var ids []int64
	for _, ref := range s.refs[spanStart:spanEnd] {
		if !ref.HasFirst {
			ids = append(ids, ref.ID)
		}
	}
	s.ans.note("%d ledger(s) lack %s (%s): the legacy search ran over ledgers %d..%d",
		len(ids), s.key, idList(ids), s.refs[spanStart].ID, s.refs[spanEnd-1].ID)
	return s.legacyOffset(t, s.localSpan(spanStart, spanEnd, s.ans), spanEnd)
}

// searchOneLedger searches ledger refs[k]; refs[j] (j >= 0) is the next ledger whose
// first index is known and above t.
func (s *searcher) searchOneLedger(t int64, k, j int) error {
	ref, r := s.refs[k], s.stored[k]
	if r.empty() {
		// t is in refs[k] by its index: settle names it, reading nothing.
		c := s.nextStored(k + 1)
		return s.settle(t, c, s.firstStored(c), nil)
	}
	var ip *interpolation
	if r.lo == 0 { // the interpolation's ends are the ledger's, not those of a part
		ip = &interpolation{Target: t, LoOff: ref.First, HiOff: -1}
		if j >= 0 && r.hi == ref.Entries {
			ip.HiOff = s.refs[j].First - 1
		}
	}
	i, e, ok, err := lowerBound(s.ctx, r.count(), byOffset(t), func(x int64) (EntryInfo, error) {
		return s.readIndexed(ref.ID, r.lo+x)
	}, ip)
	if err != nil {
		return err
	}
	if ok {
		return s.settle(t, k, r.lo+i, &e)
	}
	if j >= 0 && r.hi == ref.Entries {
		s.ans.note("ledger %d ends before offset %d although ledger %d starts at %d: the indexes are not continuous",
			ref.ID, t, s.refs[j].ID, s.refs[j].First)
	}
	c := s.nextStored(k + 1)
	return s.settle(t, c, s.firstStored(c), nil)
}

func (s *searcher) pastEnd() {
	last := s.refs[len(s.refs)-1]
	s.ans.PastEnd, s.ans.Position = true, Position{LedgerID: last.ID, EntryID: last.Entries}
}

// read and readIndexed are the reader's, with a missing entry typed for aroundLost.
func (s *searcher) read(ledgerID, entryID int64) (EntryInfo, error) {
	e, err := s.r.read(ledgerID, entryID)
	return e, missing(ledgerID, entryID, err)
}

func (s *searcher) readIndexed(ledgerID, entryID int64) (EntryInfo, error) {
	e, err := s.r.readIndexed(ledgerID, entryID)
	return e, missing(ledgerID, entryID, err)
}

func missing(ledgerID, entryID int64, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &missingEntry{ledger: ledgerID, entry: entryID, err: err}
	}
	return err
}

// legacyOffset is the search upstream runs without firstEntryIndex: a binary search
// over the positions of every stored entry of a span of ledgers, mapped to ledgers
// from metadata counts. Ledgers the store does not hold are skipped (upstream reads
// offloaded ones from tiered storage). end is the position in refs just past the
// span: when nothing in the span reaches t, the candidate is the first stored entry
// from there on.
func (s *searcher) legacyOffset(t int64, sp *span, end int) error {
	g, e, ok, err := lowerBound(s.ctx, sp.total(), byOffset(t), func(g int64) (EntryInfo, error) {
		p := sp.position(g)
		return s.readIndexed(p.LedgerID, p.EntryID)
	}, nil)
	if err != nil {
		return err
	}
	if ok {
		ci, ei := sp.locate(g)
		return s.settle(t, ci, ei, &e)
	}
	c := s.nextStored(end)
	return s.settle(t, c, s.firstStored(c), nil)
}

// span maps a global entry number to a position across the stored entries of a
// range of ledgers.
type span struct {
	refs   []int   // positions in Finder.refs of the ledgers mapped
	ids    []int64 // their ledger ids
	los    []int64 // the first stored entry of each
	starts []int64 // global number of each one's first stored entry; one extra: the total
	// skipped lists ledgers left out: the store holds none of their entries.
	skipped []int64
}

// localSpan maps refs[from:to], leaving out ledgers the store does not hold; a is
// told about them when not nil.
func (f *Finder) localSpan(from, to int, a *Answer) *span {
	sp := &span{}
	var sum int64
	for i := from; i < to; i++ {
		ref, r := f.refs[i], f.stored[i]
		if r.empty() {
			sp.skipped = append(sp.skipped, ref.ID)
			if a != nil {
				a.note("ledger %d %s: its entries are not in the ledger store and were not searched", ref.ID, f.absent(ref.ID))
			}
			continue
		}
		sp.refs = append(sp.refs, i)
		sp.ids = append(sp.ids, ref.ID)
		sp.los = append(sp.los, r.lo)
		sp.starts = append(sp.starts, sum)
		sum += r.count()
	}
	sp.starts = append(sp.starts, sum)
	return sp
}

func (s *searcher) noteSkipped(sp *span) {
	for _, id := range sp.skipped {
		s.ans.note("ledger %d %s: its entries are not in the ledger store and were not searched", id, s.absent(id))
	}
}

func (sp *span) total() int64 { return sp.starts[len(sp.starts)-1] }

func (sp *span) ledgerOf(g int64) int {
	return sort.Search(len(sp.refs), func(i int) bool { return sp.starts[i+1] > g })
}

// locate returns the position in Finder.refs and the entry id of global number g.
func (sp *span) locate(g int64) (ref int, entry int64) {
	i := sp.ledgerOf(g)
	return sp.refs[i], sp.los[i] + g - sp.starts[i]
}

func (sp *span) position(g int64) Position {
	i := sp.ledgerOf(g)
	return Position{LedgerID: sp.ids[i], EntryID: sp.los[i] + g - sp.starts[i]}
}

// FindTime builds a Finder and runs one Time search.
func FindTime(ctx context.Context, ls store.LedgerStore, info *mlpb.ManagedLedgerInfo, targetMS int64, opts FindOptions) (*Answer, error) {
	f, err := NewFinder(ls, info, opts)
	if err != nil {
		return nil, err
	}
	return f.Time(ctx, targetMS, opts.Legacy)
}

// Time finds the first entry whose time (broker timestamp, else publish time) is
// >= targetMS. Ledgers are chosen by their LedgerInfo timestamp (close time): the
// first ledger closed at or after the target (or the open one) is searched first.
// legacy searches all entries of all ledgers instead.
func (f *Finder) Time(ctx context.Context, targetMS int64, legacy bool) (*Answer, error) {
	start := time.Now()
	if targetMS < 0 {
		return nil, fmt.Errorf("time %d: times are not negative", targetMS)
	}
	return f.aroundLost(ctx, func() (*searcher, error) {
		s := f.newSearcher(ctx)
		return s, s.findTime(uint64(targetMS), legacy)
	}, start)
}

func (s *searcher) findTime(t uint64, legacy bool) error {
	judge := byTime(t)
	if legacy {
		s.ans.Method = MethodLegacy
		s.noteSkipped(s.all)
		sp := s.all
		pos, e, ok, err := lowerBound(s.ctx, sp.total(), judge, func(g int64) (EntryInfo, error) {
			p := sp.position(g)
			return s.read(p.LedgerID, p.EntryID)
		}, nil)
		if err != nil {
			return err
		}
		if len(s.refs) == 0 {
			s.ans.PastEnd = true
			return nil
		}
		if !ok {
			return s.settleTime(t, len(s.refs), 0, nil)
		}
		ci, ei := sp.locate(pos)
		return s.settleTime(t, ci, ei, &e)
	}
	s.ans.Method = MethodTime
	for k, ref := range s.refs {
		// A ledger closed before the target holds only older entries. 0: not recorded.
		if ref.Timestamp != 0 && ref.Timestamp < int64(t) && !ref.Open {
			continue
		}
		r := s.stored[k]
		if r.empty() {
			s.ans.note("ledger %d %s: its entries are not in the ledger store and were not searched", ref.ID, s.absent(ref.ID))
			continue
		}
		i, e, ok, err := lowerBound(s.ctx, r.count(), judge, func(x int64) (EntryInfo, error) {
			return s.read(ref.ID, r.lo+x)
		}, nil)
		if err != nil {
			return err
		}
		if ok {
			return s.settleTime(t, k, r.lo+i, &e)
		}
	}
	if len(s.refs) == 0 {
		s.ans.PastEnd = true
		return nil
	}
	return s.settleTime(t, len(s.refs), 0, nil)
}

// idList shortens a list of ledger ids for a message.
func idList(ids []int64) string {
	const show = 5
	out := ""
	for i, id := range ids {
		if i == show {
			return out + fmt.Sprintf(", ... %d more", len(ids)-show)
		}
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(id)
	}
	return out
}
