package app

import (
	"github.com/urfave/cli/v2"

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
			"the exit code: it exits 0 when nothing (or only info) is found, 1 with findings, shown or not.",
		Flags: []cli.Flag{
			indexKeyFlag(),
			&cli.BoolFlag{Name: flagSkipMessageScan, Usage: "skip the schema-usage count of every stored message " +
				"(versions stored messages need but whose schema ledger is lost); for huge data dirs"},
			&cli.IntFlag{Name: flagWorkers, Usage: "goroutines reading the ledger store (0: one per CPU); the output does not depend on it"},
			&cli.BoolFlag{Name: flagCoverage, Usage: "also print the firstEntryIndex coverage table (one row per managed ledger; -o wide prints it too)"},
			&cli.StringFlag{Name: flagSeverity, Usage: "print only findings this serious or more: error, warning or info (the exit code still counts every finding)"},
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
)

// pipedWidth is what check's tables fit in when stdout is no terminal and
// $COLUMNS is unset (a pipe, a file): a big cluster's findings table is
// hundreds of columns wide otherwise. -o wide prints cells whole.
const pipedWidth = 100

// manyInfo is how many informational findings make check say how to leave
// them out (a big cluster has one per unindexed ledger).
const manyInfo = 50

// checkOptions are check's flags.
type checkOptions struct {
	IndexKey        string
	SkipMessageScan bool
	Workers         int             // 0: one per CPU
	Coverage        bool            // print the coverage table
	Severity        report.Severity // the least serious finding printed
}

func parseCheckOptions(c *cli.Context) (checkOptions, error) {
	o := checkOptions{IndexKey: indexKeyOf(c), SkipMessageScan: c.Bool(flagSkipMessageScan), Workers: c.Int(flagWorkers),
		Coverage: c.Bool(flagCoverage), Severity: report.SeverityInfo}
	if o.Workers < 0 {
		return o, report.BadInputf("--workers %d: want 0 or more", o.Workers)
	}
	if s := c.String(flagSeverity); s != "" {
		sev, err := report.ParseSeverity(s)
		if err != nil {
			return o, report.BadInputf("--severity: %v", err)
		}
		o.Severity = sev
	}
	return o, nil
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
			SchemaUsage: !o.SkipMessageScan, Workers: o.Workers}
		fs, stats, err := inspect.Check(c.Context, dd, opts, e.progress(c))
		if err != nil {
			return err
		}
		code := report.ExitClean
		if report.Actionable(fs) {
			code = report.ExitFindings
		}
		shown := report.AtLeast(fs, o.Severity)
		doc := &report.Document{Findings: shown, Extra: map[string]any{"exit_code": code}, FindingsFirst: true}
		// The summary counts every finding, shown or not: it says what --severity hid.
		doc.Add(report.SummaryTable(fs), stats.Table())
		if hidden := len(fs) - len(shown); hidden > 0 {
			doc.Note("%d less serious findings not shown (--severity %s); the summary counts them", hidden, o.Severity)
		} else if info := len(fs) - len(report.AtLeast(fs, report.SeverityWarning)); info > manyInfo {
			doc.Note("%d of the %d findings are informational: --severity warning leaves them out", info, len(fs))
		}
		of, err := e.outputOptions(c)
		if err != nil {
			return err
		}
		if o.Coverage || of.Format != report.FormatTable {
			doc.Add(stats.CoverageTable())
		}
		if err := e.printFitted(c, doc, pipedWidth); err != nil {
			return err
		}
		if code != report.ExitClean {
			return report.ErrFindings
		}
		return nil
	})
}
