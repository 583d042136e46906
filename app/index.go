package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/index"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// planRowLimit caps the per-ledger rows a dry run prints; the counts cover the rest.
const planRowLimit = 1000

// indexCommand groups the broker-entry-index tools: back-fill and find.
func (e *env) indexCommand() *cli.Command {
	return &cli.Command{
		Name:  "index",
		Usage: "back-fill firstEntryIndex on ledgers and find entries by offset or time (indexed topics)",
		Subcommands: []*cli.Command{
			e.indexBackfillCommand(),
			e.indexFindCommand(),
		},
	}
}

func (e *env) indexBackfillCommand() *cli.Command {
	return &cli.Command{
		Name:  "backfill",
		Usage: "store each ledger's first broker index as a LedgerInfo property (dry run unless --apply)",
		Description: "For every indexed topic (ML property \"index\", or a broker index in entry 0 of any of its ledgers) and\n" +
			"every LedgerInfo without the property, reads entry 0 and plans\n" +
			"  firstEntryIndex = index(entry 0) - num_messages_in_batch(entry 0) + 1.\n" +
			"Offloaded ledgers get the previous ledger's last index + 1 when that can be read (\"inferred\");\n" +
			"lost ledgers, ledgers without broker index and values that disagree are reported, never guessed.\n" +
			"Writes go through the mutation engine in batches, each its own journaled run (undo one with\n" +
			"`ledgermedic journal undo RUN`). An interrupted run resumes by running it again: ledgers done\n" +
			"already have the property. See docs/runbook-backfill.md.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: flagTopic, Usage: "topic to back-fill (repeatable; a partitioned topic means all its partitions); default: every topic"},
			indexKeyFlag(),
			&cli.BoolFlag{Name: flagApply, Usage: "write the plan (without it nothing is written)"},
			&cli.IntFlag{Name: flagWorkers, Value: 4, Usage: "parallel entry reads"},
			&cli.Float64Flag{Name: flagRate, Usage: "at most N ledgers read per second (0: no limit)"},
			&cli.BoolFlag{Name: flagVerify, Usage: "also read every ledger's last entry, re-check existing values and check continuity"},
			&cli.BoolFlag{Name: flagForce, Usage: "overwrite existing values that disagree with entry 0"},
			&cli.IntFlag{Name: flagBatch, Value: 100, Usage: "topics per journaled run"},
			&cli.IntFlag{Name: flagBatchLedgers, Value: 10000, Usage: "ledgers per journaled run (a topic is never split)"},
			&cli.StringFlag{Name: flagBackup, Usage: "write a metadata backup to FILE (must not exist) before the first batch"},
			&cli.StringFlag{Name: flagShard, Usage: "I/N: only the topics whose managed-ledger path hashes to shard I of N, " +
				"so N processes (on N machines, against one live store) split the cluster; overlaps are caught by compare-and-set"},
		},
		Action: e.indexBackfill,
	}
}

// The index commands' own flags.
const (
	flagRate         = "rate"
	flagVerify       = "verify"
	flagBatch        = "batch"
	flagBatchLedgers = "batch-ledgers"
	flagShard        = "shard"
	flagLegacy       = "legacy"
	flagCompare      = "compare"
)

// backfillOptions are index backfill's flags (Paths and Progress are filled
// once the stores are open).
type backfillOptions struct {
	Topics []string
	index.BackfillOptions
}

func parseBackfillOptions(c *cli.Context) (backfillOptions, error) {
	o := backfillOptions{Topics: c.StringSlice(flagTopic), BackfillOptions: index.BackfillOptions{
		Key: indexKeyOf(c), Apply: c.Bool(flagApply), Workers: c.Int(flagWorkers), Rate: c.Float64(flagRate),
		Verify: c.Bool(flagVerify), Force: c.Bool(flagForce), BatchTopics: c.Int(flagBatch),
		BatchLedgers: c.Int(flagBatchLedgers), Backup: c.String(flagBackup)}}
	if o.Workers < 1 || o.BatchTopics < 1 || o.BatchLedgers < 1 || o.Rate < 0 {
		return o, report.BadInputf("--workers, --batch and --batch-ledgers must be at least 1 and --rate not negative")
	}
	if o.Key == "" {
		return o, report.BadInputf("--index-key must not be empty")
	}
	if c.IsSet(flagShard) {
		var err error
		if o.Shard, err = index.ParseShard(c.String(flagShard)); err != nil {
			return o, report.BadInput(err)
		}
	}
	return o, newBackupFile(c, o.Backup, o.Apply)
}

