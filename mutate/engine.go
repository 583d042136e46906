package mutate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

// Errors of the engine (see also the journal errors).
var (
	// ErrRolledBack: the run failed part-way and was rolled back; the data dir equals
	// the state before the run. It is joined with the cause.
	ErrRolledBack = errors.New("run rolled back")
	// ErrVerifyFailed: re-reading what the run wrote did not give the plan's bytes.
	ErrVerifyFailed = errors.New("verification failed")
	// ErrNotCommitted: only committed runs can be undone.
	ErrNotCommitted = errors.New("run is not committed")
	// ErrAlreadyUndone: a committed undo of the run exists.
	ErrAlreadyUndone = errors.New("run already undone")
	// ErrBackupWrite: the metadata backup could not be written; nothing was changed.
	ErrBackupWrite = errors.New("could not write backup")
)

// epochMu serialises epoch bumps of engines in this process; Badger's directory lock
// keeps other processes out of the data dir altogether.
var epochMu sync.Mutex

// Engine runs plans against one writable data dir. Its methods are safe for
// concurrent use; runs are serialised.
type Engine struct {
	dd    *datadir.DataDir
	dir   string
	store string // metadataStoreID of dd

	// Now is the engine's clock (time.Now by default).
	Now func() time.Time
	// Progress, when set, is called after each write step with the number of items
	// applied so far.
	Progress func(done, total int)
	// CrashHook, when set, is called at every crash-safety point of a run: "epoch",
	// "backup", "journaled" (before the first write), "item-I-entry-J" and "item-I"
	// once that entry or item is durably written (the items of one step all follow
	// its commit), "applied", "verified" (before the commit), "committed", and during
	// a rollback "rollback-journaled", "rollback-item-I", "rolled-back". Tests set it
	// to stop the process there (see KillAt); it is nil in normal use.
	CrashHook func(step string)
	// StepBytes bounds the bytes of one write step (0: stepBytes). Tests set it to 1
	// to get one item (ledger entry) per step, a crash point between any two writes.
	StepBytes int
	// OnSync, when set, is called with the file's name before every fsync of the
	// journal (tests count them); nil in normal use.
	OnSync func(path string)

	mu        sync.Mutex
	recovered bool
	held      uint64 // the epoch of this engine's last run (0: none yet)
	// listed is the journal's runs as checkUndoable last listed them, with the
	// undo runs this engine made since (nil: list again). Undoing an invocation's
	// runs (a back-fill's batches: 10k runs for 1M ledgers) then lists the
	// journal once, not once per run. Any other run or recovery drops it. The
	// epoch fences other engines: a run of another that took the journal since
	// makes this engine's next write fail.
	listed []RunSummary
}

// ApplyOptions tune one run.
type ApplyOptions struct {
	// Backup, when set, names a file that receives DataDir.BackupMetadata before
	// anything changes. It must not exist yet.
	Backup string
	// TrustBefore says the plan's node items carry Before and Expect exactly as the
	// caller just read them from this store (back-fill plans from the nodes its walk
	// read). Preflight then does not read those nodes again: a node changed since is
	// refused by the compare-and-set of the write step, which writes nothing of that
	// step, and the run is rolled back (the error wraps store.ErrVersionMismatch).
	// Items without Before are read as usual.
	TrustBefore bool
}

// ItemResult is the outcome of one plan item.
type ItemResult struct {
	Index       int
	Kind        ItemKind
	Path        string
	LedgerID    int64
	Description string
	Status      ItemStatus
	Reason      string
}

// Result is the outcome of a run.
type Result struct {
	RunID      string
	Epoch      uint64
	State      RunState
	Backup     string
	Verified   bool
	Mismatches []string
	Items      []ItemResult
}

// RecoveryReport says what Recover did with one unfinished run.
type RecoveryReport struct {
	RunID     string
	Command   string
	Found     RunState // the state the journal held
	State     RunState // the state after recovery
	Conflicts []string // nodes left as they were because someone else changed them
}

// New returns an engine for a writable data dir and makes sure its journal folder exists.
func New(dd *datadir.DataDir) (*Engine, error) {
	if dd == nil {
		return nil, errors.New("mutation engine: no data dir")
	}
	if dd.ReadOnly {
		return nil, fmt.Errorf("mutation engine on %s: %w", dd.Path, store.ErrReadOnly)
	}
	dir := JournalDir(dd.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create journal %s: %w: %w", dir, ErrJournalWrite, err)
	}
	if err := syncer(nil).syncDir(dd.Path); err != nil {
		return nil, fmt.Errorf("fsync %s: %w: %w", dd.Path, ErrJournalWrite, err)
	}
	return &Engine{dd: dd, dir: dir, Now: time.Now, store: metadataStoreID(dd)}, nil
}

