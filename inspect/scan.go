package inspect

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// walkNodes is cluster.WalkNodes: a walk that survives truncated values.
func walkNodes(ctx context.Context, ms store.MetadataStore, prefix string, fn func(store.Node) error, bad func(*store.TruncatedError) error) error {
	return cluster.WalkNodes(ctx, ms, prefix, fn, bad)
}

// streamLedger is LedgerStore.Entries from entry id from to the end of a ledger
// that survives truncated values: each one is passed to bad and the stream
// resumes after it.
func streamLedger(ctx context.Context, ls store.LedgerStore, ledgerID, from int64, fn func(entryID int64, value []byte) error, bad func(*store.TruncatedError) error) error {
	for {
		err := ls.Entries(ctx, ledgerID, from, -1, fn)
		var te *store.TruncatedError
		// The bad entry's id must lie ahead, or the next round would not get past it.
		if !errors.As(err, &te) || te.Path != "" || te.LedgerID != ledgerID || te.EntryID < from || te.EntryID+1 < 0 {
			return err
		}
		if err := bad(te); err != nil {
			return err
		}
		from = te.EntryID + 1
	}
}

// truncatedDetail describes a truncated value without naming its key, for a
// finding located at the key.
func truncatedDetail(te *store.TruncatedError) string { return te.Detail() }

// One pass over the ledger store. Every whole-store reader of this
// package (Check's core scan, the schema-usage count, both at once in check)
// reads the entries through an entryPass: each entry is read and decoded once
// and handed to every consumer that asked for it. The key space is cut into
// ranges of whole ledgers (datadir.DataDir.LedgerRanges, from Badger's table
// metadata) that workers take in turn. What Check learns per ledger goes to its
// spill in ledger id order whatever worker learns it, findings go to its sink
// at their ledger's place, and usage counters are kept per worker and added
// up: the output is the same whatever the number of workers.

// rangesPerWorker: more ranges than workers, so one that finishes early takes
// another and a range of dense ledgers does not hold the others up.
const rangesPerWorker = 4

// progressEvery is how many entries a worker reads between progress updates.
const progressEvery = 1024

