package app

import (
	"errors"
	"fmt"
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
				Name: "undo",
				Usage: "restore the before-images of a run and remove the ledgers it created (dry run unless --apply; " +
					"the dry run runs every check --apply runs and exits as it would)",
				ArgsUsage: "RUN (an id, a unique prefix of one, or last)",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: flagApply, Usage: "really undo (otherwise print what would be restored)"},
					&cli.BoolFlag{Name: flagCommand, Usage: "undo every run the command that wrote RUN made (a back-fill writes one run per batch), newest first"},
					&cli.StringFlag{Name: flagBackup, Usage: "write a Badger backup of the data dir's own metadata store to FILE first " +
						"(a live store is copied with import instead)"},
				},
				Action: e.journalUndo,
			},
			{
				Name: "push",
				Usage: "replay a committed run of this data dir (a working copy) onto the live store --metadata names " +
					"(dry run unless --apply); refused when any node it changes differs from what the run saw",
				ArgsUsage: "RUN",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: flagApply, Usage: "really push (otherwise print the plan)"},
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
	rows := make([]journalRun, len(runs))
	for i, r := range runs {
		rows[i] = journalRun{Run: r.RunID, Command: r.Command, Created: report.At(r.CreatedAt), Epoch: r.Epoch,
			State: r.State, Items: r.Items, Verified: r.Verified, UndoOf: r.UndoOf, UndoneBy: r.UndoneBy,
			Flags: report.SortedKVs(r.Flags), Error: r.Error}
	}
	doc := &report.Document{}
	doc.Add(report.Rows("runs", "Journal", rows))
	return e.print(c, doc)
}

// journalRun is one run of `journal list`.
type journalRun struct {
	Run      string          `json:"run" table:"RUN"`
	Command  string          `json:"command" table:"COMMAND"`
	Created  report.Time     `json:"created" table:"CREATED"`
	Epoch    uint64          `json:"epoch" table:"EPOCH"`
	State    mutate.RunState `json:"state" table:"STATE"`
	Items    int             `json:"items" table:"ITEMS"`
	Verified bool            `json:"verified" table:"VERIFIED"`
	UndoOf   string          `json:"undo_of,omitempty" table:"UNDO OF"`
	UndoneBy string          `json:"undone_by,omitempty" table:"UNDONE BY"`
	Flags    report.KVs      `json:"flags,omitempty" table:"FLAGS"`
	Error    string          `json:"error,omitempty" table:"ERROR"`
}

// journalRunDetail is the run of `journal show`.
type journalRunDetail struct {
	Run         string          `json:"run" table:"run"`
	Command     string          `json:"command" table:"command"`
	ToolVersion string          `json:"tool_version,omitempty" table:"tool version"`
	Invocation  string          `json:"invocation,omitempty" table:"invocation"`
	Created     report.Time     `json:"created" table:"created"`
	Epoch       uint64          `json:"epoch" table:"epoch"`
	State       mutate.RunState `json:"state" table:"state"`
	Verified    bool            `json:"verified" table:"verified"`
	Flags       report.KVs      `json:"flags,omitempty" table:"flags"`
	Backup      string          `json:"backup,omitempty" table:"backup"`
	UndoOf      string          `json:"undo_of,omitempty" table:"undo of"`
	Error       string          `json:"error,omitempty" table:"error"`
	Mismatches  []string        `json:"mismatches,omitempty"`
}

// journalItem is one item of `journal show`.
type journalItem struct {
	Index         int               `json:"index" table:"#"`
	Kind          mutate.ItemKind   `json:"kind" table:"KIND"`
	Path          string            `json:"path,omitempty" table:"PATH"`
	LedgerID      *int64            `json:"ledger_id,omitempty" table:"LEDGER"`
	ExpectVersion uint64            `json:"expect_version" table:"EXPECT VERSION"`
	BeforeBytes   int               `json:"before_bytes" table:"BEFORE BYTES"`
	AfterBytes    int               `json:"after_bytes" table:"AFTER BYTES"`
	Status        mutate.ItemStatus `json:"status" table:"STATUS"`
	Description   string            `json:"description,omitempty" table:"DESCRIPTION"`
	Reason        string            `json:"reason,omitempty" table:"REASON"`
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
	run := report.Fields("run", "Run", journalRunDetail{Run: rec.RunID, Command: recordedCommand(rec.Command, rec.Args),
		ToolVersion: rec.ToolVersion, Invocation: rec.Invocation, Created: report.At(rec.CreatedAt), Epoch: rec.Epoch,
		State: rec.State, Verified: rec.Verified, Flags: report.SortedKVs(rec.Flags), Backup: rec.Backup,
		UndoOf: rec.UndoOf, Error: rec.Error, Mismatches: rec.Mismatches})
	items := make([]journalItem, len(rec.Items))
	for i, it := range rec.Items {
		items[i] = journalItem{Index: i, Kind: it.Kind, Path: it.Path, LedgerID: ledgerRef(it.LedgerID),
			ExpectVersion: it.Expect, BeforeBytes: len(it.Before), AfterBytes: len(it.After), Status: it.Status,
			Description: it.Description, Reason: it.Reason}
	}
	doc := &report.Document{}
	doc.Add(run, report.Rows("items", "Items", items))
	for _, n := range rec.Notes {
		doc.Note("%s", n)
	}
	for _, m := range rec.Mismatches {
		doc.Note("verify mismatch: %s", m)
	}
	return e.print(c, doc)
}

