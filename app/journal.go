package app

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/report"
)

// journalCommand lists, shows and undoes the runs recorded in the data dir's journal.
func (e *env) journalCommand() *cli.Command {
	return &cli.Command{
		Name:  "journal",
		Usage: "list, show and undo the writes ledgermedic made (the journal in <data-dir>/journal)",
		Subcommands: []*cli.Command{
			{
				Name:   "list",
				Usage:  "one line per run, oldest first",
				Action: e.journalList,
			},
			{
				Name:      "show",
				Usage:     "every item of one run: node, before/after sizes, status (RUN: an id, a unique prefix of one, or last)",
				ArgsUsage: "RUN",
				Action:    e.journalShow,
			},
			{
				Name:      "undo",
				Usage:     "restore the before-images of a run and remove the ledgers it created (dry run unless --apply)",
				ArgsUsage: "RUN (an id, a unique prefix of one, or last)",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "apply", Usage: "really undo (otherwise print what would be restored)"},
					&cli.BoolFlag{Name: "command", Usage: "undo every run the command that wrote RUN made (a back-fill writes one run per batch), newest first"},
					&cli.StringFlag{Name: "backup", Usage: "write a Badger backup of the metadata store to FILE first"},
				},
				Action: e.journalUndo,
			},
			{
				Name: "push",
				Usage: "replay a committed run of this data dir (a working copy) onto the live store --metadata names " +
					"(dry run unless --apply); refused when any node it changes differs from what the run saw",
				ArgsUsage: "RUN",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "apply", Usage: "really push (otherwise print the plan)"},
				},
				Action: e.journalPush,
			},
		},
	}
}

func (e *env) journalList(c *cli.Context) error {
	p, err := dataDirPath(c)
	if err != nil {
		return err
	}
	runs, err := mutate.List(mutate.JournalDir(p))
	if err != nil {
		return report.CannotOpen(err)
	}
	t := report.NewTable("runs", "Journal", "RUN", "run", "COMMAND", "command", "CREATED", "created",
		"EPOCH", "epoch", "STATE", "state", "ITEMS", "items", "VERIFIED", "verified", "UNDO OF", "undo_of",
		"UNDONE BY", "undone_by", "FLAGS", "flags", "ERROR", "error")
	for _, r := range runs {
		t.Add(r.RunID, r.Command, r.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), r.Epoch, string(r.State),
			r.Items, r.Verified, r.UndoOf, r.UndoneBy, flagString(r.Flags), r.Error)
	}
	doc := &report.Document{}
	doc.Add(t)
	return e.print(c, doc)
}

