package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/report"
	htmlreport "github.com/ledgermedic/ledgermedic/report/html"
	"github.com/ledgermedic/ledgermedic/store"
)

// reportCommand is `report`: the incident report, one self-contained HTML file
// made from the same scans as check, plus the journal.
func (e *env) reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write the incident report: one self-contained HTML page (summary, ledger and schema timelines, journal, findings)",
		Description: "Reads what check reads (never writes the stores) and writes one HTML file with no external\n" +
			"assets: it opens offline. Stores that cannot be opened or read, an empty data dir and topics\n" +
			"without ledgers are stated in the report rather than failing it.\n" +
			"More than 50 topics: the 50 worst are drawn and every topic is listed in a table.\n" +
			"--png DIR also writes each drawn topic's timeline and schema chart as PNG files (listed as written).\n" +
			"Exits 0 when clean, 1 with findings or problems (the report is written either way).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagOut, Aliases: []string{"o"}, Required: true, Usage: "write the report to FILE (.html); - writes the HTML to stdout (and nothing else)"},
			&cli.StringSliceFlag{Name: flagTopic, Usage: "only these topics (repeat; a base name takes every partition)"},
			indexKeyFlag(),
			&cli.BoolFlag{Name: flagSkipMessageScan, Usage: "skip the scan of every stored message (no per-version message counts)"},
			&cli.StringFlag{Name: flagPNG, Usage: "also write each drawn topic's timeline (and schema versions) as PNG files in `DIR`, for chat tools"},
		},
		Action: e.report,
	}
}

// flagPNG is report's --png.
const flagPNG = "png"

// reportOptions are report's flags.
type reportOptions struct {
	Out             string // - for stdout
	PNGDir          string // "" for none
	Topics          []formats.TopicName
	IndexKey        string
	SkipMessageScan bool
}

func parseReportOptions(c *cli.Context) (reportOptions, error) {
	o := reportOptions{Out: c.String(flagOut), PNGDir: c.String(flagPNG), IndexKey: indexKeyOf(c),
		SkipMessageScan: c.Bool(flagSkipMessageScan)}
	if err := checkPNGDir(o.PNGDir); err != nil {
		return o, err
	}
	for _, s := range c.StringSlice(flagTopic) {
		t, err := topicArg(s)
		if err != nil {
			return o, err
		}
		o.Topics = append(o.Topics, t)
	}
	return o, nil
}

func (e *env) report(c *cli.Context) error {
	o, err := parseReportOptions(c)
	if err != nil {
		return err
	}
	out, pngDir := o.Out, o.PNGDir
	opts := inspect.IncidentOptions{Topics: o.Topics, FirstEntryIndexKey: o.IndexKey,
		SkipMessageScan: o.SkipMessageScan, Now: time.Now(), Version: buildVersion()}
	r, err := e.incident(c, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	// The page's hints run as printed, like check's: with -d and the store URLs in
	// use (rewritten in place: the document shares the report's slices).
	runnableDoc(c, &report.Document{Findings: r.Findings, Notes: r.Problems})
	// With --out - stdout carries the page alone: what was written is said on stderr.
	said := e.Stdout
	if out == "-" {
		said = e.Stderr
		if err := htmlreport.Render(c.Context, e.Stdout, r); err != nil {
			return report.CannotOpen(fmt.Errorf("write report to stdout: %w", err))
		}
	} else if err := writeReport(c.Context, out, r); err != nil {
		return report.CannotOpen(err)
	}
	where := out
	if out == "-" {
		where = "the report to stdout"
	}
	// -o json: what was written, as a document (unless stdout carries the page).
	asDoc := e.machineOutput(c) && out != "-"
	written := reportWritten{File: out, Findings: r.FindingTotal(), Topics: r.TopicCount(), JournalRuns: len(r.Runs),
		Problems: r.Problems}
	if !asDoc {
		fmt.Fprintf(said, "wrote %s: %d findings, %d topics, %d journal runs\n", where, written.Findings, written.Topics, len(r.Runs))
	}
	if pngDir != "" {
		files, err := htmlreport.WritePNGs(pngDir, r)
		for _, f := range files {
			written.PNGs = append(written.PNGs, f.Path)
			if !asDoc {
				fmt.Fprintf(said, "wrote %s\n", f.Path)
			}
		}
		if err != nil {
			return report.CannotOpen(err)
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(e.Stderr, "report: %s\n", p)
	}
	if asDoc {
		doc := &report.Document{}
		doc.Add(report.Fields("report", "Report", written))
		if err := e.print(c, doc); err != nil {
			return err
		}
	}
	if r.Counts.Actionable() || len(r.Problems) > 0 {
		return report.ErrFindings
	}
	return nil
}

// incident opens the stores read-only and gathers the report. Stores that do not
// open are a problem stated in the report (bad flags are still bad usage).
func (e *env) incident(c *cli.Context, opts inspect.IncidentOptions) (*htmlreport.Report, error) {
	dd, err := e.openReadOnly(c)
	if errors.Is(err, datadir.ErrNoPulsarMetadata) {
		// Bad input for every other command; the report states it, as it states an empty dir.
		fmt.Fprintf(e.Stderr, "ledgermedic: %v\n", err)
		r, _ := inspect.Incident(c.Context, nil, opts, nil)
		r.DataDir = c.String(flagDataDir)
		r.Problems = append(r.Problems, err.Error())
		return r, nil
	}
	if err != nil {
		if report.CodeOf(err, report.ExitCannotOpen) == report.ExitBadInput {
			return nil, err
		}
		r, _ := inspect.Incident(c.Context, nil, opts, nil)
		r.DataDir = c.String(flagDataDir)
		r.Problems = append(r.Problems, "the stores could not be opened: "+openProblem(err))
		return r, nil
	}
	defer dd.Close()
	if dd.Path != "" {
		opts.JournalDir = mutate.JournalDir(dd.Path)
	}
	r, err := inspect.Incident(c.Context, dd, opts, e.progress(c))
	if err != nil {
		return nil, report.CannotOpen(err)
	}
	return r, nil
}

// openProblem says in words why a data dir did not open.
func openProblem(err error) string {
	if errors.Is(err, store.ErrNotDataDir) || errors.Is(err, os.ErrNotExist) {
		return err.Error() + " (an empty or wrong directory?)"
	}
	return err.Error()
}

// writeReport writes the page to a temp file beside out and renames it, so a
// failed run never leaves half a report.
func writeReport(ctx context.Context, out string, r *htmlreport.Report) error {
	f, err := os.CreateTemp(filepath.Dir(out), ".report-*.html")
	if err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := htmlreport.Render(ctx, f, r); err != nil {
		f.Close()
		return fmt.Errorf("write report %s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	return nil
}

// checkPNGDir refuses a --png that is not a directory before anything is
// scanned; a missing one is created when the charts are written.
func checkPNGDir(dir string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return report.BadInputf("--png %s: %v", dir, err)
	case !st.IsDir():
		return report.BadInputf("--png %s: not a directory", dir)
	}
	return nil
}

// buildVersion is the module version and VCS revision the binary was built from.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			if s.Value == "true" {
				v += "+dirty"
			}
		}
	}
	return v
}

// reportWritten is what `report` wrote (its -o json document).
type reportWritten struct {
	File        string   `json:"file" table:"file"`
	Findings    int64    `json:"findings" table:"findings"`
	Topics      int64    `json:"topics" table:"topics"`
	JournalRuns int      `json:"journal_runs" table:"journal runs"`
	PNGs        []string `json:"pngs,omitempty" table:"pngs"`
	Problems    []string `json:"problems,omitempty"`
}
