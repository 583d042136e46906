package app

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/report"
)

// checkCommand is `check`: a read-only cross-layer consistency check of the whole
// data dir. Exit 0 when clean (or only informational findings), 1 with findings.
func (e *env) checkCommand() *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "cross-check metadata, ledger nodes and entries; report lost, orphaned and corrupt data",
		Description: "Reads every metadata node and every entry once, never writes. Finding kinds:\n" +
			"  " + joinKinds() + "\n" +
			"Findings print first, worst first, then the summary and what was scanned; the firstEntryIndex\n" +
			"coverage table (informational, one row per managed ledger) only with --coverage or -o wide\n" +
			"(-o json always carries it). --severity hides less serious findings from the output, not from\n" +
			"the exit code: it exits 0 when nothing (or only info) is found, 1 with findings, shown or not.\n" +
			"The summary (counts per kind) prints first, then the findings, worst first, at most --limit of each\n" +
			"kind in a table (default " + fmt.Sprint(defaultLimit) + "; 0: all); -o json lists all unless --limit is given, -o jsonl always all.\n" +
			"A big cluster can be checked by N processes: check --shard I/N -o jsonl each, then merge.",
		Flags: []cli.Flag{
			indexKeyFlag(),
			&cli.BoolFlag{Name: flagSkipMessageScan, Usage: "skip the schema-usage count of every stored message " +
				"(versions stored messages need but whose schema ledger is lost); for huge data dirs"},
			&cli.IntFlag{Name: flagWorkers, Usage: "goroutines reading the ledger store (0: one per CPU); the output does not depend on it"},
			&cli.BoolFlag{Name: flagCoverage, Usage: "also print the firstEntryIndex coverage table (one row per managed ledger; -o wide prints it too)"},
			&cli.StringFlag{Name: flagSeverity, Usage: "print only findings this serious or more: error, warning or info (the exit code still counts every finding)"},
			limitFlag(),
			&cli.StringFlag{Name: flagShard, Usage: "I/N: do shard I of N of the check, for merge (-o jsonl; docs/fleet.md); exits 0 when its part is written"},
			&cli.StringFlag{Name: flagRun, Usage: "with --shard: a name of the run that every shard of it is given; merge refuses shards of other runs"},
			&cli.StringFlag{Name: flagOut, Usage: "write the output to this file (written whole, then renamed into place) instead of stdout"},
		},
		Action: e.check,
	}
}

