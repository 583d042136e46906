package mutate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The journal lives in <data-dir>/journal/, apart from the Pulsar metadata:
//
//	epoch          the current epoch, decimal; every run takes epoch+1
//	<run-id>.json  one RunRecord per run, rewritten atomically at each state change
//
// Every file is written as temp file, fsync, rename, so a reader sees either the old
// or the new content, never a torn one; then the folder is fsynced where the rename
// must survive a crash before the next step. A run costs four fsyncs: the "applying"
// record and folder before the first write, the "committed" record and folder before
// the run is reported done; an engine's first run (and any run after another engine
// took the journal) also writes the epoch file, whose rename the record's folder
// fsync that follows makes durable. A run of a Series costs three: its committed
// record's rename is made durable by the next run's folder fsync (or Close's).
const (
	journalDirName = "journal"
	epochFileName  = "epoch"
	recordSuffix   = ".json"
	tempPrefix     = ".tmp-"
	// JournalFormat is the version of the RunRecord JSON layout.
	JournalFormat = 1
)

// Errors of the journal.
var (
	// ErrJournalWrite: the journal could not be written durably; nothing more was changed.
	ErrJournalWrite = errors.New("could not write journal")
	// ErrStaleEpoch: a newer run holds the journal; this run must not write.
	ErrStaleEpoch = errors.New("stale epoch (a newer run holds the journal)")
	// ErrRunNotFound: no journal record for the run id.
	ErrRunNotFound = errors.New("run not found in journal")
	// ErrBadJournal: a journal file cannot be parsed.
	ErrBadJournal = errors.New("journal file damaged")
)

// RunState is where a run is in its life.
type RunState string

const (
	// StateRefused: the preflight failed; nothing was changed.
	StateRefused RunState = "refused"
	// StateApplying: changes may be partly applied; Recover rolls the run back.
	StateApplying RunState = "applying"
	// StateRollingBack: a rollback started; Recover finishes it.
	StateRollingBack RunState = "rolling-back"
	// StateRolledBack: the data dir was returned to the before-images.
	StateRolledBack RunState = "rolled-back"
	// StateCommitted: every item was applied and verified.
	StateCommitted RunState = "committed"
)

// Finished reports whether a run in state s needs no recovery.
func (s RunState) Finished() bool {
	return s == StateRefused || s == StateRolledBack || s == StateCommitted
}

// ItemStatus is the outcome of one item.
type ItemStatus string

const (
	StatusPending    ItemStatus = "pending"
	StatusApplied    ItemStatus = "applied"
	StatusVerified   ItemStatus = "verified"
	StatusFailed     ItemStatus = "failed"   // the write was refused; nothing written
	StatusMismatch   ItemStatus = "mismatch" // verification read other bytes
	StatusRolledBack ItemStatus = "rolled-back"
)

// JournalItem is a plan item as journaled: Before holds the before-image actually read
// from the store, Written the node version the run wrote (0 until known).
type JournalItem struct {
	Item
	Status  ItemStatus `json:"status"`
	Reason  string     `json:"reason,omitempty"`
	Written uint64     `json:"written,omitempty"`
}

// StateChange is one line of a run's history.
type StateChange struct {
	State RunState  `json:"state"`
	At    time.Time `json:"at"`
	Epoch uint64    `json:"epoch"` // the epoch of the run or recovery that made the change
	Note  string    `json:"note,omitempty"`
}

