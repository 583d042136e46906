package mutate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/ledgermedic/ledgermedic/store"
)

// A Series applies many plans as a pipeline of runs: while runs write
// (seriesWriters at once), the next ones (seriesJournals at once) are journaled and
// the ones before them are verified and committed (seriesFinishers at once). Back-fill uses it
// for its batches, so a batch's journal fsyncs and read-back overlap the next
// batch's compare-and-set instead of adding to it.
//
// Each run keeps every guarantee of Apply on its own: its record says applying,
// durably, before its first write; its nodes are written by compare-and-set; it is
// verified by reading back and then committed, or rolled back from its own
// before-images. The runs in flight at any time touch disjoint nodes and ledgers (a
// plan that shares one with a run in flight waits for that run to end), so which of
// them commit, roll back, or are left applying by a crash is independent, and
// recovery rolls each unfinished one back to its before-images in any order. All of
// a series' runs hold the engine's epoch: a run or recovery of another engine that
// takes the journal fences every one of them.
type Series struct {
	e    *Engine
	ctx  context.Context
	opts ApplyOptions
	done func(*Plan, *Result, error)

	plans    chan *Plan
	toWrite  chan *flight
	toFinish chan *flight
	stages   sync.WaitGroup

	mu    sync.Mutex
	free  *sync.Cond     // signalled when a run leaves the pipeline
	busy  map[string]int // nodes and ledgers of the runs in flight
	fatal error          // set once a run failed in a way that stops the series
	endMu sync.Mutex     // done is called by one stage at a time
}

// ErrSeriesStopped: an earlier run of the series failed (not a refusal), so later
// plans were not applied. It is joined with that failure.
var ErrSeriesStopped = errors.New("series stopped by an earlier run's failure")

// StartSeries recovers unfinished runs (once per engine, as Apply does) and starts
// a series. done receives every plan with its run's result and error, as Apply
// returns them, one call at a time but not necessarily in the order of the plans. opts apply to every
// run, except Backup, which the first run that passes its preflight takes. The
// engine runs nothing else until Close.
func (e *Engine) StartSeries(ctx context.Context, opts ApplyOptions, done func(*Plan, *Result, error)) (*Series, error) {
	e.mu.Lock()
	if err := e.recoverOnce(ctx); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	e.listed = nil
	s := &Series{
		e: e, ctx: ctx, opts: opts, done: done,
		plans:    make(chan *Plan),
		toWrite:  make(chan *flight, 1),
		toFinish: make(chan *flight, 1),
		busy:     make(map[string]int),
	}
	s.free = sync.NewCond(&s.mu)
	s.stages.Add(3)
	go s.journalStage()
	go s.writeStage()
	go s.finishStage()
	return s, nil
}

// Apply hands a plan to the series; it blocks while the pipeline is full. It
// returns the failure that stopped the series, if one did: the plan is then not
// applied (done still sees it).
func (s *Series) Apply(plan *Plan) error {
	s.plans <- plan
	return s.failure()
}

// Close waits for every run handed over to end, releases the engine and returns the
// failure that stopped the series, if any. Each run's commit is durable when it
// ends (finishRun), so Close has nothing to flush.
func (s *Series) Close() error {
	close(s.plans)
	s.stages.Wait()
	defer s.e.mu.Unlock()
	return s.failure()
}

func (s *Series) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// stop records the first failure that stops the series.
func (s *Series) stop(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal == nil {
		s.fatal = err
	}
}

// flight is a plan in the pipeline and its journal record.
type flight struct {
	plan *Plan
	rec  *RunRecord
	// journaled receives how writing the applying record ended (nil: durably).
	journaled chan *runEnd
}

// seriesJournals runs may be journaled at once. A run's applying record costs two
// fsyncs in a row (its file, then the folder, which the runs journaled together
// share: syncDir), 3-5 ms each on this project's loaded disk, where a batch's
// compare-and-set takes about 2.5 ms: with two at once, the journal stage fell
// behind the writes (docs/benchmarks.md, "Measured decisions").
const seriesJournals = 4

// end reports a run's outcome and releases its nodes and ledgers. A failure that
// is not a refusal (a node changed since it was read) stops the series.
func (s *Series) end(f *flight, res *Result, err error) {
	if err != nil && !errors.Is(err, ErrSeriesStopped) && !refused(res, err) {
		s.stop(err)
	}
	if f.rec != nil {
		s.release(f.rec)
	}
	s.endMu.Lock()
	defer s.endMu.Unlock()
	s.done(f.plan, res, err)
}

// refused: the run wrote nothing because a node changed since the plan read it,
// and it is finished (refused, or rolled back): the next plans are unaffected.
func refused(res *Result, err error) bool {
	return res != nil && errors.Is(err, store.ErrVersionMismatch) && (res.State == StateRefused || res.State == StateRolledBack)
}