func joinKinds() string {
	s := ""
	for i, k := range inspect.Kinds() {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}

// check's own flags.
const (
	flagCoverage = "coverage"
	flagSeverity = "severity"
	flagRun      = "run"
)

// pipedWidth is what check's tables fit in when stdout is no terminal and
// $COLUMNS is unset (a pipe, a file): a big cluster's findings table is
// hundreds of columns wide otherwise. -o wide prints cells whole.
const pipedWidth = 100

// manyInfo is how many informational findings make check say how to leave
// them out (a big cluster has one per unindexed ledger).
const manyInfo = 50

// defaultLimit is how many findings of each kind check's table lists: a
// million-topic cluster may have a million of one kind, and the summary counts
// them all.
const defaultLimit = 20

// limitFlag is check's and merge's --limit.
func limitFlag() cli.Flag {
	return &cli.IntFlag{Name: flagLimit, Value: defaultLimit, Usage: "list at most this many findings of each kind " +
		"(0: all); the summary and the exit code count every finding. Tables only, unless given: -o json lists all " +
		"by default, -o jsonl always"}
}

// checkOptions are check's flags.
type checkOptions struct {
	IndexKey        string
	SkipMessageScan bool
	Workers         int             // 0: one per CPU
	Coverage        bool            // print the coverage table
	Severity        report.Severity // the least serious finding printed
	Limit           int             // findings listed per kind; 0: all
	Shard           cluster.Shard   // N 0: the whole check
	Run             string          // the run a shard belongs to
	Out             string          // the output file; "": stdout
}

// parseOutputOptions reads the flags check and merge share: how findings print.
func parseOutputOptions(c *cli.Context, o *checkOptions) error {
	o.Coverage, o.Severity, o.Out = c.Bool(flagCoverage), report.SeverityInfo, c.String(flagOut)
	if s := c.String(flagSeverity); s != "" {
		sev, err := report.ParseSeverity(s)
		if err != nil {
			return report.BadInputf("--severity: %v", err)
		}
		o.Severity = sev
	}
	if o.Limit = c.Int(flagLimit); o.Limit < 0 {
		return report.BadInputf("--%s %d: want 0 (all) or more", flagLimit, o.Limit)
	}
	f, err := report.ParseFormat(globalString(c, "output"))
	if err != nil {
		return report.BadInputf("-o: %v", err)
	}
	if globalBool(c, "json") {
		f = report.FormatJSON
	}
	switch {
	case f == report.FormatJSONL && c.IsSet(flagLimit):
		return report.BadInputf("--%s: -o jsonl lists every finding (the limit is for tables and -o json)", flagLimit)
	case f == report.FormatJSONL, f == report.FormatJSON && !c.IsSet(flagLimit):
		o.Limit = 0
	}
	return nil
}

func parseCheckOptions(c *cli.Context) (checkOptions, error) {
	o := checkOptions{IndexKey: indexKeyOf(c), SkipMessageScan: c.Bool(flagSkipMessageScan), Workers: c.Int(flagWorkers),
		Run: c.String(flagRun)}
	if o.Workers < 0 {
		return o, report.BadInputf("--workers %d: want 0 or more", o.Workers)
	}
	if err := parseOutputOptions(c, &o); err != nil {
		return o, err
	}
	if !c.IsSet(flagShard) {
		if o.Run != "" {
			return o, report.BadInputf("--%s names the run of a sharded check: give --%s too", flagRun, flagShard)
		}
		return o, nil
	}
	sh, err := cluster.ParseShard(c.String(flagShard))
	if err != nil {
		return o, report.BadInputf("--%s: %v", flagShard, err)
	}
	o.Shard = sh
	// A shard's output is its part for merge, whole: merge prints, limits and filters.
	if !isJSONL(c) {
		return o, report.BadInputf("--%s writes the shard's part of the check for merge: give -o jsonl", flagShard)
	}
	for _, f := range []string{flagSeverity, flagCoverage} {
		if c.IsSet(f) {
			return o, report.BadInputf("--%s with --%s: give it to merge, which prints the whole check", f, flagShard)
		}
	}
	return o, nil
}

// isJSONL reports whether -o jsonl was asked for.
func isJSONL(c *cli.Context) bool {
	return globalString(c, "output") == string(report.FormatJSONL) && !globalBool(c, "json")
}

// checkSources are the finding sources of other features that join the core
// check: append them here.
func (e *env) checkSources() []inspect.FindingSource {
	// Bookie dirs: what the replicas of each entry say (none for other ledger stores).
	return []inspect.FindingSource{inspect.ReplicaFindings}
}

// verifiesFully: check is the full examination, so it verifies every table of the
// data dir itself instead of trusting the verification cache the views use
// (store.Options.FullVerify, docs/reliability.md).
func verifiesFully(c *cli.Context) bool { return c.Command != nil && c.Command.Name == "check" }

func (e *env) check(c *cli.Context) error {
	o, err := parseCheckOptions(c)
	if err != nil {
		return err
	}
	return e.withDataDir(c, func(dd *datadir.DataDir) error {
		opts := inspect.CheckOptions{FirstEntryIndexKey: o.IndexKey, Sources: e.checkSources(),
			// Which schema versions stored messages still need: counted in the same pass as the core scan.
			SchemaUsage: !o.SkipMessageScan, Workers: o.Workers, Shard: o.Shard}
		run, err := inspect.RunCheck(c.Context, dd, opts, e.progress(c))
		if err != nil {
			return err
		}
		defer run.Close()
		r := runResult(c.Context, run)
		if o.Shard.N > 0 {
			return e.toOut(o.Out, func(e *env) error { return e.printShard(c, o, r) })
		}
		return e.toOut(o.Out, func(e *env) error { return e.printCheck(c, o, r) })
	})
}

// checkResult is what printCheck prints, a check's or a merge's: the counts,
// and the findings and coverage rows produced as they print (a big cluster's
// are on disk), each in the order the check lists them.
type checkResult struct {
	counts   report.Counts
	stats    *inspect.CheckStats
	findings func(yield func(report.Finding) error) error
	coverage func(yield func(inspect.TopicCoverage) error) error
}

// runResult is the result of a check run.
func runResult(ctx context.Context, run *inspect.CheckRun) checkResult {
	return checkResult{
		counts:   run.Counts(),
		stats:    &run.Stats,
		findings: func(yield func(report.Finding) error) error { return run.Findings(ctx, yield) },
		coverage: func(yield func(inspect.TopicCoverage) error) error { return run.Coverage(ctx, yield) },
	}
}

// allFindings is the stream of every finding of a result.
func (r checkResult) allFindings() report.FindingStream {
	return report.FindingStream{Count: r.counts.Total(), Each: r.findings}
}

// coverageTable is the firstEntryIndex coverage table of a result, its rows
// read as it prints.
func (r checkResult) coverageTable() *report.Table {
	return r.stats.CoverageTableOf(r.coverage)
}

// printCheck prints a whole check's result (check, merge) and returns its
// exit: report.ErrFindings with an error or warning, shown or not.
func (e *env) printCheck(c *cli.Context, o checkOptions, r checkResult) error {
	code := report.ExitClean
	if r.counts.Actionable() {
		code = report.ExitFindings
	}
	total := r.counts.Total()
	shown := r.allFindings().AtLeast(o.Severity, r.counts)
	listed, notListed := shown.FirstOfEachKind(o.Limit, r.counts.AtLeast(o.Severity))
	// The summary and the worst findings first, then what was scanned: the
	// summary counts every finding, shown or not; it says what --severity hid.
	doc := &report.Document{FindingStream: &listed, Extra: map[string]any{"exit_code": code}, FindingsFirst: true, FindingsAfter: 1}
	doc.Add(r.counts.SummaryTable(), r.stats.Table())
	if len(notListed) > 0 {
		doc.Extra["findings_not_listed"] = notListed
		doc.Note("%d findings not listed: at most %d of each kind are (--%s 0 lists all; the summary counts every one)",
			shown.Count-listed.Count, o.Limit, flagLimit)
	}
	if hidden := total - shown.Count; hidden > 0 {
		doc.Note("%d less serious findings not shown (--severity %s); the summary counts them", hidden, o.Severity)
	} else if info := total - r.counts.AtLeast(report.SeverityWarning).Total(); info > manyInfo {
		doc.Note("%d of the %d findings are informational: --severity warning leaves them out", info, total)
	}
	of, err := e.outputOptions(c)
	if err != nil {
		return err
	}
	if o.Coverage || of.Format != report.FormatTable {
		doc.Add(r.coverageTable())
	}
	if err := e.printFitted(c, doc, pipedWidth); err != nil {
		return err
	}
	if code != report.ExitClean {
		return report.ErrFindings
	}
	return nil
}
