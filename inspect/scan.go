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
// metadata) that workers take in turn; what must come out in key order (Check's
// per-ledger facts and findings) is kept per range and merged in range order,
// and what does not (usage counters) is kept per worker and added up. The output
// is the same whatever the number of workers.

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

// entryPass is one pass over (part of) the ledger store and its consumers.
type entryPass struct {
	dd      *datadir.DataDir
	ranges  []store.LedgerRange
	workers int
	prog    report.Progress
	check   *checker   // Check's core scan; nil: none
	usage   *usageScan // schema usage; nil: none
}

// usageScan is the schema-usage consumer of a pass.
type usageScan struct {
	topics   int
	topicsOf map[int64][]int32 // ledger id -> the topics whose managed ledgers list it
	maxBad   int
	states   []*usageState // one per worker
}

func newUsageScan(topics []usageTopic, ledgers []usageLedger, maxBad int) *usageScan {
	u := &usageScan{topics: len(topics), topicsOf: make(map[int64][]int32, len(ledgers)), maxBad: maxBad}
	for _, l := range ledgers {
		u.topicsOf[l.id] = append(u.topicsOf[l.id], l.topic)
	}
	return u
}

// ledgerRanges are the ranges of a pass over the ledgers of ids (sorted by id,
// as usageTargets returns them): one per ledger.
func ledgerRanges(ledgers []usageLedger) []store.LedgerRange {
	var out []store.LedgerRange
	for i, l := range ledgers {
		if i == 0 || ledgers[i-1].id != l.id {
			out = append(out, store.OneLedger(l.id))
		}
	}
	return out
}

// rangesForTest, when set, replaces the cut of the whole store (tests use it to
// put every few ledgers in a range of their own).
var rangesForTest func(dd *datadir.DataDir) []store.LedgerRange

// wholeStoreRanges cuts the whole ledger store for workers.
func wholeStoreRanges(dd *datadir.DataDir, workers int) []store.LedgerRange {
	if rangesForTest != nil {
		return rangesForTest(dd)
	}
	rs, splittable := dd.LedgerRanges(workers * rangesPerWorker)
	if !splittable {
		return []store.LedgerRange{store.WholeLedgerStore}
	}
	return rs
}

// ledgerSeg is what Check learns of one ledger from its entries.
type ledgerSeg struct {
	id            int64
	stored        int64
	entry0Indexed bool
}

// rangeResult is what one range gave Check, in key order.
type rangeResult struct {
	segs         []ledgerSeg
	findings     []report.Finding
	entries      int64
	entryBytes   int64
	topicEntries int64
}

// passesRun counts entry passes started in this process: tests use it to prove
// that a command reads the ledger store once.
var passesRun atomic.Int64

// run reads every range once and merges the results.
func (p *entryPass) run(ctx context.Context) error {
	passesRun.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(p.workers, len(p.ranges))
	results := make([]*rangeResult, len(p.ranges))
	errs := make([]error, workers)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	ws := make([]*passWorker, workers)
	for i := range ws {
		ws[i] = p.newWorker()
		wg.Add(1)
		go func(w *passWorker) {
			defer wg.Done()
			for {
				r := int(next.Add(1) - 1)
				if r >= len(p.ranges) {
					return
				}
				res, err := w.scan(ctx, p.ranges[r])
				if err != nil {
					errs[i] = err
					cancel()
					return
				}
				results[r] = res
			}
		}(ws[i])
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
	if p.check != nil {
		for _, r := range results {
			p.check.mergeRange(r)
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
	p     *entryPass
	usage *usageState

	refs formats.EntryRefs
	e    formats.Entry
	md   pulsarpb.MessageMetadata
	bm   pulsarpb.BrokerEntryMetadata

	// The range being read.
	out     *rangeResult
	seg     *ledgerSeg
	topic   bool    // Check parses the ledger's entries as topic entries
	uTopics []int32 // the topics counting the ledger's entries
	pending int64   // entries not yet reported to the progress bar
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

func (p *entryPass) newWorker() *passWorker {
	w := &passWorker{p: p, entryListed: map[string]int{}, entryUnlisted: map[string]int64{}}
	if p.usage != nil {
		w.usage = newUsageState(p.usage.topics, p.usage.maxBad)
	}
	return w
}

// scan reads one range.
func (w *passWorker) scan(ctx context.Context, r store.LedgerRange) (*rangeResult, error) {
	w.out, w.seg, w.skipping = &rangeResult{}, nil, false
	err := w.p.dd.ScanLedgerRange(ctx, r, w.entry, w.truncated)
	if err != nil {
		return nil, err
	}
	w.endLedger()
	return w.out, nil
}

// ledger accounts for one stored entry, good or truncated, of ledger id, and
// reports false when the entry is to be skipped.
func (w *passWorker) ledger(id int64) bool {
	if w.skipping && w.skipID == id {
		return false
	}
	if w.seg == nil || w.seg.id != id {
		w.endLedger()
		w.skipping, w.counted = false, true
		if c := w.p.check; c != nil && c.sharded() {
			w.counted = c.ownsLedger(id)
			if f := c.ledgers[id]; !w.counted && (f == nil || !f.needed) {
				w.skipping, w.skipID = true, id
				return false
			}
		}
		w.out.segs = append(w.out.segs, ledgerSeg{id: id})
		w.seg = &w.out.segs[len(w.out.segs)-1]
		if c := w.p.check; c != nil {
			// Read-only during the pass: facts of unknown ledgers are made at the merge.
			f := c.ledgers[id]
			w.topic = f != nil && f.topicLedger()
		}
		if u := w.p.usage; u != nil {
			w.uTopics = u.topicsOf[id]
		}
	}
	w.seg.stored++
	if w.counted {
		w.out.entries++
	}
	if w.pending++; w.pending == progressEvery {
		w.p.prog.Add(w.pending)
		w.pending = 0
	}
	return true
}

// endLedger closes the ledger being read.
func (w *passWorker) endLedger() {
	if w.seg != nil && w.p.check != nil {
		w.flushUnlisted(w.seg.id, w.counted)
	}
	// w.seg points into w.out.segs, which the next append may move.
	w.seg = nil
}

func (w *passWorker) entry(ledgerID, entryID int64, v []byte) error {
	if !w.ledger(ledgerID) {
		return nil
	}
	if w.counted {
		w.out.entryBytes += int64(len(v))
	}
	if !w.topic && len(w.uTopics) == 0 {
		return nil
	}
	r, err := w.decode(v)
	pos := Position{LedgerID: ledgerID, EntryID: entryID}
	for _, t := range w.uTopics {
		w.usage.account(t, pos, v, r, err)
	}
	if w.topic {
		w.topicEntry(ledgerID, entryID, v, r, err)
	}
	return nil
}

func (w *passWorker) truncated(te *store.TruncatedError) error {
	if !w.ledger(te.LedgerID) {
		return nil
	}
	for _, t := range w.uTopics {
		w.usage.totals[t].entries++
		w.usage.addBad(badEntry{topic: t, pos: Position{LedgerID: te.LedgerID, EntryID: te.EntryID}, kind: KindValueTruncated,
			detail: fmt.Sprintf("entry value is truncated: %v", te)})
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
