package app

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
)

// openReadOnly opens the stores for inspection and tells the user anything
// they must know about how they were opened (for example, a sandbox copy). The
// metadata must be a Pulsar cluster's (store.Options.Pulsar): a wrong chroot is bad input.
func (e *env) openReadOnly(c *cli.Context) (*datadir.DataDir, error) {
	return e.openStores(c, true, true)
}

// openWritable opens the stores for a command that may write (Pulsar's metadata, as openReadOnly).
func (e *env) openWritable(c *cli.Context) (*datadir.DataDir, error) {
	return e.openStores(c, false, true)
}

// openAnyReadOnly and openAnyWritable open the stores for a command that names
// nodes by path or entries by ledger id and reads no Pulsar layout (inspect node,
// inspect entries --ledger, journal undo), so any metadata store will do.
func (e *env) openAnyReadOnly(c *cli.Context) (*datadir.DataDir, error) {
	return e.openStores(c, true, false)
}

func (e *env) openAnyWritable(c *cli.Context) (*datadir.DataDir, error) {
	return e.openStores(c, false, false)
}

// openForWriting opens the stores for a writing command: writable with --apply,
// else for its dry run (openDryRun).
func (e *env) openForWriting(c *cli.Context, apply bool) (*datadir.DataDir, error) {
	if apply {
		return e.openWritable(c)
	}
	return e.openDryRun(c)
}

// openDryRun opens the stores read-only for a writing command's dry run, after
// the refusals --apply meets before it plans (checkWritable: stores of another
// program, the past), so that a dry run never promises what --apply refuses.
func (e *env) openDryRun(c *cli.Context) (*datadir.DataDir, error) {
	return e.openDryRunOf(c, true)
}

// openAnyDryRun is openDryRun for the commands that read any root (journal undo),
// as openAnyWritable is for their --apply.
func (e *env) openAnyDryRun(c *cli.Context) (*datadir.DataDir, error) {
	return e.openDryRunOf(c, false)
}

func (e *env) openDryRunOf(c *cli.Context, pulsar bool) (*datadir.DataDir, error) {
	opts, err := storeOptions(c, true)
	if err != nil {
		return nil, err
	}
	if err := checkWritable(opts); err != nil {
		return nil, err
	}
	return e.openStores(c, true, pulsar)
}

// print renders a document in the format the user asked for. Suggested
// commands in it are made runnable for the stores in use first.
func (e *env) print(c *cli.Context, doc *report.Document) error { return e.printFitted(c, doc, 0) }

// printFitted is print with tables fitted to piped columns when stdout is no
// terminal and $COLUMNS is unset (0: no limit then).
func (e *env) printFitted(c *cli.Context, doc *report.Document, piped int) error {
	o, err := e.outputOptions(c)
	if err != nil {
		return err
	}
	if o.Width == 0 {
		o.Width = piped
	}
	if len(e.storeNotes) > 0 && (o.Format == report.FormatJSON || o.Format == report.FormatJSONL) {
		if doc.Extra == nil {
			doc.Extra = map[string]any{}
		}
		doc.Extra["store_notes"] = e.storeNotes // a view that stopped short must not read as whole
	}
	if globalBool(c, "quiet") && (o.Format == report.FormatTable || o.Format == report.FormatWide) {
		// Nothing is printed, but a table read as it prints must still be read:
		// a store that fails half way is exit 3, not a quiet 0.
		return printErr(report.PrintWith(io.Discard, &report.Document{Tables: report.StreamedTables(doc.Tables)}, report.Options{Format: report.FormatJSONL}))
	}
	runnableDoc(c, doc)
	return printErr(report.PrintWith(e.Stdout, doc, o))
}

// printErr is the error of a print: the stores' or spill's error when what
// the document read as it printed failed (a store that went away, Ctrl-C),
// else the output's (exit 3).
func printErr(err error) error {
	var se *report.SourceError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return se.Err
	}
	return report.CannotOpen(fmt.Errorf("write output: %w", err))
}

// outputOptions reads -o (and --json, its alias) and the terminal width.
func (e *env) outputOptions(c *cli.Context) (report.Options, error) {
	f, err := report.ParseFormat(globalString(c, "output"))
	if err != nil {
		return report.Options{}, report.BadInputf("-o: %v", err)
	}
	if globalBool(c, "json") {
		f = report.FormatJSON
	}
	return report.Options{Format: f, Width: e.width()}, nil
}

// width is the terminal's width, else $COLUMNS, else 0 (no limit: a file or pipe).
func (e *env) width() int {
	if e.TermWidth > 0 {
		return e.TermWidth
	}
	if n, err := strconv.Atoi(e.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// machineOutput reports whether stdout carries JSON (-o json|jsonl or --json).
func (e *env) machineOutput(c *cli.Context) bool {
	o, err := e.outputOptions(c)
	return err == nil && (o.Format == report.FormatJSON || o.Format == report.FormatJSONL)
}

// progress returns a bar on a TTY stderr (unless JSON or --quiet), nothing otherwise.
func (e *env) progress(c *cli.Context) report.Progress {
	return report.NewProgress(e.Stderr, e.StderrIsTTY && !e.machineOutput(c) && !globalBool(c, "quiet"))
}

// topicArg parses a topic given as persistent://tenant/ns/topic or tenant/ns/topic.
func topicArg(s string) (formats.TopicName, error) {
	t, err := formats.ParseTopic(s)
	if err != nil {
		return formats.TopicName{}, report.BadInputf("topic %q: %v", s, err)
	}
	return t, nil
}

// printFindings prints a document that carries findings and ends the command
// with exit 1 when any of them is an error or a warning.
func (e *env) printFindings(c *cli.Context, doc *report.Document) error {
	if doc.Findings == nil {
		doc.Findings = []report.Finding{}
	}
	return e.printFindingsCounted(c, doc, report.CountFindings(doc.Findings))
}

// printFindingsCounted is printFindings of a document whose findings counts
// counts (a stream of them, read as it prints).
func (e *env) printFindingsCounted(c *cli.Context, doc *report.Document, counts report.Counts) error {
	if err := e.print(c, doc); err != nil {
		return err
	}
	if counts.Actionable() {
		return report.ErrFindings
	}
	return nil
}

// commandLine is the command as the journal records it: the command path and
// every flag the user set, in the order the command declares them.
func commandLine(c *cli.Context) []string {
	var args []string
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != ctx.App.Name {
			args = append([]string{ctx.Command.Name}, args...)
		}
	}
	global := map[string]bool{}
	for _, n := range globalFlagNames() {
		global[n] = true
	}
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if global[name] || !c.IsSet(name) {
			continue
		}
		switch v := c.Value(name).(type) {
		case bool:
			if v {
				args = append(args, "--"+name)
			}
		case cli.StringSlice:
			for _, s := range v.Value() {
				args = append(args, "--"+name, s)
			}
		case []string:
			for _, s := range v {
				args = append(args, "--"+name, s)
			}
		default:
			args = append(args, "--"+name, fmt.Sprint(v))
		}
	}
	return args
}