// RunRecord is everything the journal knows about one run.
type RunRecord struct {
	Format    int               `json:"format"`
	RunID     string            `json:"runId"`
	Command   string            `json:"command"`
	Args      []string          `json:"args,omitempty"`
	Flags     map[string]string `json:"flags,omitempty"`
	Notes     []string          `json:"notes,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
	// Epoch is the epoch the run took at start.
	Epoch uint64 `json:"epoch"`
	// UndoOf names the run this run undoes.
	UndoOf string `json:"undoOf,omitempty"`
	// MetadataStore is the metadata store the run writes: "" for the data dir's own,
	// else its URL (a live ZooKeeper or etcd). Recovery and undo act on a run only
	// with that same store open.
	MetadataStore string `json:"metadataStore,omitempty"`
	// ToolVersion is the ledgermedic version that wrote the run; Invocation ids
	// the command invocation, shared by every run one command makes (a back-fill
	// writes one run per batch), so they can be undone together.
	ToolVersion string   `json:"toolVersion,omitempty"`
	Invocation  string   `json:"invocation,omitempty"`
	State       RunState `json:"state"`
	// Backup is the metadata backup file written before applying, if any.
	Backup   string `json:"backup,omitempty"`
	Verified bool   `json:"verified"`
	// Mismatches lists what verification found different from the plan.
	Mismatches []string      `json:"mismatches,omitempty"`
	Error      string        `json:"error,omitempty"`
	History    []StateChange `json:"history"`
	// Items come last in the JSON: recovery reads what comes before them
	// (readHead) to pass over a finished run without decoding its items.
	Items []JournalItem `json:"items"`
}

// RunSummary is one line of List.
type RunSummary struct {
	RunID     string            `json:"runId"`
	Command   string            `json:"command"`
	Args      []string          `json:"args,omitempty"`
	Flags     map[string]string `json:"flags,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
	Epoch     uint64            `json:"epoch"`
	// MetadataStore: "" for the data dir's own, else the live store's URL.
	MetadataStore string   `json:"metadataStore,omitempty"`
	ToolVersion   string   `json:"toolVersion,omitempty"`
	Invocation    string   `json:"invocation,omitempty"`
	State         RunState `json:"state"`
	Items         int      `json:"items"`
	Verified      bool     `json:"verified"`
	UndoOf        string   `json:"undoOf,omitempty"`
	// UndoneBy names the committed run that undid this one.
	UndoneBy string `json:"undoneBy,omitempty"`
	Error    string `json:"error,omitempty"`
}

// JournalDir returns the journal folder of a data dir.
func JournalDir(dataDir string) string { return filepath.Join(dataDir, journalDirName) }

// List returns a summary of every run in the journal, oldest first. It only reads,
// so it works on a read-only data dir; a missing journal folder means no runs.
func List(journalDir string) ([]RunSummary, error) {
	recs, err := readRecords(journalDir)
	if err != nil {
		return nil, err
	}
	undoneBy := undoneBy(recs)
	out := make([]RunSummary, 0, len(recs))
	for _, r := range recs {
		out = append(out, summaryOf(r, undoneBy[r.RunID]))
	}
	return out, nil
}

func summaryOf(r *RunRecord, undoneBy string) RunSummary {
	return RunSummary{
		RunID: r.RunID, Command: r.Command, Args: r.Args, Flags: r.Flags,
		CreatedAt: r.CreatedAt, Epoch: r.Epoch, MetadataStore: r.MetadataStore, ToolVersion: r.ToolVersion,
		Invocation: r.Invocation, State: r.State, Items: len(r.Items),
		Verified: r.Verified, UndoOf: r.UndoOf, UndoneBy: undoneBy, Error: r.Error,
	}
}

// undoneBy maps each run that is currently undone to the run that undid it. Runs are
// replayed in time order: undoing an undo re-applies the run it had undone.
func undoneBy(recs []*RunRecord) map[string]string {
	byID := make(map[string]*RunRecord, len(recs))
	for _, r := range recs {
		byID[r.RunID] = r
	}
	m := make(map[string]string)
	for _, r := range recs {
		if r.UndoOf == "" || r.State != StateCommitted {
			continue
		}
		m[r.UndoOf] = r.RunID
		if target := byID[r.UndoOf]; target != nil && target.UndoOf != "" && m[target.UndoOf] == target.RunID {
			delete(m, target.UndoOf)
		}
	}
	return m
}

// Show returns the full journal record of one run.
func Show(journalDir, runID string) (*RunRecord, error) {
	if !validRunID(runID) {
		return nil, fmt.Errorf("run %q: %w", runID, ErrRunNotFound)
	}
	rec, err := readRecord(filepath.Join(journalDir, runID+recordSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run %s in %s: %w", runID, journalDir, ErrRunNotFound)
	}
	return rec, err
}

// readRecords reads every run record, sorted by run id (which sorts by time).
func readRecords(dir string) ([]*RunRecord, error) {
	files, err := recordFiles(dir)
	if err != nil {
		return nil, err
	}
	recs := make([]*RunRecord, 0, len(files))
	for _, path := range files {
		rec, err := readRecord(path)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// recordFiles lists the run records' files, sorted by run id (which sorts by
// time; a record's run id is its file name, readRecord checks).
func recordFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", dir, err)
	}
	var files []string
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, tempPrefix) || !strings.HasSuffix(name, recordSuffix) {
			continue
		}
		files = append(files, filepath.Join(dir, name))
	}
	sort.Strings(files)
	return files, nil
}