// metadataStoreID names the metadata store a run writes, as journaled in
// RunRecord.MetadataStore: "" for the data dir's own Badger database (wherever the
// dir is moved), else the store's URL.
func metadataStoreID(dd *datadir.DataDir) string {
	if len(dd.Sources) == 0 || dd.Sources[0].Kind == "badger" {
		return ""
	}
	return dd.Sources[0].URL
}

// ErrOtherStore: the run belongs to another metadata store than the one open.
var ErrOtherStore = errors.New("the run was applied to another metadata store")

// checkStore refuses to act on a run applied to another metadata store: its
// before-images describe that store's nodes, not this one's.
func (e *Engine) checkStore(rec *RunRecord, action string) error {
	if rec.MetadataStore == e.store {
		return nil
	}
	where := func(s string) string {
		if s == "" {
			return "the data dir's own metadata store"
		}
		return "--metadata " + s
	}
	return fmt.Errorf("%s run %s: it wrote %s, but this command opened %s; run it again with %s: %w",
		action, rec.RunID, where(rec.MetadataStore), where(e.store), where(rec.MetadataStore), ErrOtherStore)
}

// JournalDir returns the engine's journal folder.
func (e *Engine) JournalDir() string { return e.dir }

func (e *Engine) crashPoint(format string, args ...any) {
	if e.CrashHook != nil {
		e.CrashHook(fmt.Sprintf(format, args...))
	}
}

// stepLimit is the bytes one write step may hold.
func (e *Engine) stepLimit() int {
	if e.StepBytes > 0 {
		return e.StepBytes
	}
	return stepBytes
}

// files writes the journal's files, with the engine's OnSync observer.
func (e *Engine) files() syncer { return syncer(e.OnSync) }

// KillAt returns a CrashHook that kills the current process (SIGKILL on Unix) when
// the run reaches step, for crash tests that run the engine in a subprocess.
func KillAt(step string) func(string) {
	return func(s string) {
		if s != step {
			return
		}
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {} // wait for the signal to land
	}
}

// Recover rolls back every run the journal holds as unfinished (applying or
// rolling back), so the data dir equals the state before those runs. Callers run it
// before planning; Apply and Undo run it themselves once per engine if it was not.
// Recovering when nothing is unfinished writes nothing.
func (e *Engine) Recover(ctx context.Context) ([]RecoveryReport, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.recover(ctx)
}