func (e *env) indexBackfill(c *cli.Context) error {
	bo, err := parseBackfillOptions(c)
	if err != nil {
		return err
	}
	dd, err := e.openForWriting(c, bo.Apply)
	if err != nil {
		return err
	}
	defer dd.Close()
	paths, err := managedLedgerPaths(c.Context, dd, bo.Topics)
	if err != nil {
		return err
	}
	var plan []index.PlannedLedger
	var planned int
	opts := bo.BackfillOptions
	opts.Paths, opts.Progress, opts.Args = paths, e.progress(c), commandLine(c)
	opts.OnPlanned = func(p index.PlannedLedger) {
		planned++
		if planned <= planRowLimit {
			plan = append(plan, p)
		}
	}
	res, runErr := index.Backfill(c.Context, dd, opts)
	if res == nil {
		return backfillError(c.Context, runErr)
	}
	doc := backfillDocument(res, opts, plan, planned)
	if runErr != nil {
		if err := e.print(c, doc); err != nil {
			return err
		}
		return backfillError(c.Context, runErr)
	}
	return e.printFindings(c, doc)
}

// backfillError keeps the documented exit codes: an interrupted run exits 3 and
// says how to resume. Only the command's own context interrupts it: a store's
// request that timed out (context.DeadlineExceeded inside err) is a store failure,
// named by its own message.
func backfillError(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return report.CannotOpen(fmt.Errorf("interrupted; batches already written stay written, run the same command again to resume: %w", err))
	}
	var ee *report.ExitError
	if errors.As(err, &ee) {
		return err
	}
	return report.CannotOpen(err)
}

// backfillSummary is the totals of a back-fill.
type backfillSummary struct {
	Topics  int64 `json:"topics" table:"TOPICS"`
	Ledgers int64 `json:"ledgers" table:"LEDGERS"`
	Had     int64 `json:"had" table:"HAD"`
	Planned int64 `json:"planned" table:"PLANNED"`
	Written int64 `json:"written" table:"WRITTEN"`
	Skipped int64 `json:"skipped" table:"SKIPPED"`
	Runs    int   `json:"runs" table:"RUNS"`
}

// skipReason is how many ledgers a back-fill skipped for one reason.
type skipReason struct {
	Reason  string `json:"reason" table:"REASON"`
	Ledgers int64  `json:"ledgers" table:"LEDGERS"`
}

func backfillDocument(res *index.BackfillResult, opts index.BackfillOptions, plan []index.PlannedLedger, planned int) *report.Document {
	doc := &report.Document{Findings: res.Findings}
	var skipped int64
	for _, n := range res.Skipped {
		skipped += n
	}
	doc.Add(report.Rows("summary", "Back-fill of "+opts.Key, []backfillSummary{{Topics: res.TopicCount,
		Ledgers: res.Ledgers, Had: res.Had, Planned: res.Planned, Written: res.Written, Skipped: skipped, Runs: len(res.Runs)}}))
	doc.Add(report.Rows("topics", "Topics with work or skips", nonNil(res.Topics)))
	if res.TopicsNotListed > 0 {
		shown := fmt.Sprintf("the topics table lists the first %d of %d topics with work or skips", len(res.Topics), int64(len(res.Topics))+res.TopicsNotListed)
		if len(res.Runs) > 0 {
			shown += "; each batch run lists its writes: ledgermedic journal show RUN"
		}
		doc.Note("%s", shown)
	}
	for _, kind := range slices.Sorted(maps.Keys(res.FindingsNotListed)) {
		doc.Note("%d more %s finding(s) not listed (the first %d are)", res.FindingsNotListed[kind], kind, countKind(res.Findings, kind))
	}

	reasons := []skipReason{}
	for _, r := range res.SkippedReasons() {
		reasons = append(reasons, skipReason{r, res.Skipped[r]})
	}
	doc.Add(report.Rows("skipped", "Ledgers skipped, by reason", reasons))
	if !opts.Apply {
		doc.Add(report.Rows("plan", "Planned writes", plan))
		if planned > planRowLimit {
			doc.Note("the plan lists the first %d of %d writes", planRowLimit, planned)
		}
		doc.Note("dry run: nothing was written; add --apply to write %d ledger value(s)", res.Planned)
	}
	if n := int64(countKind(res.Findings, index.KindOpenLedger)) + res.FindingsNotListed[index.KindOpenLedger]; n > 0 {
		doc.Note("warning: %d open last ledger(s) got a value; a broker rebuilds the open ledger's LedgerInfo when it opens the topic, so re-run after it rolls over", n)
	}
	if res.TopicsComplete > 0 {
		doc.Note("%d topic(s) needed nothing", res.TopicsComplete)
	}
	for _, r := range res.Recovered {
		doc.Note("rolled back unfinished run %s (%s) from the journal before planning: %s", r.RunID, r.Command, r.State)
	}
	if len(res.Runs) > 0 {
		doc.Note("wrote %d batch run(s), %s .. %s; undo one with: ledgermedic journal undo --apply RUN",
			len(res.Runs), res.Runs[0], res.Runs[len(res.Runs)-1])
	}
	if res.Interrupted {
		doc.Note("interrupted: run the same command again to resume")
	}
	doc.Extra = map[string]any{"runs": nonNil(res.Runs), "interrupted": res.Interrupted, "dry_run": !opts.Apply,
		"topics_not_listed": res.TopicsNotListed, "findings_not_listed": res.FindingsNotListed}
	return doc
}

