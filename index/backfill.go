package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// Reasons a ledger gets no firstEntryIndex written. Summaries count ledgers by them.
const (
	SkipEmpty         = "empty"            // no entries: nothing to index
	SkipNotIndexed    = "not-indexed"      // the topic has no broker entry index
	SkipNoBrokerIndex = "no-broker-index"  // this ledger's entry 0 has no broker index
	SkipOffloaded     = "offloaded"        // entries not local and the value cannot be inferred
	SkipLost          = "lost"             // neither ledger node nor entries exist
	SkipEntriesLost   = "entries-missing"  // the ledger node exists, its entries do not
	SkipEntry0Missing = "entry0-missing"   // later entries exist, entry 0 does not
	SkipCorrupt       = "corrupt-entry"    // entry 0 cannot be decoded
	SkipMismatch      = "mismatch"         // an existing value disagrees (written only with Force)
	SkipInvalid       = "invalid-property" // an existing value is not a decimal (rewritten only with Force)
	SkipConflict      = "inferred-conflict"
	SkipRefused       = "refused"          // the batch run was refused (the node changed meanwhile)
	SkipBadNode       = "undecodable-node" // the managed-ledger node cannot be read or decoded: its topic is skipped
)

// Sources of a planned value.
const (
	SourceEntry0   = "entry0"   // computed from the ledger's entry 0
	SourceInferred = "inferred" // previous ledger's last index + 1 (offloaded ledger)
)

// Finding kinds of back-fill.
const (
	KindNotIndexed    = "index-not-indexed"
	KindOpenLedger    = "index-open-ledger"
	KindInferred      = "index-inferred"
	KindNotInferred   = "index-offloaded-not-inferred"
	KindLostLedger    = "index-lost-ledger"
	KindEntriesLost   = "index-entries-missing"
	KindNoBrokerIndex = "index-no-broker-index"
	KindCorruptEntry  = "index-corrupt-entry"
	KindMismatch      = "index-property-mismatch"
	KindInvalid       = "index-property-invalid"
	KindContinuity    = "index-continuity"
	KindConflict      = "index-inferred-conflict"
	KindRefused       = "index-batch-refused"
	KindUnfinished    = "index-unfinished-run"
	KindBadNode       = "index-node-undecodable"
)

// BackfillOptions tune a back-fill.
type BackfillOptions struct {
	Key string // LedgerInfo property; "" means cluster.FirstEntryIndexKey
	// Paths are the managed-ledger nodes to back-fill; empty means every one.
	Paths []string
	// Shard keeps only the managed ledgers of one shard (zero value: all), so n
	// processes can split one cluster.
	Shard Shard
	// Apply writes through the mutation engine; without it nothing is written.
	Apply bool
	// Workers bounds parallel entry reads (default 4); Rate caps ledgers read per
	// second (0: no cap).
	Workers int
	Rate    float64
	// Verify also reads every ledger's last entry and checks exact continuity, and
	// re-reads entry 0 of ledgers that already have the property.
	Verify bool
	// Force overwrites existing values that disagree with entry 0 (or do not parse).
	// It implies re-reading entry 0 of ledgers that already have the property.
	Force bool
	// A batch (one journaled run) closes at BatchTopics topics (default 100) or
	// BatchLedgers ledgers written (default 10000), whichever comes first.
	BatchTopics  int
	BatchLedgers int
	// Backup names a file for a metadata backup taken before the first batch.
	Backup string
	// Progress counts ledgers examined.
	Progress report.Progress
	// OnPlanned sees every planned write, in order (for dry-run listings).
	OnPlanned func(PlannedLedger)
	// Args is the command line, for the journal.
	Args []string
	// RowLimit bounds the topics (those with work or skips) and the findings of
	// each kind that the result lists (0: DefaultRowLimit; negative: every one);
	// its counts cover the rest. Without a bound the result of a cluster of 1M
	// topics held a row and an open-ledger warning for each.
	RowLimit int
}

// DefaultRowLimit is BackfillOptions.RowLimit's default.
const DefaultRowLimit = 1000

func (o *BackfillOptions) defaults() {
	o.Key = cluster.KeyFor(o.Key)
	if o.Workers < 1 {
		o.Workers = 4
	}
	if o.BatchTopics < 1 {
		o.BatchTopics = 100
	}
	if o.BatchLedgers < 1 {
		o.BatchLedgers = 10000
	}
	if o.Progress == nil {
		o.Progress = report.NoProgress{}
	}
	if o.RowLimit == 0 {
		o.RowLimit = DefaultRowLimit
	}
}

// PlannedLedger is one property write.
type PlannedLedger struct {
	Topic    string `json:"topic" table:"TOPIC"`
	LedgerID int64  `json:"ledger_id" table:"LEDGER"`
	Value    int64  `json:"value" table:"VALUE"`
	Source   string `json:"source" table:"SOURCE"`
	Previous string `json:"previous,omitempty" table:"REPLACES"` // the stored text replaced (Force), if any
}

// TopicResult is what happened to one managed ledger.
type TopicResult struct {
	Topic    string `json:"topic" table:"TOPIC"` // persistent://... or the node path when it does not parse
	Path     string `json:"path"`
	Encoding string `json:"encoding" table:"ENCODING"`
	Ledgers  int    `json:"ledgers" table:"LEDGERS"`
	Had      int    `json:"had" table:"HAD"` // ledgers whose existing value stands
	Planned  int    `json:"planned" table:"PLANNED"`
	Inferred int    `json:"inferred" table:"INFERRED"`
	Written  int    `json:"written" table:"WRITTEN"`
	Skipped  int    `json:"skipped" table:"SKIPPED"`
	RunID    string `json:"run_id,omitempty" table:"RUN"`
}