// journaledRun is one run as recovery sees it: every run's state and highest
// epoch, and the whole record (rec) of a run that may need recovery.
type journaledRun struct {
	runID    string
	state    RunState
	maxEpoch uint64 // the highest epoch the record names: its own and its history's
	rec      *RunRecord
}

// readRuns reads what recovery needs of every run, sorted by run id. A finished
// run is read by its head (readHead) where that suffices, so the cost of start-up
// does not grow with the items of every run ever journaled; any other record is
// read and checked whole.
func readRuns(dir string) ([]journaledRun, error) {
	files, err := recordFiles(dir)
	if err != nil {
		return nil, err
	}
	runs := make([]journaledRun, 0, len(files))
	for _, path := range files {
		if h, ok := readHead(path); ok && h.State.Finished() {
			runs = append(runs, journaledRun{runID: h.RunID, state: h.State, maxEpoch: h.maxEpoch()})
			continue
		}
		rec, err := readRecord(path)
		if err != nil {
			return nil, err
		}
		h := recordHead{Epoch: rec.Epoch, History: rec.History}
		runs = append(runs, journaledRun{runID: rec.RunID, state: rec.State, maxEpoch: h.maxEpoch(), rec: rec})
	}
	return runs, nil
}

// recordHead is the part of a RunRecord that precedes its items.
type recordHead struct {
	Format  int
	RunID   string
	State   RunState
	Epoch   uint64
	History []StateChange
}

func (h *recordHead) maxEpoch() uint64 {
	m := h.Epoch
	for _, c := range h.History {
		m = max(m, c.Epoch)
	}
	return m
}

// readHead reads a record's fields up to "items", which writeRecord puts last,
// and decodes no item. ok says the head is complete and sound: every field
// recovery needs seen once, under its exact name, before the items, the format
// and run id right. Otherwise (a record of the older layout, with the history
// after the items; a damaged file) the caller reads the record whole, which
// decodes it or says what is wrong. Records are replaced by rename, whole, so a
// head that reads well belongs to a record that does.
func readHead(path string) (h recordHead, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return h, false
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return h, false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey || seen[key] {
			return h, false
		}
		seen[key] = true
		var v any
		switch key {
		case "items":
			return h, headOK(&h, seen, path)
		case "format":
			v = &h.Format
		case "runId":
			v = &h.RunID
		case "state":
			v = &h.State
		case "epoch":
			v = &h.Epoch
		case "history":
			v = &h.History
		default:
			v = new(json.RawMessage)
		}
		if err := dec.Decode(v); err != nil {
			return h, false
		}
	}
	return h, headOK(&h, seen, path)
}

func headOK(h *recordHead, seen map[string]bool, path string) bool {
	for _, k := range []string{"format", "runId", "state", "epoch", "history"} {
		if !seen[k] {
			return false
		}
	}
	return h.Format == JournalFormat && h.RunID == strings.TrimSuffix(filepath.Base(path), recordSuffix)
}

// Unfinished lists the runs a writable open would recover (applying or rolling
// back), oldest first. Like List it only reads; finished runs are passed over by
// their heads.
func Unfinished(journalDir string) ([]RunSummary, error) {
	runs, err := readRuns(journalDir)
	if err != nil {
		return nil, err
	}
	var out []RunSummary
	for _, r := range runs {
		if !r.state.Finished() {
			out = append(out, summaryOf(r.rec, ""))
		}
	}
	return out, nil
}

func readRecord(path string) (*RunRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read journal record: %w", err)
	}
	var rec RunRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("journal record %s: %w: %v", path, ErrBadJournal, err)
	}
	if rec.Format != JournalFormat {
		return nil, fmt.Errorf("journal record %s: %w: format %d, want %d", path, ErrBadJournal, rec.Format, JournalFormat)
	}
	if want := strings.TrimSuffix(filepath.Base(path), recordSuffix); rec.RunID != want {
		return nil, fmt.Errorf("journal record %s: %w: holds run %q", path, ErrBadJournal, rec.RunID)
	}
	switch rec.State {
	case StateRefused, StateApplying, StateRollingBack, StateRolledBack, StateCommitted:
	default:
		return nil, fmt.Errorf("journal record %s: %w: unknown state %q", path, ErrBadJournal, rec.State)
	}
	// Recovery acts on these items: refuse a record it could misread.
	for i := range rec.Items {
		if err := rec.Items[i].validate(); err != nil {
			return nil, fmt.Errorf("journal record %s: %w: item %d: %v", path, ErrBadJournal, i, err)
		}
	}
	return &rec, nil
}