func countKind(fs []report.Finding, kind string) int {
	n := 0
	for _, f := range fs {
		if f.Kind == kind {
			n++
		}
	}
	return n
}

// nonNil is s, or an empty slice for nil: JSON prints [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// managedLedgerPaths turns --topic values into managed-ledger nodes; a partitioned
// topic stands for all its partitions. No topics: nil (every managed ledger).
func managedLedgerPaths(ctx context.Context, dd *datadir.DataDir, topics []string) ([]string, error) {
	var out []string
	for _, s := range topics {
		t, err := topicArg(s)
		if err != nil {
			return nil, err
		}
		if t.Domain != formats.DomainPersistent {
			return nil, report.BadInputf("topic %s: only persistent topics have managed ledgers", t)
		}
		mls, err := cluster.TopicManagedLedgers(ctx, dd.Metadata, t)
		switch {
		case errors.Is(err, cluster.ErrNoSuchTopic):
			return nil, report.BadInputf("topic %s: no managed ledger at %s", t, t.ManagedLedgerPath())
		case err != nil:
			return nil, report.CannotOpen(err)
		}
		// A damaged node is kept: back-fill reports it and skips that topic, as in a full run.
		for _, ml := range mls {
			out = append(out, ml.Node.Path)
		}
	}
	return out, nil
}

func (e *env) indexFindCommand() *cli.Command {
	return &cli.Command{
		Name:  "find",
		Usage: "find the entry holding a broker offset (or the first entry at or after a time), offline",
		Description: "By offset: the first entry whose last offset is >= N (as KoP and PIP-415 do). With\n" +
			"firstEntryIndex on the ledgers the ledger is chosen from metadata and only that ledger's\n" +
			"entries are read; where some ledgers lack it, the legacy search covers just that span.\n" +
			"By time: ledgers are chosen by close time, then entries by broker timestamp (else publish time).\n" +
			"A partitioned topic has one managed ledger per partition: name the partition\n" +
			"(persistent://t/ns/topic-partition-0).\n\n" +
			"Ledgers whose entries are gone (lost) are searched around: offsets in intact ledgers are found;\n" +
			"one inside a lost ledger is answered \"in lost ledger\".\n\n" +
			"Exit 0 when an entry was found; 1 when the target is past the end, in an offloaded or a lost ledger.\n\n" +
			exitCodesHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagTopic, Required: true, Usage: "topic (a partition, for partitioned topics)"},
			&cli.Int64Flag{Name: flagOffset, Value: -1, Usage: "broker offset (BrokerEntryMetadata index) to find"},
			&cli.StringFlag{Name: flagTime, Usage: "time to find: " + timeSyntax},
			indexKeyFlag(),
			&cli.BoolFlag{Name: flagLegacy, Usage: "ignore firstEntryIndex: search every ledger's entries like upstream"},
			&cli.BoolFlag{Name: flagCompare, Usage: "run the indexed and the legacy search and print both costs"},
		},
		Action: e.indexFind,
	}
}