// BackfillResult sums up a back-fill.
type BackfillResult struct {
	// Topics are the managed ledgers with work or skips, in path order, up to
	// RowLimit of them; TopicsNotListed counts the rest.
	Topics          []TopicResult
	TopicsNotListed int64
	TopicCount      int64 // managed ledgers planned
	TopicsComplete  int64 // of them, those that needed nothing
	TopicsWritten   int64 // of them, those whose batch was written
	Ledgers         int64
	Had             int64
	Planned         int64
	Written         int64
	Skipped         map[string]int64
	Runs            []string
	Recovered       []mutate.RecoveryReport
	// Findings lists up to RowLimit findings of each kind, in the order found;
	// FindingsNotListed counts the rest by kind.
	Findings          []report.Finding
	FindingsNotListed map[string]int64
	// Interrupted: the context ended; batches written before that stay written.
	Interrupted bool
}

// Backfill plans (and with Apply, writes) the firstEntryIndex property of every
// ledger that lacks it, topic by topic. Re-planning from metadata is what makes it
// resumable: ledgers done by an earlier run have the property and are not read again.
//
// It reads every managed-ledger node once: the walk (or, with Paths, batched reads)
// streams nodes into planning, and each batch goes to the engine with the bytes and
// version the walk read, while the next batch is planned. A node changed since it
// was read is caught by the batch's compare-and-set (the batch is refused, nothing
// of it written, and a re-run plans it again).
func Backfill(ctx context.Context, dd *datadir.DataDir, opts BackfillOptions) (*BackfillResult, error) {
	opts.defaults()
	res := &BackfillResult{Skipped: make(map[string]int64), FindingsNotListed: make(map[string]int64)}
	var eng *mutate.Engine
	if opts.Apply {
		var err error
		if eng, err = mutate.New(dd); err != nil {
			return nil, err
		}
		if res.Recovered, err = eng.Recover(ctx); err != nil {
			return nil, fmt.Errorf("recover unfinished runs: %w", err)
		}
	} else if err := noteUnfinished(dd, res); err != nil {
		return nil, err
	}
	// The total is unknown: nodes are planned as they are read, not counted first.
	opts.Progress.Start("backfill ledgers", 0)
	defer opts.Progress.Done()

	b := &backfiller{dd: dd, opts: &opts, res: res, eng: eng, findingsOfKind: make(map[string]int)}
	b.pool = newPool(opts.Workers, newLimiter(opts.Rate, opts.Workers))
	defer b.pool.close()
	err := b.run(ctx)
	report.SortFindings(res.Findings)
	res.Interrupted = ctx.Err() != nil
	return res, err
}

// noteUnfinished warns a dry run that the journal holds a run the next writable
// open will roll back: the plan may then differ.
func noteUnfinished(dd *datadir.DataDir, res *BackfillResult) error {
	runs, err := mutate.Unfinished(mutate.JournalDir(dd.Path))
	if err != nil {
		return err
	}
	for _, r := range runs {
		res.Findings = append(res.Findings, report.Finding{
			Kind: KindUnfinished, Severity: report.SeverityWarning, Location: "run " + r.RunID,
			Message: fmt.Sprintf("journal run %s (%s) is %s; the next --apply rolls it back first", r.RunID, r.Command, r.State),
		})
	}
	return nil
}

// nodeFunc receives one managed-ledger node to plan, or (bad != nil) a node whose
// bytes cannot be read. topic is its topicLabel when the caller parsed the path
// already, else "".
type nodeFunc func(n store.Node, topic string, bad error) error