func (e *env) journalShow(c *cli.Context) error {
	p, err := dataDirPath(c)
	if err != nil {
		return err
	}
	arg, err := oneArg(c, "RUN")
	if err != nil {
		return err
	}
	runID, err := resolveRun(p, arg)
	if err != nil {
		return err
	}
	rec, err := mutate.Show(mutate.JournalDir(p), runID)
	if err != nil {
		return journalError(err)
	}
	run := report.NewTable("run", "Run", "FIELD", "field", "VALUE", "value")
	run.Add("run", rec.RunID)
	run.Add("command", recordedCommand(rec.Command, rec.Args))
	run.Add("tool version", rec.ToolVersion)
	run.Add("invocation", rec.Invocation)
	run.Add("created", rec.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"))
	run.Add("epoch", rec.Epoch)
	run.Add("state", string(rec.State))
	run.Add("verified", rec.Verified)
	run.Add("flags", flagString(rec.Flags))
	run.Add("backup", rec.Backup)
	run.Add("undo of", rec.UndoOf)
	run.Add("error", rec.Error)
	items := report.NewTable("items", "Items", "#", "index", "KIND", "kind", "PATH", "path", "LEDGER", "ledger_id",
		"EXPECT VERSION", "expect_version", "BEFORE BYTES", "before_bytes", "AFTER BYTES", "after_bytes",
		"STATUS", "status", "DESCRIPTION", "description", "REASON", "reason")
	for i, it := range rec.Items {
		items.Add(i, string(it.Kind), it.Path, ledgerCell(it.LedgerID), it.Expect, len(it.Before), len(it.After),
			string(it.Status), it.Description, it.Reason)
	}
	doc := &report.Document{}
	doc.Add(run, items)
	for _, n := range rec.Notes {
		doc.Note("%s", n)
	}
	for _, m := range rec.Mismatches {
		doc.Note("verify mismatch: %s", m)
	}
	return e.print(c, doc)
}

func (e *env) journalUndo(c *cli.Context) error {
	arg, err := oneArg(c, "RUN")
	if err != nil {
		return err
	}
	if b := c.String("backup"); b != "" {
		if _, err := os.Stat(b); err == nil {
			return report.BadInputf("--backup %s already exists; name a new file", b)
		}
	}
	p, err := dataDirPath(c)
	if err != nil {
		return err
	}
	runID, err := resolveRun(p, arg)
	if err != nil {
		return err
	}
	if c.Bool("command") {
		return e.undoInvocation(c, p, runID)
	}
	if !c.Bool("apply") {
		rec, err := mutate.Show(mutate.JournalDir(p), runID)
		if err != nil {
			return journalError(err)
		}
		if rec.State != mutate.StateCommitted {
			return report.BadInputf("run %s is %s, only committed runs can be undone", runID, rec.State)
		}
		t := report.NewTable("plan", "Undo plan (dry run: nothing written)", "KIND", "kind", "PATH", "path",
			"LEDGER", "ledger_id", "ACTION", "action")
		for _, it := range rec.Items {
			t.Add(string(it.Kind), it.Path, ledgerCell(it.LedgerID), undoAction(it.Item))
		}
		doc := &report.Document{}
		doc.Add(t)
		doc.Note("dry run: nothing was written; add --apply to undo run %s", runID)
		return e.print(c, doc)
	}
	dd, err := e.openWritable(c)
	if err != nil {
		return err
	}
	defer dd.Close()
	eng, err := mutate.New(dd)
	if err != nil {
		return report.CannotOpen(err)
	}
	res, err := eng.Undo(c.Context, runID, mutate.ApplyOptions{Backup: c.String("backup")})
	if res != nil {
		doc := &report.Document{}
		doc.Add(ResultTable(res))
		doc.Note("undo run %s: %s", res.RunID, res.State)
		if perr := e.print(c, doc); perr != nil {
			return perr
		}
	}
	if err != nil {
		return journalError(err)
	}
	return nil
}

// undoAction says in words what undo does to one item.
func undoAction(it mutate.Item) string {
	switch it.Kind {
	case mutate.KindLedger:
		return fmt.Sprintf("remove the %d entries of ledger %d", len(it.Entries), it.LedgerID)
	case mutate.KindCreate:
		return "delete the node the run created"
	case mutate.KindDelete:
		return fmt.Sprintf("re-create the node (%d bytes)", len(it.Before))
	default:
		return fmt.Sprintf("restore the before-image (%d bytes)", len(it.Before))
	}
}

// ResultTable is the per-item outcome of an apply or undo; every writing command prints it.
func ResultTable(res *mutate.Result) *report.Table {
	t := report.NewTable("result", fmt.Sprintf("Run %s: %s (verified: %v)", res.RunID, res.State, res.Verified),
		"#", "index", "KIND", "kind", "PATH", "path", "LEDGER", "ledger_id", "STATUS", "status",
		"DESCRIPTION", "description", "REASON", "reason")
	for _, it := range res.Items {
		t.Add(it.Index, string(it.Kind), it.Path, ledgerCell(it.LedgerID), string(it.Status), it.Description, it.Reason)
	}
	return t
}

// journalError maps engine errors to exit codes.
func journalError(err error) error {
	switch {
	case errors.Is(err, mutate.ErrRunNotFound), errors.Is(err, mutate.ErrAlreadyUndone),
		errors.Is(err, mutate.ErrNotCommitted), errors.Is(err, mutate.ErrInvalidPlan),
		errors.Is(err, mutate.ErrOtherStore):
		return report.BadInput(err)
	default:
		return report.CannotOpen(err)
	}
}

func ledgerCell(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func flagString(flags map[string]string) string {
	if len(flags) == 0 {
		return ""
	}
	keys := make([]string, 0, len(flags))
	for k := range flags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + flags[k]
	}
	return strings.Join(parts, ",")
}

// oneArg returns the single positional argument a command takes.
func oneArg(c *cli.Context, name string) (string, error) {
	if c.NArg() != 1 {
		return "", report.BadInputf("%s: expected one argument %s, got %d", c.Command.FullName(), name, c.NArg())
	}
	return c.Args().First(), nil
}

// recordedCommand is the command line a run recorded, once: Args start with the
// command path itself when they are recorded.
func recordedCommand(command string, args []string) string {
	if len(args) == 0 {
		return command
	}
	line := strings.Join(args, " ")
	if strings.HasPrefix(line, command) {
		return line
	}
	return command + " " + line
}

// resolveRun turns what the user typed into a run id: an id, "last" (the newest
// run), or a prefix only one run id starts with.
func resolveRun(dataDir, arg string) (string, error) {
	runs, err := mutate.List(mutate.JournalDir(dataDir))
	if err != nil {
		return "", report.CannotOpen(err)
	}
	if arg == "last" {
		if len(runs) == 0 {
			return "", report.BadInputf("run last: the journal of %s holds no run", dataDir)
		}
		last := runs[0]
		for _, r := range runs[1:] {
			if r.CreatedAt.After(last.CreatedAt) || r.CreatedAt.Equal(last.CreatedAt) && r.RunID > last.RunID {
				last = r
			}
		}
		return last.RunID, nil
	}
	var matches []string
	for _, r := range runs {
		if r.RunID == arg {
			return arg, nil
		}
		if arg != "" && strings.HasPrefix(r.RunID, arg) {
			matches = append(matches, r.RunID)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", report.BadInputf("run %q: no run in the journal of %s has this id or starts with it (see: %s)",
			arg, dataDir, commandFor(nil, "-d", dataDir, "journal", "list"))
	}
	if len(matches) > 5 {
		matches = append(matches[:5], "...")
	}
	return "", report.BadInputf("run %q: ambiguous prefix, %s; type more of the id", arg, strings.Join(matches, ", "))
}

// undoInvocation undoes every committed, not yet undone run of the command
// invocation that wrote runID, newest first (dry run unless --apply).
func (e *env) undoInvocation(c *cli.Context, dataDir, runID string) error {
	runs, err := mutate.List(mutate.JournalDir(dataDir))
	if err != nil {
		return report.CannotOpen(err)
	}
	var inv string
	for _, r := range runs {
		if r.RunID == runID {
			inv = r.Invocation
		}
	}
	if inv == "" {
		return report.BadInputf("run %s records no command invocation (written by an older ledgermedic): undo it alone, without --command", runID)
	}
	var todo []mutate.RunSummary
	for _, r := range runs {
		if r.Invocation == inv && r.State == mutate.StateCommitted && r.UndoneBy == "" && r.UndoOf == "" {
			todo = append(todo, r)
		}
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].RunID > todo[j].RunID })
	t := report.NewTable("runs", fmt.Sprintf("Runs of invocation %s, newest first", inv), "RUN", "run",
		"COMMAND", "command", "ITEMS", "items", "RESULT", "result")
	doc := &report.Document{}
	doc.Add(t)
	if !c.Bool("apply") {
		for _, r := range todo {
			t.Add(r.RunID, recordedCommand(r.Command, r.Args), r.Items, "would be undone")
		}
		doc.Note("dry run: nothing was written; add --apply to undo these %d run(s)", len(todo))
		return e.print(c, doc)
	}
	dd, err := e.openWritable(c)
	if err != nil {
		return err
	}
	defer dd.Close()
	eng, err := mutate.New(dd)
	if err != nil {
		return report.CannotOpen(err)
	}
	var firstErr error
	for i, r := range todo {
		opts := mutate.ApplyOptions{}
		if i == 0 {
			opts.Backup = c.String("backup")
		}
		res, err := eng.Undo(c.Context, r.RunID, opts)
		result := "undone"
		if res != nil {
			result = fmt.Sprintf("undone by %s: %s", res.RunID, res.State)
		}
		if err != nil {
			result = "not undone: " + err.Error()
			firstErr = err
		}
		t.Add(r.RunID, recordedCommand(r.Command, r.Args), r.Items, result)
		if err != nil {
			break // later (older) runs stay: undoing them under a failed newer one would not restore a state that existed
		}
	}
	if perr := e.print(c, doc); perr != nil {
		return perr
	}
	if firstErr != nil {
		return journalError(firstErr)
	}
	return nil
}