// findOptions are index find's flags.
type findOptions struct {
	Topic    formats.TopicName
	ByOffset bool  // else by time
	Target   int64 // the offset, or the time in epoch ms
	IndexKey string
	Legacy   bool
	Compare  bool
}

func parseFindOptions(c *cli.Context) (findOptions, error) {
	o := findOptions{ByOffset: c.IsSet(flagOffset), IndexKey: indexKeyOf(c), Legacy: c.Bool(flagLegacy),
		Compare: c.Bool(flagCompare)}
	if o.ByOffset == c.IsSet(flagTime) {
		return o, report.BadInputf("give exactly one of --offset and --time")
	}
	var err error
	if o.ByOffset {
		if o.Target = c.Int64(flagOffset); o.Target < 0 {
			return o, report.BadInputf("--offset %d: offsets are not negative", o.Target)
		}
	} else if o.Target, err = timeFlagMillis(c, flagTime); err != nil {
		return o, err
	}
	o.Topic, err = topicArg(c.String(flagTopic))
	return o, err
}

func (e *env) indexFind(c *cli.Context) error {
	fo, err := parseFindOptions(c)
	if err != nil {
		return err
	}
	t, byOffset, target := fo.Topic, fo.ByOffset, fo.Target
	dd, err := e.openReadOnly(c)
	if err != nil {
		return err
	}
	defer dd.Close()
	node, err := dd.Metadata.Get(t.ManagedLedgerPath())
	if errors.Is(err, store.ErrNotFound) {
		return missingTopic(c.Context, dd, t)
	}
	if errors.Is(err, store.ErrTruncatedValue) {
		return findingsError(fmt.Errorf("%s: %w", t, err))
	}
	if err != nil {
		return report.CannotOpen(err)
	}
	info, _, err := formats.DecodeManagedLedgerInfo(node.Value)
	if err != nil {
		// The data dir opened; its node is damaged: a finding, not a failure to open.
		return findingsError(fmt.Errorf("%s: managed-ledger node %s does not decode: %w (inspect it with: %s)",
			t, node.Path, err, commandFor(c, "inspect", "node", node.Path)))
	}
	search := func(legacy bool) (*index.Answer, error) {
		opts := index.FindOptions{Key: fo.IndexKey, Legacy: legacy, Metadata: dd.Metadata}
		if byOffset {
			return index.FindOffset(c.Context, dd.Ledgers, info, target, opts)
		}
		return index.FindTime(c.Context, dd.Ledgers, info, target, opts)
	}
	runs := []bool{fo.Legacy}
	if fo.Compare {
		runs = []bool{false, true}
	}
	var answers []*index.Answer
	for _, legacy := range runs {
		a, err := search(legacy)
		if err != nil {
			return findError(t, byOffset, err)
		}
		if len(runs) > 1 {
			// Compare warm against warm: the first search of a process pays for
			// opening Badger's tables. Keep the faster of two runs.
			again, err := search(legacy)
			if err != nil {
				return findError(t, byOffset, err)
			}
			a.Elapsed = min(a.Elapsed, again.Elapsed)
		}
		answers = append(answers, a)
	}
	doc := findDocument(t, byOffset, target, answers)
	if err := e.print(c, doc); err != nil {
		return err
	}
	if report.Actionable(doc.Findings) || !answers[0].Found {
		return report.ErrFindings
	}
	return nil
}

// findError maps a failed search to its exit code: a topic without a broker
// entry index cannot answer an offset (bad input, exit 2); damaged data at the
// key searched is a finding (exit 1); anything else could not be read (exit 3).
func findError(t formats.TopicName, byOffset bool, err error) error {
	switch {
	case errors.Is(err, index.ErrNoBrokerIndex) && byOffset:
		return report.BadInputf("topic %s is not indexed (%v): its entries carry no broker index, so there are no offsets to find; "+
			"search by publish time with --time instead, or turn on the broker's entry index (AppendIndexMetadataInterceptor) for new data", t, err)
	case errors.Is(err, store.ErrTruncatedValue):
		return findingsError(fmt.Errorf("%s: %w", t, err))
	}
	return report.CannotOpen(fmt.Errorf("%s: %w", t, err))
}

// findingsError ends a command with exit 1 and err's message: the data dir was
// read, and what it holds is damaged.
func findingsError(err error) error {
	return &report.ExitError{Code: report.ExitFindings, Err: err}
}