// scanWorkers is n, or one per CPU when n <= 0.
func scanWorkers(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// rangeFeed hands out the ranges of a pass, in id order, one at a time (the
// pass calls it under its lock).
type rangeFeed interface {
	next() (store.LedgerRange, bool, error)
}

// rangeList is a rangeFeed of ranges known up front.
type rangeList []store.LedgerRange

func (l *rangeList) next() (store.LedgerRange, bool, error) {
	if len(*l) == 0 {
		return store.LedgerRange{}, false, nil
	}
	r := (*l)[0]
	*l = (*l)[1:]
	return r, true, nil
}

// entryPass is one pass over (part of) the ledger store and its consumers.
type entryPass struct {
	dd      *datadir.DataDir
	feed    rangeFeed
	workers int
	prog    report.Progress
	check   *checker   // Check's core scan; nil: none
	usage   *usageScan // schema usage; nil: none

	mu sync.Mutex // over feed
}

// ledgerRanges are the ranges of a pass over the ledgers of ids, one per
// ledger.
func ledgerRanges(ids []int64) *rangeList {
	var out rangeList
	for i, id := range ids {
		if i == 0 || ids[i-1] != id {
			out = append(out, store.OneLedger(id))
		}
	}
	return &out
}

// rangesForTest, when set, replaces the cut of the whole store (tests use it to
// put every few ledgers in a range of their own).
var rangesForTest func(dd *datadir.DataDir) []store.LedgerRange

// wholeStoreRanges cuts the whole ledger store for workers.
func wholeStoreRanges(dd *datadir.DataDir, workers int) *rangeList {
	if rangesForTest != nil {
		l := rangeList(rangesForTest(dd))
		return &l
	}
	rs, splittable := dd.LedgerRanges(workers * rangesPerWorker)
	if !splittable {
		rs = []store.LedgerRange{store.WholeLedgerStore}
	}
	l := rangeList(rs)
	return &l
}

// ledgerSeg is what Check learns of one ledger from its entries.
type ledgerSeg struct {
	id            int64
	stored        int64
	entry0Indexed bool
}

// passCounts is what a worker counted of the ledgers it owns.
type passCounts struct {
	ledgers, entries, entryBytes, topicEntries int64
}

// passesRun counts entry passes started in this process: tests use it to prove
// that a command reads the ledger store once.
var passesRun atomic.Int64

// nextRange takes the next range to read.
func (p *entryPass) nextRange() (store.LedgerRange, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.feed.next()
}

// run reads every range once.
func (p *entryPass) run(ctx context.Context) error {
	passesRun.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, p.workers)
	var wg sync.WaitGroup
	ws := make([]*passWorker, p.workers)
	for i := range ws {
		w, err := p.newWorker()
		if err != nil {
			return err
		}
		ws[i] = w
		wg.Add(1)
		go func(w *passWorker) {
			defer wg.Done()
			for {
				r, ok, err := p.nextRange()
				if err == nil && ok {
					err = w.scan(ctx, r)
				}
				if err != nil {
					errs[i] = err
					cancel()
					return
				}
				if !ok {
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, w := range ws {
		p.prog.Add(w.pending)
	}
	if err := errors.Join(errs...); err != nil {
		// The first error, not the cancellations it caused in other workers.
		for _, e := range errs {
			if e != nil && !errors.Is(e, context.Canceled) {
				return e
			}
		}
		return err
	}
	if c := p.check; c != nil {
		for _, w := range ws {
			c.stats.Ledgers += w.counts.ledgers
			c.stats.Entries += w.counts.entries
			c.stats.EntryBytes += w.counts.entryBytes
			c.stats.TopicEntries += w.counts.topicEntries
		}
	}
	if p.usage != nil {
		for _, w := range ws {
			p.usage.states = append(p.usage.states, w.usage)
		}
	}
	return nil
}

// passWorker reads ranges for a pass; its decode buffers and usage counters
// live as long as the pass.
type passWorker struct {
	p      *entryPass
	usage  *usageState
	facts  *factsCursor // Check's facts of the ledgers, read along
	counts passCounts

	refs formats.EntryRefs
	e    formats.Entry
	md   pulsarpb.MessageMetadata
	bm   pulsarpb.BrokerEntryMetadata

	// The ledger being read.
	seg     ledgerSeg
	inSeg   bool
	topic   bool       // Check parses the ledger's entries as topic entries
	svRefs  []svRef    // the schema versions whose entries the ledger holds (Check)
	uTopics []usageRef // the topics counting the ledger's entries
	pending int64      // entries not yet reported to the progress bar
	// Of a sharded check (shard.go): the ledger being read is another shard's and
	// no topic of this one refers to it (skipped), or another shard's that one
	// refers to (read for its facts, not counted or reported: counted false).
	skipping bool
	skipID   int64
	counted  bool
	// Per-entry findings of the ledger being read, by kind.
	entryListed   map[string]int
	entryUnlisted map[string]int64
}

func (p *entryPass) newWorker() (*passWorker, error) {
	w := &passWorker{p: p, entryListed: map[string]int{}, entryUnlisted: map[string]int64{}}
	if p.usage != nil {
		st, err := newUsageState(p.usage)
		if err != nil {
			return nil, err
		}
		w.usage = st
	}
	if c := p.check; c != nil {
		fc, err := newFactsCursor(c.facts)
		if err != nil {
			return nil, err
		}
		w.facts = fc
	}
	return w, nil
}

// scan reads one range.
func (w *passWorker) scan(ctx context.Context, r store.LedgerRange) error {
	w.inSeg, w.skipping = false, false
	if err := w.p.dd.ScanLedgerRange(ctx, r, w.entry, w.truncated); err != nil {
		return err
	}
	return w.endLedger()
}

// ledger accounts for one stored entry, good or truncated, of ledger id, and
// reports false when the entry is to be skipped.
func (w *passWorker) ledger(id int64) (bool, error) {
	if w.skipping && w.skipID == id {
		return false, nil
	}
	if !w.inSeg || w.seg.id != id {
		if err := w.endLedger(); err != nil {
			return false, err
		}
		w.skipping, w.counted, w.topic, w.uTopics, w.svRefs = false, true, false, nil, nil
		if c := w.p.check; c != nil {
			f, err := w.facts.at(id)
			if err != nil {
				return false, err
			}
			if f != nil && w.usage != nil {
				w.uTopics = f.usage
			}
			if c.sharded() {
				w.counted = c.ownsLedger(id, f)
				if !w.counted && (f == nil || !f.needed) {
					w.skipping, w.skipID = true, id
					return false, nil
				}
			}
			if f != nil {
				w.topic, w.svRefs = f.topicLedger(), f.svRefs
			}
		}
		w.seg, w.inSeg = ledgerSeg{id: id}, true
		if w.usage != nil && w.p.check == nil {
			var err error
			if w.uTopics, err = w.usage.topicsOf(id); err != nil {
				return false, err
			}
		}
	}
	w.seg.stored++
	if w.counted {
		w.counts.entries++
	}
	if w.pending++; w.pending == progressEvery {
		w.p.prog.Add(w.pending)
		w.pending = 0
	}
	return true, nil
}

// endLedger closes the ledger being read: its per-entry findings are
// summed up and what its entries say goes to Check's spill.
func (w *passWorker) endLedger() error {
	if !w.inSeg {
		return nil
	}
	w.inSeg = false
	if w.usage != nil {
		if err := w.usage.endLedger(w.p.usage.out, w.seg.id, w.uTopics); err != nil {
			return err
		}
	}
	c := w.p.check
	if c == nil {
		return nil
	}
	w.flushUnlisted(w.seg.id, w.counted)
	if w.counted {
		w.counts.ledgers++
	}
	return c.addSeg(w.seg)
}

func (w *passWorker) entry(ledgerID, entryID int64, v []byte) error {
	if ok, err := w.ledger(ledgerID); !ok || err != nil {
		return err
	}
	if w.counted {
		w.counts.entryBytes += int64(len(v))
	}
	if len(w.svRefs) > 0 {
		if err := w.schemaEntry(entryID, v, nil); err != nil {
			return err
		}
	}
	if !w.topic && len(w.uTopics) == 0 {
		return nil
	}
	r, err := w.decode(v)
	if len(w.uTopics) > 0 {
		w.usage.account(w.uTopics, Position{LedgerID: ledgerID, EntryID: entryID}, v, r, err)
	}
	if w.topic {
		w.topicEntry(ledgerID, entryID, v, r, err)
	}
	return nil
}

func (w *passWorker) truncated(te *store.TruncatedError) error {
	if ok, err := w.ledger(te.LedgerID); !ok || err != nil {
		return err
	}
	if len(w.uTopics) > 0 {
		w.usage.truncated(w.uTopics, Position{LedgerID: te.LedgerID, EntryID: te.EntryID}, fmt.Sprintf("entry value is truncated: %v", te))
	}
	if len(w.svRefs) > 0 {
		if err := w.schemaEntry(te.EntryID, nil, te); err != nil {
			return err
		}
	}
	if w.p.check != nil {
		fd := newFinding(KindValueTruncated, entryLoc(te.LedgerID, te.EntryID), "the entry's bytes are lost; restore the ledger from a bookie replica",
			"%s", truncatedDetail(te))
		fd.LedgerID, fd.EntryID = report.Int64(te.LedgerID), report.Int64(te.EntryID)
		w.addEntryFinding(fd)
	}
	return nil
}

// decode reads what every consumer needs of an entry, once: the fast path, or
// when it declines, the full parser, which says what is wrong.
func (w *passWorker) decode(v []byte) (*formats.EntryRefs, error) {
	r := &w.refs
	if formats.PeekEntry(v, r) {
		return r, nil
	}
	if err := formats.ParseEntryInto(v, &w.e, &w.md, &w.bm); err != nil {
		return nil, err
	}
	*r = w.e.Refs()
	return r, nil
}

// schemaEntry checks one entry of a schema ledger against every schema
// version whose locator names it (its bytes v, or te when they are
// truncated), and answers those versions: the schema step reads no entry
// again.
func (w *passWorker) schemaEntry(entryID int64, v []byte, te *store.TruncatedError) error {
	for _, sv := range w.svRefs {
		if sv.entry != entryID {
			continue
		}
		var a svEntryAnswer
		if te != nil {
			a.state, a.detail = StateTruncated, te.Error()
		} else {
			var info *schemapb.SchemaInfo
			a.state, a.detail, info = schemaEntryState(v, sv.hash)
			if info != nil && info.Timestamp != nil {
				a.ts, a.hasTS = info.GetTimestamp(), true
			}
		}
		if err := w.p.check.svAnswers.Add(append(seqKey(nil, sv.seq), svEntry), a.encode()); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	return nil
}