// flagCommand is journal undo's --command.
const flagCommand = "command"

// undoOptions are journal undo's argument and flags.
type undoOptions struct {
	Run     string // as given: an id, a prefix, or last
	Apply   bool
	Command bool   // every run of the invocation
	Backup  string // "" for none
}

func parseUndoOptions(c *cli.Context) (undoOptions, error) {
	arg, err := oneArg(c, "RUN")
	if err != nil {
		return undoOptions{}, err
	}
	o := undoOptions{Run: arg, Apply: c.Bool(flagApply), Command: c.Bool(flagCommand), Backup: c.String(flagBackup)}
	return o, newBackupFile(c, o.Backup, o.Apply)
}

func (e *env) journalUndo(c *cli.Context) error {
	o, err := parseUndoOptions(c)
	if err != nil {
		return err
	}
	p, err := dataDirPath(c)
	if err != nil {
		return err
	}
	resolve := resolveRun
	if o.Command {
		resolve = resolveInvocationRun
	}
	runID, err := resolve(p, o.Run)
	if err != nil {
		return err
	}
	if o.Command {
		return e.undoInvocation(c, o, p, runID)
	}
	if !o.Apply {
		dd, err := e.openAnyDryRun(c)
		if err != nil {
			return err
		}
		defer dd.Close()
		// Every check --apply runs, so that the dry run exits as --apply would.
		checked, err := mutate.CheckUndo(c.Context, dd, runID)
		if err != nil {
			return journalError(err)
		}
		rec := checked[0]
		rows := make([]undoStep, len(rec.Items))
		for i, it := range rec.Items {
			rows[i] = undoStep{Kind: it.Kind, Path: it.Path, LedgerID: ledgerRef(it.LedgerID), Action: undoAction(it.Item)}
		}
		doc := &report.Document{Extra: map[string]any{"dry_run": true}}
		doc.Add(report.Rows("plan", "Undo plan (dry run: nothing written)", rows))
		doc.Note("dry run: nothing was written; add --apply to undo run %s", runID)
		return e.print(c, doc)
	}
	dd, err := e.openAnyWritable(c)
	if err != nil {
		return err
	}
	defer dd.Close()
	eng, err := mutate.New(dd)
	if err != nil {
		return report.CannotOpen(err)
	}
	res, err := eng.Undo(c.Context, runID, mutate.ApplyOptions{Backup: o.Backup})
	if res != nil {
		doc := &report.Document{Extra: map[string]any{"dry_run": false}}
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

// undoStep is one item of an undo dry run.
type undoStep struct {
	Kind     mutate.ItemKind `json:"kind" table:"KIND"`
	Path     string          `json:"path,omitempty" table:"PATH"`
	LedgerID *int64          `json:"ledger_id,omitempty" table:"LEDGER"`
	Action   string          `json:"action" table:"ACTION"`
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
	case mutate.KindDropLedger:
		// The run removed the ledger (an undo of the run that wrote it): undoing it writes the entries back.
		return fmt.Sprintf("write back the %d entries of ledger %d", len(it.Entries), it.LedgerID)
	default:
		return fmt.Sprintf("restore the before-image (%d bytes)", len(it.Before))
	}
}

// ResultTable is the per-item outcome of an apply or undo; every writing command prints it.
func ResultTable(res *mutate.Result) *report.Table {
	rows := make([]resultItem, len(res.Items))
	for i, it := range res.Items {
		rows[i] = resultItem{Index: it.Index, Kind: it.Kind, Path: it.Path, LedgerID: ledgerRef(it.LedgerID),
			Status: it.Status, Description: it.Description, Reason: it.Reason}
	}
	return report.Rows("result", fmt.Sprintf("Run %s: %s (verified: %v)", res.RunID, res.State, res.Verified), rows)
}

// resultItem is the outcome of one item of an apply or undo.
type resultItem struct {
	Index       int               `json:"index" table:"#"`
	Kind        mutate.ItemKind   `json:"kind" table:"KIND"`
	Path        string            `json:"path,omitempty" table:"PATH"`
	LedgerID    *int64            `json:"ledger_id,omitempty" table:"LEDGER"`
	Status      mutate.ItemStatus `json:"status" table:"STATUS"`
	Description string            `json:"description,omitempty" table:"DESCRIPTION"`
	Reason      string            `json:"reason,omitempty" table:"REASON"`
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

// ledgerRef is an item's ledger id, absent (nil) when the item names none (0).
func ledgerRef(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// oneArg returns the single positional argument a command takes.
func oneArg(c *cli.Context, name string) (string, error) {
	if c.NArg() != 1 {
		return "", report.BadInputf("%s: expected one argument %s, got %d", c.Command.FullName(), name, c.NArg())
	}
	return c.Args().First(), nil
}

// recordedCommand is the command line a run recorded (report.CommandLine).
func recordedCommand(command string, args []string) string { return report.CommandLine(command, args) }

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

// resolveInvocationRun is resolveRun for --command, which names an invocation
// by any of its runs: a prefix that several runs start with is no ambiguity when
// they all belong to one invocation (a back-fill's batches share their second).
func resolveInvocationRun(dataDir, arg string) (string, error) {
	id, err := resolveRun(dataDir, arg)
	if err == nil || arg == "" || arg == "last" {
		return id, err
	}
	runs, lerr := mutate.List(mutate.JournalDir(dataDir))
	if lerr != nil {
		return "", report.CannotOpen(lerr)
	}
	var first *mutate.RunSummary
	for i, r := range runs {
		if !strings.HasPrefix(r.RunID, arg) {
			continue
		}
		if r.Invocation == "" || first != nil && r.Invocation != first.Invocation {
			return "", err // runs of several invocations (or of none recorded): ambiguous indeed
		}
		if first == nil {
			first = &runs[i]
		}
	}
	if first == nil {
		return "", err
	}
	return first.RunID, nil
}

// undoInvocation undoes every committed, not yet undone run of the command
// invocation that wrote runID, newest first (dry run unless --apply).
func (e *env) undoInvocation(c *cli.Context, o undoOptions, dataDir, runID string) error {
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
	title := fmt.Sprintf("Runs of invocation %s, newest first", inv)
	var rows []invocationRun
	if !o.Apply {
		return e.checkInvocationUndo(c, title, todo)
	}
	dd, err := e.openAnyWritable(c)
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
			opts.Backup = o.Backup
		}
		res, err := eng.Undo(c.Context, r.RunID, opts)
		row := invocationRun{Run: r.RunID, Command: recordedCommand(r.Command, r.Args), Items: r.Items, Result: "undone"}
		if res != nil {
			row.Result = fmt.Sprintf("undone by %s: %s", res.RunID, res.State)
			row.UndoneBy, row.State = res.RunID, res.State
		}
		if err != nil {
			row.Result, row.Error = "not undone: "+err.Error(), err.Error()
			firstErr = err
		}
		rows = append(rows, row)
		if err != nil {
			break // later (older) runs stay: undoing them under a failed newer one would not restore a state that existed
		}
	}
	doc := &report.Document{Extra: map[string]any{"dry_run": false}}
	doc.Add(report.Rows("runs", title, rows))
	if perr := e.print(c, doc); perr != nil {
		return perr
	}
	if firstErr != nil {
		return journalError(firstErr)
	}
	return nil
}

// checkInvocationUndo is the dry run of undoInvocation: every check --apply runs,
// run by run, newest first; it stops where --apply would stop, and exits as it would.
func (e *env) checkInvocationUndo(c *cli.Context, title string, todo []mutate.RunSummary) error {
	dd, err := e.openAnyDryRun(c)
	if err != nil {
		return err
	}
	defer dd.Close()
	ids := make([]string, len(todo))
	for i, r := range todo {
		ids[i] = r.RunID
	}
	passed, checkErr := mutate.CheckUndo(c.Context, dd, ids...)
	var rows []invocationRun
	for i, r := range todo[:min(len(passed)+1, len(todo))] {
		row := invocationRun{Run: r.RunID, Command: recordedCommand(r.Command, r.Args), Items: r.Items, Result: "would be undone"}
		if i == len(passed) {
			row.Result, row.Error = "would not be undone: "+checkErr.Error(), checkErr.Error()
		}
		rows = append(rows, row)
	}
	doc := &report.Document{Extra: map[string]any{"dry_run": true}}
	doc.Add(report.Rows("runs", title, rows))
	if checkErr != nil {
		doc.Note("dry run: nothing was written; --apply would stop at run %s and leave the older runs", todo[len(passed)].RunID)
	} else {
		doc.Note("dry run: nothing was written; add --apply to undo these %d run(s)", len(todo))
	}
	if err := e.print(c, doc); err != nil {
		return err
	}
	if checkErr != nil {
		return journalError(checkErr)
	}
	return nil
}

// invocationRun is one run of `journal undo --command`.
type invocationRun struct {
	Run      string          `json:"run" table:"RUN"`
	Command  string          `json:"command" table:"COMMAND"`
	Items    int             `json:"items" table:"ITEMS"`
	Result   string          `json:"-" table:"RESULT"`
	UndoneBy string          `json:"undone_by,omitempty"` // the undo run, once undone
	State    mutate.RunState `json:"undo_state,omitempty"`
	Error    string          `json:"error,omitempty"`
}