func (e *Engine) recover(ctx context.Context) ([]RecoveryReport, error) {
	e.listed = nil
	if err := removeTemps(e.dir); err != nil {
		return nil, err
	}
	runs, err := readRuns(e.dir, true)
	if err != nil {
		return nil, err
	}
	var maxEpoch uint64
	var unfinished []*RunRecord
	for _, r := range runs {
		maxEpoch = max(maxEpoch, r.maxEpoch)
		if !r.state.Finished() {
			if err := e.checkStore(r.rec, "recover"); err != nil {
				// Rolling it back here would write this store with another's before-images.
				return nil, fmt.Errorf("an unfinished run must be recovered first: %w", err)
			}
			unfinished = append(unfinished, r.rec)
		}
	}
	cur, err := readEpoch(e.dir)
	if err != nil {
		return nil, err
	}
	if len(unfinished) == 0 {
		if cur < maxEpoch { // the epoch file was lost: never hand out an epoch twice
			if err := e.files().writeEpoch(e.dir, maxEpoch); err != nil {
				return nil, err
			}
		}
		e.recovered = true
		return nil, nil
	}
	holder, err := e.takeEpoch(maxEpoch)
	if err != nil {
		return nil, err
	}
	var reports []RecoveryReport
	var errs []error
	// Newest first: a later run's before-images are an earlier run's after-state.
	for i := len(unfinished) - 1; i >= 0; i-- {
		rec := unfinished[i]
		found := rec.State
		conflicts, err := e.rollbackRun(ctx, rec, holder, "recovered at start")
		reports = append(reports, RecoveryReport{
			RunID: rec.RunID, Command: rec.Command, Found: found, State: rec.State, Conflicts: conflicts,
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("recover run %s: %w", rec.RunID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reports, err
	}
	// The runs just finished go into the heads file now, so that the next start
	// reads nothing again (and a second recovery writes nothing). It is only a
	// cache: its failure is not recovery's.
	_, _ = readRuns(e.dir, true)
	e.recovered = true
	return reports, nil
}

func (e *Engine) recoverOnce(ctx context.Context) error {
	if e.recovered {
		return nil
	}
	_, err := e.recover(ctx)
	return err
}

// Apply runs a plan: preflight (every node still at the version the plan read),
// optional backup, journal, apply, verify, commit. On any failure after the first
// write the run is rolled back and the error wraps ErrRolledBack.
func (e *Engine) Apply(ctx context.Context, plan *Plan, opts ApplyOptions) (*Result, error) {
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.recoverOnce(ctx); err != nil {
		return nil, err
	}
	rec, err := e.newRecord(plan)
	if err != nil {
		return nil, err
	}
	inv := invocationOf(ctx)
	rec.ToolVersion, rec.Invocation = inv.ToolVersion, inv.ID
	return e.run(ctx, rec, opts)
}

// Undo reverts a committed run: it restores every node's before-image (compare-and-set
// against the version the run wrote) and removes the ledgers the run created. A node
// or ledger changed since the run is not overwritten: the undo is refused as a whole,
// naming each one. The undo is itself a journaled run (Command "undo").
func (e *Engine) Undo(ctx context.Context, runID string, opts ApplyOptions) (*Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.recoverOnce(ctx); err != nil {
		return nil, err
	}
	_, rec, err := e.undoRecord(runID)
	if err != nil {
		return nil, err
	}
	who := invocationOf(ctx)
	rec.ToolVersion, rec.Invocation = who.ToolVersion, who.ID
	listed := e.listed
	res, err := e.run(ctx, rec, opts)
	if listed != nil {
		e.listed = append(listed, summaryOf(rec, len(rec.Items), "")) // the undo as it ended
	}
	return res, err
}

// undoRecord makes the record of runID's undo after every check of the journal
// an undo passes before its preflight: the run is committed, was applied to the
// open metadata store, is not undone yet, and its inverse is a valid plan. It
// returns the run itself too.
func (e *Engine) undoRecord(runID string) (orig, rec *RunRecord, err error) {
	orig, err = Show(e.dir, runID)
	if err != nil {
		return nil, nil, err
	}
	if orig.State != StateCommitted {
		return nil, nil, fmt.Errorf("undo run %s: it is %s: %w", runID, orig.State, ErrNotCommitted)
	}
	if err := e.checkStore(orig, "undo"); err != nil {
		return nil, nil, err
	}
	if err := e.checkUndoable(runID); err != nil {
		return nil, nil, err
	}
	inv := inversePlan(orig)
	if err := inv.Validate(); err != nil {
		return nil, nil, fmt.Errorf("undo run %s: %w", runID, err)
	}
	if rec, err = e.newRecord(inv); err != nil {
		return nil, nil, err
	}
	rec.UndoOf = runID
	return orig, rec, nil
}

// CheckUndo runs, writing nothing, every check Undo runs before it writes, for
// each of runIDs in turn (the order they would be undone in): the checks of the
// journal (undoRecord) and the undo's preflight (every node and ledger the run
// wrote still holds what it wrote). dd may be opened read-only: a dry run exits
// as the undo would. A node or ledger that an earlier run of runIDs writes is not
// checked for a later one: that run's undo changes it first, and Undo checks it
// then. It returns the runs that pass, and stops at the first that does not with
// the error Undo would return (a preflight refusal wraps store.ErrVersionMismatch).
// Runs left unfinished by a crash, which Undo rolls back first, are not.
func CheckUndo(ctx context.Context, dd *datadir.DataDir, runIDs ...string) ([]*RunRecord, error) {
	e := &Engine{dd: dd, dir: JournalDir(dd.Path), Now: time.Now, store: metadataStoreID(dd)}
	written := map[string]bool{} // node paths and "ledger N" the runs before this one write
	var passed []*RunRecord
	for _, id := range runIDs {
		orig, rec, err := e.undoRecord(id)
		if err != nil {
			return passed, err
		}
		if _, err := e.preflight(ctx, rec, false); err != nil {
			return passed, fmt.Errorf("undo run %s: %w", id, err)
		}
		var problems []string
		for _, it := range rec.Items {
			if it.Status == StatusFailed && !written[it.writes()] {
				problems = append(problems, it.Reason)
			}
		}
		if len(problems) > 0 {
			return passed, fmt.Errorf("undo run %s would be refused, as --apply would refuse it: %s: %w",
				id, strings.Join(problems, "; "), store.ErrVersionMismatch)
		}
		for _, it := range rec.Items {
			written[it.writes()] = true
		}
		passed = append(passed, orig)
	}
	return passed, nil
}

// checkUndoable refuses to undo a run twice. A run that was undone and then
// re-applied (its undo undone) is reverted by undoing that later run instead: the
// node versions the first run wrote are gone.
func (e *Engine) checkUndoable(runID string) error {
	if e.listed == nil {
		runs, err := List(e.dir) // summaries: the items of every run ever journaled are not read
		if err != nil {
			return err
		}
		e.listed = runs
	}
	undone := undoneBy(e.listed)
	for i := len(e.listed) - 1; i >= 0; i-- {
		r := e.listed[i]
		if r.UndoOf != runID || r.State != StateCommitted {
			continue
		}
		if by := undone[r.RunID]; by != "" {
			return fmt.Errorf("undo run %s: it was undone by run %s and re-applied by run %s; undo run %s instead: %w",
				runID, r.RunID, by, by, ErrAlreadyUndone)
		}
		return fmt.Errorf("undo run %s: undone by run %s: %w", runID, r.RunID, ErrAlreadyUndone)
	}
	return nil
}

// inversePlan turns a committed run into the plan that reverts it, newest item first.
func inversePlan(r *RunRecord) *Plan {
	p := &Plan{Command: "undo", Args: []string{r.RunID}, Notes: []string{"undo of " + r.Command + " run " + r.RunID}}
	for i := len(r.Items) - 1; i >= 0; i-- {
		it := r.Items[i].Item
		inv := Item{Path: it.Path, LedgerID: it.LedgerID, Entries: it.Entries, Description: "undo: " + it.Description}
		switch it.Kind {
		case KindSet:
			inv.Kind, inv.Expect, inv.Before, inv.After = KindSet, r.Items[i].Written, it.After, it.Before
		case KindCreate:
			inv.Kind, inv.Expect, inv.Before = KindDelete, r.Items[i].Written, it.After
		case KindDelete:
			inv.Kind, inv.After = KindCreate, it.Before
		case KindLedger:
			inv.Kind = KindDropLedger
		case KindDropLedger:
			inv.Kind = KindLedger
		case KindBookieLedger:
			// Deleting a ledger is deleting its metadata node (BookKeeper's
			// deleteLedger); the bookies drop the entries at their next GC.
			inv = Item{Kind: KindDelete, Path: it.Path, Expect: r.Items[i].Written, Before: it.After,
				Description: inv.Description}
		}
		p.Items = append(p.Items, inv)
	}
	return p
}

func (e *Engine) newRecord(p *Plan) (*RunRecord, error) {
	now := e.Now()
	id := p.RunID
	if id == "" {
		id = NewRunID(now)
	}
	if _, err := os.Stat(filepath.Join(e.dir, id+recordSuffix)); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: run id %s is already in the journal", ErrInvalidPlan, id)
	}
	created := p.CreatedAt
	if created.IsZero() {
		created = now
	}
	rec := &RunRecord{
		Format: JournalFormat, RunID: id, Command: p.Command, Args: p.Args, Flags: p.Flags,
		Notes: p.Notes, CreatedAt: created.UTC(), Items: make([]JournalItem, len(p.Items)),
		MetadataStore: e.store,
	}
	for i, it := range p.Items {
		rec.Items[i] = JournalItem{Item: it, Status: StatusPending}
	}
	return rec, nil
}

// run takes an epoch and drives a record through preflight, backup, journal, apply,
// verify and commit: the three stages a Series overlaps across runs.
func (e *Engine) run(ctx context.Context, rec *RunRecord, opts ApplyOptions) (*Result, error) {
	e.listed = nil
	if end := e.journalRun(ctx, rec, opts); end != nil {
		return end.res, end.err
	}
	if end := e.writeRun(ctx, rec); end != nil {
		return end.res, end.err
	}
	return e.finishRun(ctx, rec)
}

// runEnd is how a run ended in a stage before its last.
type runEnd struct {
	res *Result
	err error
}

// journalRun takes the run's epoch, checks the plan against the store (preflight),
// writes the backup and journals the run as applying, durably, before anything is
// written. nil: the run is journaled and goes on to writeRun.
func (e *Engine) journalRun(ctx context.Context, rec *RunRecord, opts ApplyOptions) *runEnd {
	if end := e.prepareRun(ctx, rec, opts); end != nil {
		return end
	}
	return e.journalApplying(rec)
}

// journalApplying journals a prepared run as applying, durably. It touches only
// rec and the journal files, so a Series journals two runs at once.
func (e *Engine) journalApplying(rec *RunRecord) *runEnd {
	if err := e.setState(rec, StateApplying, rec.Epoch, ""); err != nil {
		return &runEnd{nil, fmt.Errorf("run %s, nothing was changed: %w", rec.RunID, err)}
	}
	e.crashPoint("journaled")
	return nil
}

// prepareRun is journalRun up to the applying record: epoch, preflight (a
// refused run is journaled as refused here) and backup.
func (e *Engine) prepareRun(ctx context.Context, rec *RunRecord, opts ApplyOptions) *runEnd {
	epoch, err := e.runEpoch()
	if err != nil {
		return &runEnd{nil, err}
	}
	rec.Epoch = epoch
	e.crashPoint("epoch")

	if err := e.checkNodeSizes(rec); err != nil {
		return &runEnd{nil, fmt.Errorf("run %s, nothing was changed: %w", rec.RunID, err)}
	}

	problems, err := e.preflight(ctx, rec, opts.TrustBefore)
	if err != nil {
		return &runEnd{nil, fmt.Errorf("run %s: %w", rec.RunID, err)}
	}
	if len(problems) > 0 {
		rec.Error = strings.Join(problems, "; ")
		refusal := fmt.Errorf("run %s refused, nothing was changed: %s: %w", rec.RunID, rec.Error, store.ErrVersionMismatch)
		if err := e.setState(rec, StateRefused, epoch, ""); err != nil {
			return &runEnd{resultOf(rec), errors.Join(refusal, err)}
		}
		return &runEnd{resultOf(rec), refusal}
	}
	if opts.Backup != "" {
		if err := e.writeBackup(opts.Backup); err != nil {
			// The run is not journaled: naming its id would send the user to a run
			// that journal show cannot find.
			return &runEnd{nil, fmt.Errorf("nothing was changed or journaled: %w", err)}
		}
		rec.Backup = opts.Backup
		e.crashPoint("backup")
	}
	return nil
}

// writeRun applies a journaled run's items; a failure rolls the run back. nil: every
// item is written and the run goes on to finishRun.
func (e *Engine) writeRun(ctx context.Context, rec *RunRecord) *runEnd {
	if err := e.applyItems(ctx, rec); err != nil {
		res, err := e.abort(ctx, rec, err)
		return &runEnd{res, err}
	}
	e.crashPoint("applied")
	return nil
}

// finishRun verifies what a written run wrote and commits it (or rolls it back).
// The commit is an update line appended to the run's record and fsynced
// (appendUpdate): a crash before the fsync can only lose the commit, never tear the
// record: the run then reads as applying and is rolled back, one of the two states
// a run may end in.
func (e *Engine) finishRun(ctx context.Context, rec *RunRecord) (*Result, error) {
	if err := e.checkEpoch(rec.Epoch); err != nil {
		return e.abort(ctx, rec, err)
	}
	mismatches, err := e.verify(ctx, rec)
	if err != nil {
		return e.abort(ctx, rec, err)
	}
	rec.Mismatches = mismatches
	if len(mismatches) > 0 {
		return e.abort(ctx, rec, fmt.Errorf("%w: %s", ErrVerifyFailed, strings.Join(mismatches, "; ")))
	}
	rec.Verified = true
	e.crashPoint("verified")
	if err := e.checkEpoch(rec.Epoch); err != nil {
		return resultOf(rec), fenced(rec, err)
	}
	rec.State = StateCommitted
	rec.History = append(rec.History, StateChange{State: StateCommitted, At: e.Now().UTC(), Epoch: rec.Epoch})
	if err := e.files().appendUpdate(e.dir, rec); err != nil {
		// The journal still says applying: undo now while we can; the next start would too.
		return e.abort(ctx, rec, err)
	}
	e.crashPoint("committed")
	return resultOf(rec), nil
}

func fenced(rec *RunRecord, err error) error {
	return fmt.Errorf("run %s stopped, the next start rolls it back: %w", rec.RunID, err)
}

// abort rolls back a run that failed after its journal record said applying.
func (e *Engine) abort(ctx context.Context, rec *RunRecord, cause error) (*Result, error) {
	if errors.Is(cause, ErrStaleEpoch) {
		return resultOf(rec), fenced(rec, cause) // a newer run holds the journal: touch nothing
	}
	rec.Error = cause.Error()
	conflicts, err := e.rollbackRun(context.WithoutCancel(ctx), rec, rec.Epoch, cause.Error())
	if err != nil {
		return resultOf(rec), fmt.Errorf("run %s failed: %w; rolling back failed too, the next start finishes it: %w", rec.RunID, cause, err)
	}
	if len(conflicts) > 0 {
		return resultOf(rec), fmt.Errorf("run %s failed: %w; rolled back except %s: %w",
			rec.RunID, cause, strings.Join(conflicts, "; "), store.ErrVersionMismatch)
	}
	return resultOf(rec), fmt.Errorf("run %s failed: %w; %w, the data dir is as before the run", rec.RunID, cause, ErrRolledBack)
}

func (e *Engine) setState(rec *RunRecord, s RunState, epoch uint64, note string) error {
	rec.State = s
	rec.History = append(rec.History, StateChange{State: s, At: e.Now().UTC(), Epoch: epoch, Note: note})
	return e.files().writeRecord(e.dir, rec)
}

// takeEpoch moves the journal to a new epoch above both the current one and floor.
// Every caller writes a run record next, which makes the new epoch durable.
func (e *Engine) takeEpoch(floor uint64) (uint64, error) {
	epochMu.Lock()
	defer epochMu.Unlock()
	cur, err := readEpoch(e.dir)
	if err != nil {
		return 0, err
	}
	n := max(cur, floor) + 1
	if err := e.files().writeEpochBeforeRecord(e.dir, n); err != nil {
		return 0, err
	}
	return n, nil
}

// runEpoch is the epoch a run holds: the one this engine's previous run held while
// the journal is still at it, else a new one. Fencing is the same as with an epoch
// per run: the engine's runs are serialised, and any other run or recovery that
// takes the journal moves it past the held epoch, which every step checks. Keeping
// it saves the epoch file's write and fsync on every run after the first.
func (e *Engine) runEpoch() (uint64, error) {
	if e.held != 0 {
		cur, err := readEpoch(e.dir)
		if err != nil {
			return 0, err
		}
		if cur == e.held {
			return cur, nil
		}
	}
	n, err := e.takeEpoch(0)
	if err != nil {
		return 0, err
	}
	e.held = n
	return n, nil
}

// checkEpoch refuses to go on when a newer run took the journal.
func (e *Engine) checkEpoch(held uint64) error {
	cur, err := readEpoch(e.dir)
	if err != nil {
		return err
	}
	if cur != held {
		return fmt.Errorf("holding epoch %d, journal is at %d: %w", held, cur, ErrStaleEpoch)
	}
	return nil
}

// readNodeItems reads the current node of every node item of the run that want
// accepts (nil: every one) from one snapshot, keyed by item index.
// Items whose node known already holds are not read; known's nodes are in the result.
func (e *Engine) readNodeItems(rec *RunRecord, want func(*Item) bool, known map[int]store.Node) (map[int]store.Node, error) {
	current := make(map[int]store.Node, len(rec.Items))
	var nodeItems []int
	for i := range rec.Items {
		if it := &rec.Items[i].Item; it.isNode() && (want == nil || want(it)) {
			if n, ok := known[i]; ok {
				current[i] = n
			} else {
				nodeItems = append(nodeItems, i)
			}
		}
	}
	if len(nodeItems) == 0 {
		return current, nil
	}
	nodes, err := e.getNodes(rec, nodeItems)
	if err != nil {
		return nil, err
	}
	for k, i := range nodeItems {
		current[i] = nodes[k]
	}
	return current, nil
}

// preflight reads the before-image of every item and checks it is what the plan
// expects. It returns one problem per item that no longer matches; it writes nothing.
// Nodes are read from one snapshot. With trust, node items that carry their
// before-image (and creates) are not read: the write step's compare-and-set guards them.
func (e *Engine) preflight(ctx context.Context, rec *RunRecord, trust bool) ([]string, error) {
	check := func(it *Item) bool { return !trust || (it.Kind != KindCreate && it.Before == nil) }
	current, err := e.readNodeItems(rec, check, nil)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	var problems []string
	for i := range rec.Items {
		it := &rec.Items[i]
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var problem string
		var err error
		switch it.Kind {
		case KindSet, KindDelete, KindCreate:
			if check(&it.Item) {
				problem = preflightNode(&it.Item, current[i])
			}
		case KindLedger:
			var last int64
			last, err = e.dd.Ledgers.LastEntry(it.LedgerID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				err = nil
			case err == nil:
				problem = fmt.Sprintf("ledger %d already has entries (last entry %d)", it.LedgerID, last)
			}
		case KindDropLedger:
			problem, err = e.compareLedger(ctx, it.LedgerID, it.Entries)
		case KindBookieLedger:
			problem, err = e.preflightBookieLedger(&it.Item)
		}
		if err != nil {
			return nil, fmt.Errorf("preflight item %d (%s): %w", i, it.label(), err)
		}
		if problem != "" {
			it.Status, it.Reason = StatusFailed, problem
			problems = append(problems, problem)
		}
	}
	return problems, nil
}

// preflightNode checks one node item against the node as read now (Version 0: the
// node does not exist) and fills in its before-image.
func preflightNode(it *Item, n store.Node) string {
	exists := n.Version != 0
	if it.Kind == KindCreate {
		if exists {
			return fmt.Sprintf("node %s already exists (version %d)", it.Path, n.Version)
		}
		return ""
	}
	if !exists {
		return fmt.Sprintf("node %s no longer exists (expected version %d)", it.Path, it.Expect)
	}
	if n.Version != it.Expect {
		return fmt.Sprintf("node %s changed since it was read (version %d, expected %d)", it.Path, n.Version, it.Expect)
	}
	if it.Before == nil {
		it.Before = bytes.Clone(n.Value)
		if it.Before == nil {
			it.Before = []byte{}
		}
	} else if !bytes.Equal(it.Before, n.Value) {
		return fmt.Sprintf("node %s: the plan's before bytes differ from the stored node", it.Path)
	}
	return ""
}

// compareLedger returns a problem when the ledger's entries are not exactly want.
func (e *Engine) compareLedger(ctx context.Context, ledgerID int64, want []LedgerEntry) (string, error) {
	byID := make(map[int64][]byte, len(want))
	for _, en := range want {
		byID[en.EntryID] = en.Value
	}
	var diffs []string
	present := 0
	err := e.dd.Ledgers.Entries(ctx, ledgerID, 0, -1, func(id int64, v []byte) error {
		w, ok := byID[id]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("entry %d not in the plan", id))
			return nil
		}
		present++
		if !bytes.Equal(w, v) {
			diffs = append(diffs, fmt.Sprintf("entry %d bytes differ", id))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("ledger %d: %w", ledgerID, err)
	}
	if missing := len(want) - present; missing > 0 {
		diffs = append(diffs, fmt.Sprintf("%d entries missing", missing))
	}
	if len(diffs) == 0 {
		return "", nil
	}
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
	}
	return fmt.Sprintf("ledger %d differs from the plan: %s", ledgerID, strings.Join(diffs, ", ")), nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// verify re-reads everything the run wrote and compares it with the plan. Nodes are
// read from one snapshot, except those the write step's own transaction read back
// after writing them (rec.readBack): each is the node as the write left it.
func (e *Engine) verify(ctx context.Context, rec *RunRecord) ([]string, error) {
	current, err := e.readNodeItems(rec, nil, rec.readBack)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	var mismatches []string
	for i := range rec.Items {
		it := &rec.Items[i]
		var problem string
		switch it.Kind {
		case KindSet, KindCreate, KindDelete:
			n := current[i]
			wantExists, want := it.target()
			if !sameNode(n.Version != 0, n.Value, wantExists, want) {
				problem = fmt.Sprintf("node %s does not hold what the run wrote", it.Path)
			}
		case KindLedger:
			var err error
			if problem, err = e.compareLedger(ctx, it.LedgerID, it.Entries); err != nil {
				return nil, fmt.Errorf("verify: %w", err)
			}
		case KindDropLedger:
			if _, err := e.dd.Ledgers.LastEntry(it.LedgerID); !errors.Is(err, store.ErrNotFound) {
				if err != nil {
					return nil, fmt.Errorf("verify ledger %d: %w", it.LedgerID, err)
				}
				problem = fmt.Sprintf("ledger %d still has entries", it.LedgerID)
			}
		case KindBookieLedger:
			var err error
			if problem, err = e.verifyBookieLedger(&it.Item); err != nil {
				return nil, fmt.Errorf("verify: %w", err)
			}
		}
		if problem != "" {
			it.Status, it.Reason = StatusMismatch, problem
			mismatches = append(mismatches, problem)
			continue
		}
		it.Status = StatusVerified
	}
	return mismatches, nil
}

// rollbackRun returns the data dir to the record's before-images, under the holder
// epoch. Node items whose write was refused (StatusFailed) are skipped: they wrote
// nothing. Every other item is judged by the bytes the store holds now, so it works
// whether or not the run reached it. It returns the nodes it left alone because they hold neither the run's bytes nor
// the before-image.
func (e *Engine) rollbackRun(ctx context.Context, rec *RunRecord, holder uint64, note string) ([]string, error) {
	// A newer run holds the journal (and its recovery owns this record): touch nothing.
	if err := e.checkEpoch(holder); err != nil {
		return nil, err
	}
	// The on-disk record already says applying, so a failure to note the rollback
	// leaves recovery with the same work to do: go on.
	journalErr := e.setState(rec, StateRollingBack, holder, note)
	e.crashPoint("rollback-journaled")
	var conflicts []string
	for i := len(rec.Items) - 1; i >= 0; i-- {
		it := &rec.Items[i]
		if it.isNode() && it.Status == StatusFailed {
			continue
		}
		if err := e.checkEpoch(holder); err != nil {
			return conflicts, err
		}
		conflict, err := e.rollbackItem(ctx, it)
		if err != nil {
			return conflicts, fmt.Errorf("roll back item %d (%s): %w", i, it.label(), err)
		}
		if conflict != "" {
			conflicts = append(conflicts, conflict)
			it.Reason = conflict
		} else if it.Status != StatusFailed {
			it.Status = StatusRolledBack
		}
		e.crashPoint("rollback-item-%d", i)
	}
	rec.Verified = false
	if rec.UndoOf != "" {
		if err := e.refreshUndone(rec, holder); err != nil {
			return conflicts, err
		}
	}
	if len(conflicts) > 0 {
		note = "left as is: " + strings.Join(conflicts, "; ")
	}
	if err := e.setState(rec, StateRolledBack, holder, note); err != nil {
		return conflicts, errors.Join(journalErr, err)
	}
	e.crashPoint("rolled-back")
	return conflicts, nil
}

// refreshUndone runs after an undo was rolled back: the undone run's nodes hold its
// bytes again, but at new versions. Recording those in the undone run's journal
// record lets the undo be run again; it is idempotent, so recovery can repeat it.
func (e *Engine) refreshUndone(undo *RunRecord, holder uint64) error {
	orig, err := Show(e.dir, undo.UndoOf)
	if err != nil {
		return fmt.Errorf("undone run: %w", err)
	}
	versions := make(map[string]uint64)
	for _, it := range undo.Items {
		if !it.isNode() {
			continue
		}
		n, err := e.dd.Metadata.Get(it.Path)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if wantExists, want := it.origin(); sameNode(true, n.Value, wantExists, want) {
			versions[it.Path] = n.Version
		}
	}
	changed := false
	for i := range orig.Items {
		it := &orig.Items[i]
		if v, ok := versions[it.Path]; ok && it.Kind != KindDelete && it.Written != v {
			it.Written, changed = v, true
		}
	}
	if !changed {
		return nil
	}
	orig.History = append(orig.History, StateChange{State: orig.State, At: e.Now().UTC(), Epoch: holder,
		Note: "node versions refreshed: undo run " + undo.RunID + " was rolled back"})
	return e.files().writeRecord(e.dir, orig)
}

// rollbackItem moves one item from its after-state back to its before-image. It is
// idempotent: an item already at its before-image is left alone.
func (e *Engine) rollbackItem(ctx context.Context, it *JournalItem) (string, error) {
	md, lg := e.dd.Metadata, e.dd.Ledgers
	switch it.Kind {
	case KindBookieLedger:
		return e.rollbackBookieLedger(it)
	case KindLedger:
		// Preflight proved the ledger had no entries, so all of them are the run's.
		return "", lg.DeleteLedgerEntries(it.LedgerID)
	case KindDropLedger:
		for _, en := range it.Entries {
			if err := lg.PutEntry(it.LedgerID, en.EntryID, nonNil(en.Value)); err != nil {
				return "", fmt.Errorf("ledger %d entry %d: %w", it.LedgerID, en.EntryID, err)
			}
		}
		return "", nil
	}
	n, err := md.Get(it.Path)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	exists := err == nil
	if wantExists, want := it.origin(); sameNode(exists, n.Value, wantExists, want) {
		return "", nil
	}
	if wantExists, want := it.target(); !sameNode(exists, n.Value, wantExists, want) {
		return fmt.Sprintf("node %s changed by someone else; not restored", it.Path), nil
	}
	switch it.Kind {
	case KindSet:
		_, err = md.CompareAndSet(it.Path, n.Version, nonNil(it.Before))
	case KindCreate:
		err = md.CompareAndDelete(it.Path, n.Version)
	case KindDelete:
		_, err = md.CompareAndSet(it.Path, 0, nonNil(it.Before))
	}
	return "", err
}

// writeBackup writes the metadata backup durably to a new file.
func (e *Engine) writeBackup(path string) (err error) {
	fail := func(e error) error { return fmt.Errorf("backup %s: %w: %w", path, ErrBackupWrite, e) }
	if _, err := os.Stat(path); err == nil {
		return fail(fs.ErrExist)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(path)+"-")
	if err != nil {
		return fail(err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err := e.dd.BackupMetadata(f); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	if err := e.files().syncDir(dir); err != nil {
		return fail(err)
	}
	return nil
}

func resultOf(rec *RunRecord) *Result {
	r := &Result{
		RunID: rec.RunID, Epoch: rec.Epoch, State: rec.State, Backup: rec.Backup,
		Verified: rec.Verified, Mismatches: rec.Mismatches, Items: make([]ItemResult, len(rec.Items)),
	}
	for i, it := range rec.Items {
		r.Items[i] = ItemResult{
			Index: i, Kind: it.Kind, Path: it.Path, LedgerID: it.LedgerID,
			Description: it.Description, Status: it.Status, Reason: it.Reason,
		}
	}
	return r
}