// missingTopic explains a topic without a managed ledger, naming partitions when
// the topic is partitioned.
func missingTopic(ctx context.Context, dd *datadir.DataDir, t formats.TopicName) error {
	parts, err := cluster.TopicManagedLedgers(ctx, dd.Metadata, t)
	switch {
	case errors.Is(err, cluster.ErrNoSuchTopic):
		parts = nil
	case err != nil:
		return report.CannotOpen(err)
	}
	if len(parts) > 0 && parts[0].Topic != t {
		return report.BadInputf("topic %s is partitioned (%d partitions, each its own managed ledger): give one partition, e.g. --topic %s",
			t, len(parts), t.Partition(0))
	}
	return report.BadInputf("topic %s: no managed ledger at %s", t, t.ManagedLedgerPath())
}

// findRow is one search's answer, as index find prints it.
type findRow struct {
	Method         string      `json:"method" table:"METHOD"`
	ResultText     string      `json:"-" table:"RESULT"`
	Result         string      `json:"result"` // found, offloaded, lost or past-end
	LedgerID       int64       `json:"ledger_id" table:"LEDGER"`
	EntryID        int64       `json:"entry_id" table:"ENTRY"` // -1 in an offloaded or lost ledger
	BaseOffset     *int64      `json:"base_offset,omitempty" table:"BASE OFFSET"`
	LastOffset     *int64      `json:"last_offset,omitempty" table:"LAST OFFSET"`
	PublishTimeMs  *uint64     `json:"publish_time_ms,omitempty" table:"PUBLISH TIME"`
	PublishTime    report.Time `json:"publish_time,omitzero"`
	EntryReads     int         `json:"entry_reads" table:"ENTRY READS"`
	LedgersTouched int         `json:"ledgers_touched" table:"LEDGERS READ"`
	WallTime       string      `json:"-" table:"WALL TIME"`
	ElapsedUs      int64       `json:"elapsed_us"`
}

func findDocument(t formats.TopicName, byOffset bool, target int64, answers []*index.Answer) *report.Document {
	what := fmt.Sprintf("offset %d", target)
	extra := map[string]any{"topic": t.String(), "offset": target}
	if !byOffset {
		what = fmt.Sprintf("time %d (%s)", target, time.UnixMilli(target).UTC().Format(time.RFC3339Nano))
		extra = map[string]any{"topic": t.String(), "time": report.Millis(target), "time_ms": target}
	}
	doc := &report.Document{Extra: extra}
	rows := make([]findRow, len(answers))
	for i, a := range answers {
		r := findRow{Method: a.Method, ResultText: "found", Result: a.Result(), LedgerID: a.Position.LedgerID,
			EntryID: a.Position.EntryID, EntryReads: a.EntryReads, LedgersTouched: a.LedgersTouched,
			WallTime: a.Elapsed.Round(time.Microsecond).String(), ElapsedUs: a.Elapsed.Microseconds()}
		switch {
		case a.Found:
			r.BaseOffset, r.LastOffset, r.PublishTimeMs = report.Ptr(a.Base), report.Ptr(a.Last), report.Ptr(a.PublishTime)
			r.PublishTime = report.Millis(int64(a.PublishTime))
		case a.NotLocal:
			r.ResultText = "in offloaded ledger"
		case a.Lost:
			r.ResultText = "in lost ledger"
		case a.PastEnd:
			r.ResultText = "past the end (next position)"
		}
		rows[i] = r
		for _, n := range a.Notes {
			doc.Note("%s: %s", a.Method, n)
		}
	}
	doc.Add(report.Rows("answers", fmt.Sprintf("%s, %s", t, what), rows))
	if len(answers) == 2 {
		x, y := answers[0], answers[1]
		if !x.Agrees(y) {
			doc.Findings = []report.Finding{{
				Kind: "index-search-disagreement", Severity: report.SeverityError, Location: t.String(),
				Message: fmt.Sprintf("%s search says %s %v, legacy search says %s %v", x.Method, x.Result(), x.Position, y.Result(), y.Position),
				Hint:    "run ledgermedic index backfill --verify on this topic",
			}}
		}
		doc.Note("legacy/%s: %s entry reads, %s wall time (best of 2 runs each)", x.Method,
			ratio(float64(y.EntryReads), float64(x.EntryReads)), ratio(float64(y.Elapsed), float64(x.Elapsed)))
	}
	return doc
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(a/b, 'g', 3, 64) + "x"
}