// readTopics hands over every managed-ledger node to visit, in path order: the
// nodes of opts.Paths read in batches, or a walk of the managed-ledger tree. Values
// are copies the callee may keep.
func readTopics(ctx context.Context, ms store.MetadataStore, opts *BackfillOptions, fn nodeFunc) error {
	if len(opts.Paths) > 0 {
		var paths []string
		for _, p := range opts.Paths {
			if opts.Shard.Has(p) {
				paths = append(paths, p)
			}
		}
		for lo := 0; lo < len(paths); lo += opts.BatchTopics {
			if err := readPaths(ms, paths[lo:min(lo+opts.BatchTopics, len(paths))], fn); err != nil {
				return err
			}
		}
		return nil
	}
	prefix := formats.ManagedLedgersRoot + "/"
	visit := func(n store.Node) error {
		t, ok := formats.ParseManagedLedgerPath(n.Path)
		if !ok || !opts.Shard.Has(n.Path) {
			return nil
		}
		n.Value = bytes.Clone(n.Value) // a Badger walk's value is only valid in the callback
		if n.Value == nil {
			n.Value = []byte{}
		}
		return fn(n, t.String(), nil)
	}
	// A value truncated by a damaged value log is reported and the walk goes on after it.
	err := cluster.WalkNodes(ctx, ms, prefix, visit, func(te *store.TruncatedError) error {
		if _, ok := formats.ParseManagedLedgerPath(te.Path); ok && opts.Shard.Has(te.Path) {
			return fn(store.Node{Path: te.Path}, "", te)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list managed ledgers: %w", err)
	}
	return nil
}

// readPaths reads one batch of named nodes: in one call where the store batches
// reads, else (or when the batch read fails) one by one, so each failure names its node.
func readPaths(ms store.MetadataStore, paths []string, fn nodeFunc) error {
	if nb, ok := ms.(store.NodeBatcher); ok {
		if nodes, err := nb.GetNodes(paths); err == nil {
			for _, n := range nodes {
				if n.Version == 0 {
					return fmt.Errorf("metadata node %q: %w", n.Path, store.ErrNotFound)
				}
				if err := fn(n, "", nil); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for _, p := range paths {
		n, err := ms.Get(p)
		switch {
		case errors.Is(err, store.ErrTruncatedValue):
			err = fn(store.Node{Path: p}, "", err)
		case err != nil:
			return err
		default:
			err = fn(n, "", nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// backfiller runs one back-fill.
type backfiller struct {
	dd   *datadir.DataDir
	opts *BackfillOptions
	eng  *mutate.Engine
	pool *pool

	mu  sync.Mutex // res: the planner adds topics, the writer records runs
	res *BackfillResult
	// findingsOfKind counts the findings listed in res, by kind (under mu).
	findingsOfKind map[string]int

	batch        []*topicPlan
	batchLedgers int
}

// run plans topics concurrently (at most Workers in flight) as the nodes are read,
// consumes the plans in path order, so results and batches do not depend on
// scheduling, and hands full batches to a writer, which applies them one at a time
// while the next batch is planned.
func (b *backfiller) run(ctx context.Context) error {
	planCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.startWriter(ctx, cancel)
	if err != nil {
		return err
	}
	// Nodes go to the planners in chunks of planChunk, and come back the same
	// way: a hand-off between goroutines per node cost more than planning one
	// small node.
	type node struct {
		n     store.Node
		topic string
		bad   error
	}
	type pending struct{ done chan []*topicPlan }
	type job struct {
		nodes []node
		done  chan []*topicPlan
	}
	queue := make(chan pending, b.opts.Workers)
	// Workers planners, long-lived: a goroutine per node paid for growing its
	// stack each time.
	jobs := make(chan job)
	for range b.opts.Workers {
		go func() {
			for j := range jobs {
				tps := make([]*topicPlan, len(j.nodes))
				for i, nd := range j.nodes {
					tps[i] = b.planNode(planCtx, nd.n, nd.topic, nd.bad)
				}
				j.done <- tps // buffered: never blocks
			}
		}()
	}
	var readErr error
	go func() {
		defer close(queue)
		defer close(jobs)
		var chunk []node
		chunkBytes := 0
		flush := func() error {
			if len(chunk) == 0 {
				return nil
			}
			pd := pending{make(chan []*topicPlan, 1)}
			select {
			case queue <- pd:
			case <-planCtx.Done():
				return planCtx.Err()
			}
			// A planner is free soon: none waits on anything but entry reads.
			jobs <- job{chunk, pd.done}
			chunk, chunkBytes = make([]node, 0, planChunk), 0
			return nil
		}
		readErr = readTopics(planCtx, b.dd.Metadata, b.opts, func(n store.Node, topic string, bad error) error {
			chunk = append(chunk, node{n, topic, bad})
			if chunkBytes += len(n.Value); len(chunk) < planChunk && chunkBytes < planChunkBytes {
				return nil
			}
			return flush()
		})
		// The nodes read before a failure are planned, as each was as it came.
		if err := flush(); readErr == nil {
			readErr = err
		}
	}()
	for pd := range queue {
		for _, tp := range <-pd.done {
			if err != nil {
				continue // drain
			}
			if tp.err != nil {
				err = tp.err
				cancel()
				continue
			}
			b.take(tp, w)
		}
	}
	// queue is closed: readErr is set. The last, partial batch is written unless
	// something failed or the context ended.
	if err == nil && readErr == nil {
		w.send(b.cut())
	}
	werr := w.close()
	switch {
	case err != nil:
		return err
	case werr != nil:
		return werr
	case ctx.Err() != nil:
		return ctx.Err() // a batch not started when the context ended was not written
	}
	return readErr
}

// planChunk nodes, or fewer when their values reach planChunkBytes, are handed
// to a planner at once. The bytes bound what chunks in flight hold (a node's
// plan grows with its ledgers): with chunks of 16 topics of 100 ledgers each, a
// back-fill of 1M ledgers peaked 15 MB higher than with one topic at a time
// (docs/benchmarks.md).
const (
	planChunk      = 16
	planChunkBytes = 8 << 10
)

// take records a topic's plan and hands the batch to the writer when it is full.
func (b *backfiller) take(tp *topicPlan, w *writer) {
	b.mu.Lock()
	b.listTopic(tp)
	for _, f := range tp.findings {
		b.addFinding(f)
	}
	b.res.Ledgers += int64(tp.result.Ledgers)
	b.res.Had += int64(tp.result.Had)
	b.res.Planned += int64(tp.result.Planned)
	for reason, n := range tp.skipped {
		b.res.Skipped[reason] += int64(n)
	}
	b.mu.Unlock()
	if b.opts.OnPlanned != nil {
		for _, w := range tp.writes {
			b.opts.OnPlanned(w)
		}
	}
	if tp.after == nil {
		return
	}
	tp.writes = nil // only counts are needed from here on
	b.batch = append(b.batch, tp)
	b.batchLedgers += tp.result.Planned
	if len(b.batch) >= b.opts.BatchTopics || b.batchLedgers >= b.opts.BatchLedgers {
		w.send(b.cut())
	}
}

// listTopic counts a planned topic and lists it in the result when it had work or
// skips and the list has room; tp.resultIndex is its row, or -1. b.mu is held.
func (b *backfiller) listTopic(tp *topicPlan) {
	r := b.res
	r.TopicCount++
	tp.resultIndex = -1
	switch {
	case tp.result.Planned == 0 && tp.result.Skipped == 0:
		r.TopicsComplete++
	case b.opts.RowLimit < 0 || len(r.Topics) < b.opts.RowLimit:
		r.Topics = append(r.Topics, tp.result)
		tp.resultIndex = len(r.Topics) - 1
	default:
		r.TopicsNotListed++
	}
}

// addFinding lists f, or counts it when RowLimit findings of its kind are listed.
// b.mu is held.
func (b *backfiller) addFinding(f report.Finding) {
	if b.opts.RowLimit >= 0 && b.findingsOfKind[f.Kind] >= b.opts.RowLimit {
		b.res.FindingsNotListed[f.Kind]++
		return
	}
	b.findingsOfKind[f.Kind]++
	b.res.Findings = append(b.res.Findings, f)
}

// cut returns the batch planned so far and starts a new one.
func (b *backfiller) cut() []*topicPlan {
	batch := b.batch
	b.batch, b.batchLedgers = nil, 0
	return batch
}

// writer hands full batches (through a queue of writeQueue) to the engine as
// runs of one mutate.Series, which journals the next batch and verifies the last
// while one is written. A failure (other than a refused batch) cancels planning;
// later batches are dropped.
type writer struct {
	b      *backfiller
	ctx    context.Context
	cancel context.CancelFunc
	series *mutate.Series // nil in a dry run
	queue  chan []*topicPlan
	fed    chan struct{} // closed when feed has handed over every batch
	// Guarded by b.mu:
	batches map[*mutate.Plan][]*topicPlan
	err     error
}

func (b *backfiller) startWriter(ctx context.Context, cancel context.CancelFunc) (*writer, error) {
	w := &writer{b: b, ctx: ctx, cancel: cancel, batches: make(map[*mutate.Plan][]*topicPlan)}
	if b.eng == nil {
		return w, nil
	}
	// Before and Expect are what the walk read: the compare-and-set guards them.
	ao := mutate.ApplyOptions{TrustBefore: true, Backup: b.opts.Backup}
	// A batch that starts is finished: cancelling stops between batches.
	series, err := b.eng.StartSeries(context.WithoutCancel(ctx), ao, w.ended)
	if err != nil {
		return nil, err
	}
	w.series = series
	w.queue, w.fed = make(chan []*topicPlan, writeQueue), make(chan struct{})
	go w.feed()
	return w, nil
}

// writeQueue full batches may wait for the series, so planning goes on while a
// slow write or journal fsync holds the series.
const writeQueue = 2

// send queues one batch to be written as a journaled run (nothing in a dry run
// or once the context ended or a batch failed). It blocks while the queue is full.
func (w *writer) send(batch []*topicPlan) {
	if len(batch) == 0 || w.series == nil || w.ctx.Err() != nil || w.failed() {
		return
	}
	w.queue <- batch
}

// feed hands the queued batches to the series, in order. A batch still queued
// when the context ends or a batch fails is not written.
func (w *writer) feed() {
	defer close(w.fed)
	for batch := range w.queue {
		if w.ctx.Err() != nil || w.failed() {
			continue
		}
		plan := w.b.plan(batch)
		w.b.mu.Lock()
		w.batches[plan] = batch
		w.b.mu.Unlock()
		if err := w.series.Apply(plan); err != nil {
			w.cancel()
		}
	}
}

func (w *writer) failed() bool {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return w.err != nil
}

// close waits for every batch sent and returns the first failure.
func (w *writer) close() error {
	if w.series != nil {
		close(w.queue)
		<-w.fed
		w.series.Close() // its failure was seen by ended
	}
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	sort.Strings(w.b.res.Runs) // run ids sort by time; runs may end out of order
	return w.err
}

// plan is the engine's plan for one batch.
func (b *backfiller) plan(batch []*topicPlan) *mutate.Plan {
	plan := &mutate.Plan{
		Command: "index backfill",
		Args:    b.opts.Args,
		Flags:   map[string]string{"key": b.opts.Key, "force": strconv.FormatBool(b.opts.Force)},
	}
	ledgers := 0
	for _, tp := range batch {
		plan.Items = append(plan.Items, mutate.Item{
			Kind: mutate.KindSet, Path: tp.result.Path, Expect: tp.version, Before: tp.before, After: tp.after,
			Description: fmt.Sprintf("set %s on %d ledger(s) of %s", b.opts.Key, tp.result.Planned, tp.result.Topic),
		})
		ledgers += tp.result.Planned
	}
	plan.Notes = []string{fmt.Sprintf("%s back-fill: %d topic(s), %d ledger(s)", b.opts.Key, len(batch), ledgers)}
	return plan
}

// ended records how one batch's run ended.
func (w *writer) ended(plan *mutate.Plan, r *mutate.Result, err error) {
	b := w.b
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := w.batches[plan]
	delete(w.batches, plan)
	if err != nil {
		if r != nil && errors.Is(err, store.ErrVersionMismatch) && (r.State == mutate.StateRefused || r.State == mutate.StateRolledBack) {
			// Someone (a broker) changed a node since it was read: nothing of the
			// batch was written; a re-run plans again from the new state.
			for _, tp := range batch {
				b.res.Skipped[SkipRefused] += int64(tp.result.Planned)
				b.addFinding(report.Finding{
					Kind: KindRefused, Severity: report.SeverityError, Location: tp.result.Topic,
					Topic: tp.result.Topic, Path: tp.result.Path,
					Message: fmt.Sprintf("batch run %s was refused, nothing written: %v", r.RunID, err),
					Hint:    "re-run index backfill; it plans again from the current metadata",
				})
			}
			return
		}
		// The first real failure is the one to report, not the runs it stopped.
		if w.err == nil || (errors.Is(w.err, mutate.ErrSeriesStopped) && !errors.Is(err, mutate.ErrSeriesStopped)) {
			w.err = fmt.Errorf("write batch of %d topic(s): %w", len(batch), err)
		}
		w.cancel()
		return
	}
	b.res.Runs = append(b.res.Runs, r.RunID)
	for _, tp := range batch {
		b.res.Written += int64(tp.result.Planned)
		b.res.TopicsWritten++
		if tp.resultIndex >= 0 {
			t := &b.res.Topics[tp.resultIndex]
			t.Written, t.RunID = t.Planned, r.RunID
		}
	}
}

// topicPlan is one managed ledger's share of a batch.
type topicPlan struct {
	result      TopicResult
	resultIndex int
	version     uint64
	before      []byte
	after       []byte // nil: nothing to write
	writes      []PlannedLedger
	skipped     map[string]int
	findings    []report.Finding
	err         error
}

func (tp *topicPlan) find(sev report.Severity, kind string, ledgerID int64, format string, args ...any) {
	f := report.Finding{
		Kind: kind, Severity: sev, Topic: tp.result.Topic, Path: tp.result.Path,
		Message: fmt.Sprintf(format, args...),
	}
	f.Location = tp.result.Topic
	if ledgerID >= 0 {
		f.Location = tp.result.Topic + " ledger " + strconv.FormatInt(ledgerID, 10)
		f.LedgerID = report.Int64(ledgerID)
	}
	tp.findings = append(tp.findings, f)
}

// badNode skips the whole topic, whose managed-ledger node is unusable, with a
// finding; nothing of it is written.
func (tp *topicPlan) badNode(msg string) {
	tp.find(report.SeverityError, KindBadNode, -1, "%s; the topic was skipped (inspect it with: ledgermedic inspect node %s)", msg, tp.result.Path)
	tp.skip(SkipBadNode, 1)
}

// skip counts n ledgers skipped for reason.
func (tp *topicPlan) skip(reason string, n int) {
	if tp.skipped == nil {
		tp.skipped = make(map[string]int)
	}
	tp.skipped[reason] += n
	tp.result.Skipped += n
}

// topicLabel names a managed ledger by its topic when the path is canonical.
func topicLabel(path string) string {
	if t, ok := formats.ParseManagedLedgerPath(path); ok {
		return t.String()
	}
	return path
}

// planNode reads the entries one managed-ledger node needs and computes the
// node's new value. bad is why the node's bytes could not be read (nil: n holds them).
func (b *backfiller) planNode(ctx context.Context, node store.Node, topic string, bad error) *topicPlan {
	path := node.Path
	if topic == "" {
		topic = topicLabel(path)
	}
	tp := &topicPlan{result: TopicResult{Topic: topic, Path: path}}
	if bad != nil {
		// The node's bytes are damaged: this topic is skipped, the rest goes on.
		tp.badNode(fmt.Sprintf("node %s cannot be read: %v", path, bad))
		return tp
	}
	info, enc, err := formats.DecodeManagedLedgerInfo(node.Value)
	if err != nil {
		tp.badNode(fmt.Sprintf("node %s (%d bytes) does not decode as ManagedLedgerInfo: %v", path, len(node.Value), err))
		return tp
	}
	tp.version, tp.before = node.Version, node.Value
	tp.result.Encoding = enc.String()
	// The open ledger's count is looked up only when its entry 0 does not settle
	// that it has entries (probeLedger): the lookup costs an iterator seek.
	refs := cluster.MetadataLedgers(info, b.opts.Key)
	tp.result.Ledgers = len(refs)
	if err := b.planLedgers(ctx, tp, info, refs); err != nil {
		tp.err = fmt.Errorf("%s: %w", path, err)
		return tp
	}
	if tp.result.Planned == 0 {
		return tp
	}
	after, err := formats.EncodeManagedLedgerInfo(info, enc)
	if err != nil {
		tp.err = fmt.Errorf("%s: %w", path, err)
		return tp
	}
	if !bytes.Equal(after, tp.before) {
		tp.after = after
	}
	return tp
}

// ledgerFacts is what reading a ledger told us.
type ledgerFacts struct {
	read    bool   // entry 0 was looked for
	state   string // "" when First is valid, else a Skip reason
	first   int64
	last    int64 // broker index of the last message, when hasLast
	hasLast bool
	detail  string // error text for findings
	entries int64  // local entries (last entry id + 1), when hasLast
	// What reading entry 0 said, for the indexed rule (cluster.Entry0Read).
	e0Read, e0Index bool
	e0Err           error
}

// needsRead says whether a ledger's entry 0 must be read.
func (b *backfiller) needsRead(r ledgerRef) bool {
	return !r.HasFirst || b.opts.Verify || b.opts.Force
}

// planLedgers decides every ledger's value and edits info in place.
func (b *backfiller) planLedgers(ctx context.Context, tp *topicPlan, info *mlpb.ManagedLedgerInfo, refs []ledgerRef) error {
	reads := 0
	for i, r := range refs {
		if b.needsRead(r) {
			reads++
		}
		if r.CountUnknown && r.NotLocal {
			// An offloaded open ledger's count is needed to infer: look it up now.
			n, err := cluster.OpenLedgerEntries(b.dd.Ledgers, r.ID)
			if err != nil {
				return err
			}
			refs[i].Entries, refs[i].CountUnknown = n, false
		}
	}
	if reads == 0 {
		// Most nodes of a cluster back-filled before: nothing is read.
		tp.result.Had = len(refs)
		b.checkContinuity(tp, refs, nil, nil)
		return nil
	}
	facts := make([]ledgerFacts, len(refs))
	work := make([]int, 0, reads)
	for i, r := range refs {
		if b.needsRead(r) {
			work = append(work, i)
		}
	}
	_, mlIndex := cluster.HasMLIndex(info)
	// Entry 0 of each ledger to plan is read once: it answers the indexed rule
	// too (whose other ledgers InfoIndexedKnown reads itself).
	if err := b.inChunks(work, func(chunk []int) error { return b.readEntry0(ctx, refs, facts, chunk, !mlIndex) }); err != nil {
		return err
	}
	by, err := cluster.InfoIndexedKnown(info, b.dd.Ledgers, func(i int) cluster.Entry0Read {
		f := &facts[i]
		return cluster.Entry0Read{Read: f.e0Read, HasIndex: f.e0Index, Err: f.e0Err}
	})
	if err != nil {
		return err
	}
	if by == cluster.NotIndexed {
		tp.skip(SkipNotIndexed, len(work))
		tp.result.Had = len(refs) - len(work)
		tp.find(report.SeverityInfo, KindNotIndexed, -1,
			"no ML property %q and no broker entry index in entry 0 of any ledger: topic is not indexed; %d ledger(s) skipped",
			cluster.MLIndexProperty, len(work))
		return nil
	}
	var follow []int // ledgers whose entry 0 needs more reads than itself
	for _, i := range work {
		f := &facts[i]
		switch {
		case errors.Is(f.e0Err, store.ErrNotFound):
			follow = append(follow, i)
		case f.e0Err != nil:
			return f.e0Err
		case f.e0Read && f.state == "" && b.opts.Verify:
			follow = append(follow, i)
		}
	}
	if len(follow) > 0 {
		if err := b.inChunks(follow, func(chunk []int) error { return b.followUp(refs, facts, chunk) }); err != nil {
			return err
		}
	}
	values := b.decide(tp, info, refs, facts)
	b.checkContinuity(tp, refs, facts, values)
	return nil
}

// probeChunk ledgers of a topic are read by its planner, in one store reader: a
// read of a local store costs less than handing it to another goroutine. A
// topic with more ledgers has its chunks read by the pool, in parallel.
const probeChunk = 64

// inChunks calls fn with work whole, or with chunks of probeChunk on the pool,
// and returns the first error in work's order.
func (b *backfiller) inChunks(work []int, fn func(chunk []int) error) error {
	if len(work) <= probeChunk {
		return fn(work)
	}
	errs := make([]error, (len(work)+probeChunk-1)/probeChunk)
	var wg sync.WaitGroup
	for c := range errs {
		chunk := work[c*probeChunk : min((c+1)*probeChunk, len(work))]
		wg.Add(1)
		b.pool.submit(func() {
			defer wg.Done()
			errs[c] = fn(chunk)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readEntry0 reads entry 0 of the chunk's ledgers, one ledger per token of the
// rate limiter. wantIndex also records whether each carries a broker index as
// the indexed rule reads it (cluster.Entry0HasIndex).
func (b *backfiller) readEntry0(ctx context.Context, refs []ledgerRef, facts []ledgerFacts, chunk []int, wantIndex bool) error {
	defer b.opts.Progress.Add(int64(len(chunk)))
	er := b.dd.Ledgers.EntryReader()
	defer er.Close()
	p := &entry0Parser{wantIndex: wantIndex}
	parse := p.parse // one callback for the chunk, not one per ledger
	for _, i := range chunk {
		if err := b.pool.lim.wait(ctx); err != nil {
			return err
		}
		r, f := refs[i], &facts[i]
		f.read = true
		switch {
		case r.Entries == 0 && !r.CountUnknown:
			f.state = SkipEmpty
		case r.NotLocal:
			f.state = SkipOffloaded
		default:
			// A read error is kept: whether it matters depends on the topic being indexed.
			p.f, f.e0Read = f, true
			f.e0Err = er.Peek(r.ID, 0, parse)
		}
	}
	return nil
}

// entry0Parser decodes entry 0 of a ledger, in place, into f.
type entry0Parser struct {
	f         *ledgerFacts
	wantIndex bool
}

func (p *entry0Parser) parse(v []byte) error {
	f := p.f
	if p.wantIndex {
		f.e0Index = cluster.Entry0HasIndex(v)
	}
	e, err := ParseEntryInfo(v)
	switch {
	case err != nil:
		f.state, f.detail = SkipCorrupt, fmt.Sprintf("entry 0: %v", err)
	case !e.HasIndex:
		f.state = SkipNoBrokerIndex
	default:
		f.first = e.Base
	}
	return nil
}

// followUp finishes the facts of ledgers whose entry 0 is missing (is the open
// ledger empty? are its entries lost?) or, with Verify, reads their last entry.
func (b *backfiller) followUp(refs []ledgerRef, facts []ledgerFacts, chunk []int) error {
	for _, i := range chunk {
		r, f := refs[i], &facts[i]
		if f.e0Err == nil {
			f.last, f.entries, f.hasLast, f.detail = readLast(b.dd.Ledgers, r.ID)
			continue
		}
		if r.CountUnknown {
			// The open ledger: empty, unless the store holds later entries.
			n, err := cluster.OpenLedgerEntries(b.dd.Ledgers, r.ID)
			if err != nil {
				return err
			}
			if n == 0 {
				f.state = SkipEmpty
				continue
			}
		}
		f.state, f.detail = missingState(b.dd.Metadata, b.dd.Ledgers, r.ID), f.e0Err.Error()
	}
	return nil
}

// missingState tells apart why an entry of a ledger is not in the store
// (cluster.LedgerPresence; a lookup that fails counts as absent): back-fill's
// skips and find's notes.
func missingState(ms store.MetadataStore, ls store.LedgerStore, id int64) string {
	p, _ := cluster.LedgerPresence(ms, ls, id)
	switch {
	case p.Entries:
		return SkipEntry0Missing
	case p.Lost():
		return SkipLost
	}
	return SkipEntriesLost
}

// readLast returns the last message index of a ledger's last stored entry.
func readLast(ls store.LedgerStore, id int64) (last, entries int64, ok bool, detail string) {
	le, err := ls.LastEntry(id)
	if err != nil {
		return 0, 0, false, err.Error()
	}
	b, err := ls.Entry(id, le)
	if err != nil {
		return 0, 0, false, err.Error()
	}
	e, err := ParseEntryInfo(b)
	if err != nil || !e.HasIndex {
		return 0, 0, false, fmt.Sprintf("ledger %d entry %d: no broker index", id, le)
	}
	return e.Last, le + 1, true, ""
}

// decide turns the facts into values, edits info and records findings. It returns
// each ledger's first index as it will stand (-1: unknown).
func (b *backfiller) decide(tp *topicPlan, info *mlpb.ManagedLedgerInfo, refs []ledgerRef, facts []ledgerFacts) []int64 {
	key := b.opts.Key
	lis := info.GetLedgerInfo()
	values := make([]int64, len(refs))
	for i, r := range refs {
		values[i] = -1
		if r.HasFirst {
			values[i] = r.First
		}
	}
	plan := func(i int, v int64, source string) {
		prev, _ := formats.LedgerProperty(lis[i], key)
		formats.SetLedgerProperty(lis[i], key, strconv.FormatInt(v, 10))
		values[i] = v
		tp.result.Planned++
		if source == SourceInferred {
			tp.result.Inferred++
		}
		if tp.writes == nil {
			tp.writes = make([]PlannedLedger, 0, len(refs)-i)
		}
		tp.writes = append(tp.writes, PlannedLedger{Topic: tp.result.Topic, LedgerID: refs[i].ID, Value: v, Source: source, Previous: prev})
	}
	for i, r := range refs {
		f := facts[i]
		if !f.read {
			tp.result.Had++
			continue
		}
		switch f.state {
		case "":
			b.decideComputed(tp, i, r, f, plan)
		case SkipEmpty:
			if r.HasFirst {
				tp.result.Had++
			} else {
				tp.skip(SkipEmpty, 1)
			}
		case SkipOffloaded:
			b.decideOffloaded(tp, i, refs, facts, values, plan)
		default:
			if r.HasFirst {
				tp.result.Had++ // an existing value stands; nothing to check it against
				continue
			}
			tp.skip(f.state, 1)
			b.reportUnreadable(tp, r, f)
		}
	}
	return values
}

// decideComputed handles a ledger whose entry 0 gave its first index.
func (b *backfiller) decideComputed(tp *topicPlan, i int, r ledgerRef, f ledgerFacts, plan func(int, int64, string)) {
	key := b.opts.Key
	switch {
	case r.HasFirst && r.First == f.first:
		tp.result.Had++
		return
	case r.HasFirst:
		tp.find(report.SeverityError, KindMismatch, r.ID,
			"%s is %d but entry 0 says %d", key, r.First, f.first)
		if !b.opts.Force {
			tp.skip(SkipMismatch, 1)
			return
		}
	case r.BadFirst != "":
		tp.find(report.SeverityWarning, KindInvalid, r.ID, "%s %q is not a decimal index; entry 0 says %d", key, r.BadFirst, f.first)
		if !b.opts.Force {
			tp.skip(SkipInvalid, 1)
			return
		}
	}
	if r.Open {
		// Info, not warning: the value is right; it just may not survive a broker opening the topic.
		tp.find(report.SeverityInfo, KindOpenLedger, r.ID,
			"ledger %d is the open last ledger: %s %d is written, but a broker rebuilds the open ledger's LedgerInfo when it opens the topic",
			r.ID, key, f.first)
	}
	plan(i, f.first, SourceEntry0)
}

// decideOffloaded infers an offloaded ledger's first index as the previous ledger's
// last index + 1, which needs that ledger's last entry to be local.
func (b *backfiller) decideOffloaded(tp *topicPlan, i int, refs []ledgerRef, facts []ledgerFacts, values []int64, plan func(int, int64, string)) {
	r := refs[i]
	if r.HasFirst && !b.opts.Force {
		tp.result.Had++
		return
	}
	if r.BadFirst != "" && !b.opts.Force {
		tp.find(report.SeverityWarning, KindInvalid, r.ID, "%s %q is not a decimal index", b.opts.Key, r.BadFirst)
		tp.skip(SkipInvalid, 1)
		return
	}
	p := i - 1
	for p >= 0 && refs[p].Entries == 0 {
		p--
	}
	why := "it is the first ledger"
	var prevLast int64
	known := false
	if p >= 0 {
		pf := &facts[p]
		switch {
		case refs[p].NotLocal:
			why = fmt.Sprintf("previous ledger %d is offloaded too", refs[p].ID)
		default:
			if !pf.hasLast {
				var detail string
				pf.last, pf.entries, pf.hasLast, detail = readLast(b.dd.Ledgers, refs[p].ID)
				why = fmt.Sprintf("previous ledger %d's last entry cannot be read (%s)", refs[p].ID, detail)
			}
			// The stored last entry must be the one LedgerInfo counts: with the tail
			// lost (or entries past the LAC) its index is not where this ledger starts.
			if pf.hasLast && pf.entries != refs[p].Entries {
				why = fmt.Sprintf("previous ledger %d has %d entries in the store but %d in LedgerInfo", refs[p].ID, pf.entries, refs[p].Entries)
			} else {
				prevLast, known = pf.last, pf.hasLast
			}
		}
	}
	if !known {
		if r.HasFirst {
			tp.result.Had++
			return
		}
		tp.skip(SkipOffloaded, 1)
		tp.find(report.SeverityWarning, KindNotInferred, r.ID,
			"ledger %d was offloaded (entries not local) and %s can not be inferred: %s", r.ID, b.opts.Key, why)
		return
	}
	v := prevLast + 1
	// Every entry holds at least one message, so the next known ledger starts at
	// least this ledger's entry count further on.
	for n := i + 1; n < len(refs); n++ {
		if values[n] < 0 && facts[n].state == "" && facts[n].read {
			values[n] = facts[n].first
		}
		if values[n] >= 0 {
			if v+r.Entries > values[n] {
				tp.skip(SkipConflict, 1)
				tp.find(report.SeverityError, KindConflict, r.ID,
					"inferred %s %d (ledger %d ends at %d) plus %d entries passes ledger %d's first index %d; not written",
					b.opts.Key, v, refs[p].ID, prevLast, r.Entries, refs[n].ID, values[n])
				return
			}
			break
		}
	}
	if r.HasFirst {
		if r.First == v {
			tp.result.Had++
			return
		}
		tp.find(report.SeverityError, KindMismatch, r.ID, "%s is %d but the previous ledger ends at %d", b.opts.Key, r.First, prevLast)
	}
	tp.find(report.SeverityInfo, KindInferred, r.ID,
		"ledger %d was offloaded: %s %d inferred from ledger %d's last index %d", r.ID, b.opts.Key, v, refs[p].ID, prevLast)
	plan(i, v, SourceInferred)
}

// reportUnreadable records why a ledger's entry 0 could not give a value.
func (b *backfiller) reportUnreadable(tp *topicPlan, r ledgerRef, f ledgerFacts) {
	switch f.state {
	case SkipLost:
		tp.find(report.SeverityError, KindLostLedger, r.ID,
			"ledger %d is referenced by LedgerInfo (%d entries) but has neither a ledger node nor entries", r.ID, r.Entries)
	case SkipEntriesLost:
		tp.find(report.SeverityError, KindEntriesLost, r.ID,
			"ledger %d has a ledger node but no entries in the ledger store", r.ID)
	case SkipEntry0Missing:
		tp.find(report.SeverityError, KindEntriesLost, r.ID, "ledger %d has entries but not entry 0", r.ID)
	case SkipCorrupt:
		tp.find(report.SeverityError, KindCorruptEntry, r.ID, "ledger %d: %s", r.ID, f.detail)
	case SkipNoBrokerIndex:
		tp.find(report.SeverityWarning, KindNoBrokerIndex, r.ID,
			"ledger %d entry 0 has no broker entry index (written before the index interceptor was on?)", r.ID)
	}
}

// checkContinuity reports ledgers whose first indexes cannot all be right: values
// must increase by at least each ledger's entry count, and with last entries read
// (Verify) a ledger must start right after the previous one ends. facts is nil
// when nothing was read.
func (b *backfiller) checkContinuity(tp *topicPlan, refs []ledgerRef, facts []ledgerFacts, values []int64) {
	var none ledgerFacts
	fact := func(i int) *ledgerFacts {
		if facts == nil {
			return &none
		}
		return &facts[i]
	}
	if values == nil {
		values = make([]int64, len(refs))
		for i, r := range refs {
			values[i] = -1
			if r.HasFirst {
				values[i] = r.First
			}
		}
	}
	key := b.opts.Key
	prev := -1 // previous ledger with a known value
	for i, r := range refs {
		f := fact(i)
		if f.hasLast && values[i] >= 0 && f.last < values[i]+f.entries-1 {
			tp.find(report.SeverityError, KindContinuity, r.ID,
				"ledger %d: %s %d but its %d entries end at index %d", r.ID, key, values[i], f.entries, f.last)
		}
		if values[i] < 0 {
			if r.Entries > 0 {
				prev = -1 // an unknown ledger in between: only adjacent pairs are compared
			}
			continue
		}
		if prev >= 0 {
			p := refs[prev]
			pf := fact(prev)
			switch {
			// A ledger whose stored tail is not its LedgerInfo tail says nothing about where the next starts.
			case pf.hasLast && pf.entries == p.Entries && !Continuous(pf.last, values[i]):
				tp.find(report.SeverityError, KindContinuity, r.ID,
					"ledger %d starts at %d but ledger %d ends at %d (want %d)", r.ID, values[i], p.ID, pf.last, pf.last+1)
			case values[i]-values[prev] < p.Entries:
				tp.find(report.SeverityError, KindContinuity, r.ID,
					"ledger %d starts at %d, only %d after ledger %d (%d), which has %d entries",
					r.ID, values[i], values[i]-values[prev], p.ID, values[prev], p.Entries)
			}
		}
		if r.Entries > 0 {
			prev = i
		}
	}
}

// pool runs jobs on a fixed number of goroutines.
type pool struct {
	jobs chan func()
	wg   sync.WaitGroup
	lim  *limiter
}

func newPool(workers int, lim *limiter) *pool {
	p := &pool{jobs: make(chan func()), lim: lim}
	p.wg.Add(workers)
	for range workers {
		go func() {
			defer p.wg.Done()
			for job := range p.jobs {
				job()
			}
		}()
	}
	return p
}

func (p *pool) submit(job func()) { p.jobs <- job }

func (p *pool) close() {
	close(p.jobs)
	p.wg.Wait()
}

// SkippedReasons returns the skip reasons of a result in a stable order.
func (r *BackfillResult) SkippedReasons() []string {
	var out []string
	for k := range r.Skipped {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