// keys are the nodes and ledgers a run touches.
func keys(rec *RunRecord) []string {
	out := make([]string, len(rec.Items))
	for i, it := range rec.Items {
		if it.isNode() {
			out[i] = it.Path // paths start with "/", ledger keys do not
		} else {
			out[i] = "ledger " + strconv.FormatInt(it.LedgerID, 10)
		}
	}
	return out
}

// claim waits until no run in flight touches the record's nodes or ledgers, then
// marks them busy.
func (s *Series) claim(rec *RunRecord) {
	ks := keys(rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.overlaps(ks) {
		s.free.Wait()
	}
	for _, k := range ks {
		s.busy[k]++
	}
}

func (s *Series) overlaps(ks []string) bool {
	for _, k := range ks {
		if s.busy[k] > 0 {
			return true
		}
	}
	return false
}

func (s *Series) release(rec *RunRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys(rec) {
		if s.busy[k]--; s.busy[k] <= 0 {
			delete(s.busy, k)
		}
	}
	s.free.Broadcast()
}

// journalStage validates, claims and preflights each plan, in order, and starts
// journaling it; forwardStage hands the journaled runs on in the same order.
func (s *Series) journalStage() {
	defer s.stages.Done()
	journaling := make(chan *flight, seriesJournals-1)
	s.stages.Add(1)
	go s.forwardStage(journaling)
	defer close(journaling)
	started := make(map[string]bool) // run ids of this series
	e := s.e
	for plan := range s.plans {
		f := &flight{plan: plan}
		if err := s.failure(); err != nil {
			s.end(f, nil, fmt.Errorf("%w: %w", ErrSeriesStopped, err))
			continue
		}
		if err := plan.Validate(); err != nil {
			s.end(f, nil, err)
			continue
		}
		rec, err := e.newRecord(plan)
		if err == nil && started[rec.RunID] {
			// Its record may not be written yet (journaled concurrently), so
			// newRecord could not see it.
			err = fmt.Errorf("%w: run id %s is already in the journal", ErrInvalidPlan, rec.RunID)
		}
		if err != nil {
			s.end(f, nil, err)
			continue
		}
		started[rec.RunID] = true
		inv := invocationOf(s.ctx)
		rec.ToolVersion, rec.Invocation = inv.ToolVersion, inv.ID
		s.claim(rec)
		f.rec = rec
		if end := e.prepareRun(s.ctx, rec, s.opts); end != nil {
			s.end(f, end.res, end.err)
			continue
		}
		if rec.Backup != "" {
			s.opts.Backup = "" // taken
		}
		f.journaled = make(chan *runEnd, 1)
		go func() { f.journaled <- e.journalApplying(rec) }()
		journaling <- f
	}
}

// forwardStage hands each run to the write stage, in order, once its applying
// record is durable.
func (s *Series) forwardStage(journaling <-chan *flight) {
	defer s.stages.Done()
	defer close(s.toWrite)
	for f := range journaling {
		if end := <-f.journaled; end != nil {
			s.end(f, end.res, end.err)
			continue
		}
		s.toWrite <- f
	}
}

// writeStage writes the journaled runs, seriesWriters at once (in the order they
// were journaled, each finishing when it finishes). The runs in flight touch
// disjoint nodes and ledgers, so their compare-and-sets commute, and a server
// commits requests that arrive together with one log fsync: a batch no longer
// waits for the one before it to be committed. After the series stopped, a
// journaled run is rolled back instead (it wrote nothing).
func (s *Series) writeStage() {
	defer s.stages.Done()
	defer close(s.toFinish)
	var writers sync.WaitGroup
	for range seriesWriters {
		writers.Go(s.writeRuns)
	}
	writers.Wait()
}

func (s *Series) writeRuns() {
	e := s.e
	for f := range s.toWrite {
		if err := s.failure(); err != nil {
			res, err := e.abort(s.ctx, f.rec, fmt.Errorf("%w: %w", ErrSeriesStopped, err))
			s.end(f, res, err)
			continue
		}
		if end := e.writeRun(s.ctx, f.rec); end != nil {
			s.end(f, end.res, end.err)
			continue
		}
		s.toFinish <- f
	}
}

// seriesWriters runs are written at once.
const seriesWriters = 2

// seriesFinishers runs are verified and committed at once: a commit waits for its
// record's fsync, which must not hold up the next written run's verification
// (see seriesJournals).
const seriesFinishers = 4

// finishStage verifies and commits the written runs, seriesFinishers at once.
func (s *Series) finishStage() {
	defer s.stages.Done()
	var finishers sync.WaitGroup
	for range seriesFinishers {
		finishers.Go(func() {
			for f := range s.toFinish {
				res, err := s.e.finishRun(s.ctx, f.rec)
				s.end(f, res, err)
			}
		})
	}
	finishers.Wait()
}