// writeRecord stores a run record durably. The JSON is compact: a record holds every
// node's before and after bytes (a back-fill batch about 1 MB), and indenting it
// costs ten times its encoding, twice per run. `jq .` shows it indented.
func (s syncer) writeRecord(dir string, rec *RunRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("run %s: encode journal record: %w: %w", rec.RunID, ErrJournalWrite, err)
	}
	return s.writeFileDurable(dir, rec.RunID+recordSuffix, append(b, '\n'))
}

// writeRecordLazily stores a run record atomically (temp file, fsync, rename) but
// leaves the folder fsync that makes the rename durable to the caller's next one.
func (s syncer) writeRecordLazily(dir string, rec *RunRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("run %s: encode journal record: %w: %w", rec.RunID, ErrJournalWrite, err)
	}
	return s.writeFileAtomic(dir, rec.RunID+recordSuffix, append(b, '\n'))
}

// readEpoch returns the journal's current epoch; 0 when no run has started yet.
func readEpoch(dir string) (uint64, error) {
	path := filepath.Join(dir, epochFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read epoch: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("epoch file %s: %w: %v", path, ErrBadJournal, err)
	}
	return n, nil
}

// writeEpoch replaces the epoch file durably.
func (s syncer) writeEpoch(dir string, n uint64) error {
	return s.writeFileDurable(dir, epochFileName, epochBytes(n))
}

// writeEpochBeforeRecord replaces the epoch file without the folder fsync: the caller
// writes a run record next, whose folder fsync makes this rename durable too. Until
// then no data was changed, and losing the new epoch in a crash is harmless: no
// record holds it, and Recover raises the epoch above every record's.
func (s syncer) writeEpochBeforeRecord(dir string, n uint64) error {
	return s.writeFileAtomic(dir, epochFileName, epochBytes(n))
}

func epochBytes(n uint64) []byte { return []byte(strconv.FormatUint(n, 10) + "\n") }

// syncer is Engine.OnSync: when set, it sees every fsync of the journal (tests
// count them). The journal's file writes are its methods so that each engine
// carries its own observer.
type syncer func(path string)

func (s syncer) fsync(f *os.File) error {
	if s != nil {
		s(f.Name())
	}
	return f.Sync()
}

// writeFileDurable replaces dir/name with data: temp file, fsync, rename, fsync dir.
func (s syncer) writeFileDurable(dir, name string, data []byte) error {
	if err := s.writeFileAtomic(dir, name, data); err != nil {
		return err
	}
	if err := s.syncDir(dir); err != nil {
		return fmt.Errorf("fsync dir for %s: %w: %w", filepath.Join(dir, name), ErrJournalWrite, err)
	}
	return nil
}

// writeFileAtomic replaces dir/name with data: temp file, fsync, rename. The new
// content survives a crash only once dir is fsynced.
func (s syncer) writeFileAtomic(dir, name string, data []byte) (err error) {
	fail := func(step string, e error) error {
		return fmt.Errorf("%s %s: %w: %w", step, filepath.Join(dir, name), ErrJournalWrite, e)
	}
	f, err := os.CreateTemp(dir, tempPrefix+name+"-")
	if err != nil {
		return fail("create temp for", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fail("write", err)
	}
	if err := s.fsync(f); err != nil {
		f.Close()
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		return fail("close", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fail("rename", err)
	}
	return nil
}

func (s syncer) syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return s.fsync(d)
}

// removeTemps deletes temp files a crash left behind.
func removeTemps(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read journal %s: %w", dir, err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("remove leftover %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// invocationKey carries an Invocation in a context.
type invocationKey struct{}

// Invocation is who writes: the tool's version and the id of the command
// invocation. The CLI puts it in the context of every command; each run the
// engine journals under that context records it.
type Invocation struct {
	ID          string
	ToolVersion string
}

// WithInvocation returns ctx carrying inv.
func WithInvocation(ctx context.Context, inv Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// invocationOf is the Invocation ctx carries, or the zero one.
func invocationOf(ctx context.Context) Invocation {
	inv, _ := ctx.Value(invocationKey{}).(Invocation)
	return inv
}
