package mutate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ledgermedic/ledgermedic/formats/crc32c"
	"github.com/ledgermedic/ledgermedic/store"
)

// The journal lives in <data-dir>/journal/, apart from the Pulsar metadata:
//
//	epoch          the current epoch, decimal; every run takes epoch+1
//	<run-id>.json  one RunRecord per run: a line of JSON, then its update lines
//
// A record is written as temp file, fsync, rename, so a reader sees either the old
// or the new content, never a torn one; then the folder is fsynced where the rename
// must survive a crash before the next step. A commit is not a new file: the run's
// state, history and item outcomes are appended to the record as one update line
// ({"update":{...},"crc32c":N}) and the file is fsynced. A reader applies the update
// lines in order; a last line without its newline, or an invalid tail after the
// last valid line, is an append a crash cut short and is ignored (the run then
// reads as applying and is rolled back, one of the two states a run may end in).
// Other state changes (refused, rolling back, rolled back, an undo's mark) rewrite
// the whole record, which folds its updates in.
//
// So a run costs three fsyncs: the applying record and folder before the first
// write, the commit's append before the run is reported done (the runs of a Series
// journaled at once share their folder fsync: syncDir). An engine's first run
// (and any run after another engine took the journal) also writes the epoch file,
// whose rename the record's folder fsync that follows makes durable. Appending also
// spares a commit the second encoding and write of every before and after image, and
// the journal frees no inode per run (where a file system without a journal makes
// every later file creation skip recently freed inodes one by one: docs/benchmarks.md).
const (
	journalDirName = "journal"
	epochFileName  = "epoch"
	recordSuffix   = ".json"
	tempPrefix     = ".tmp-"
	// JournalFormat is the version of the RunRecord JSON layout written now: 2 adds
	// update lines after the record. Format 1 records (no update lines) are read too.
	JournalFormat    = 2
	oldJournalFormat = 1
)

// readableFormat: the record layouts this version reads.
func readableFormat(f int) bool { return f == JournalFormat || f == oldJournalFormat }

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

func (s RunState) known() bool {
	switch s {
	case StateRefused, StateApplying, StateRollingBack, StateRolledBack, StateCommitted:
		return true
	}
	return false
}

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
	ToolVersion string `json:"toolVersion,omitempty"`
	Invocation  string `json:"invocation,omitempty"`
	runOutcome
	// Backup is the metadata backup file written before applying, if any.
	Backup string `json:"backup,omitempty"`
	// Items come last in the JSON: recovery reads what comes before them
	// (readHead) to pass over a finished run without decoding its items.
	Items []JournalItem `json:"items"`
	// readBack holds, by item index, nodes as the write step's own transaction
	// read them after writing (store.ReadBackWriter); verify compares these
	// instead of reading again. Never journaled: only the run that wrote holds it.
	readBack map[int]store.Node
}

// runOutcome is where a run stands; a commit appends it to the record (with the
// items' outcomes) as an update line.
type runOutcome struct {
	State    RunState `json:"state"`
	Verified bool     `json:"verified"`
	// Mismatches lists what verification found different from the plan.
	Mismatches []string      `json:"mismatches,omitempty"`
	Error      string        `json:"error,omitempty"`
	History    []StateChange `json:"history"`
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
	files, err := recordFiles(journalDir)
	if err != nil {
		return nil, err
	}
	out := make([]RunSummary, 0, len(files))
	for _, path := range files {
		s, ok := readSummary(path)
		if !ok {
			rec, err := readRecord(path)
			if err != nil {
				return nil, err
			}
			s = summaryOf(rec, len(rec.Items), "")
		}
		out = append(out, s)
	}
	undone := undoneBy(out)
	for i := range out {
		out[i].UndoneBy = undone[out[i].RunID]
	}
	return out, nil
}

func summaryOf(r *RunRecord, items int, undoneBy string) RunSummary {
	return RunSummary{
		RunID: r.RunID, Command: r.Command, Args: r.Args, Flags: r.Flags,
		CreatedAt: r.CreatedAt, Epoch: r.Epoch, MetadataStore: r.MetadataStore, ToolVersion: r.ToolVersion,
		Invocation: r.Invocation, State: r.State, Items: items,
		Verified: r.Verified, UndoOf: r.UndoOf, UndoneBy: undoneBy, Error: r.Error,
	}
}

// undoneBy maps each run that is currently undone to the run that undid it: the
// one rule for a run's effect, which journal list, the report and undo's own
// check all read. Runs are replayed in time order. Undoing an undo re-applies
// the run it had undone, and undoing that re-application undoes it again: down a
// chain of undos, each run is in effect exactly when the undo above it is not.
func undoneBy(runs []RunSummary) map[string]string {
	byID := make(map[string]*RunSummary, len(runs))
	for i := range runs {
		byID[runs[i].RunID] = &runs[i]
	}
	m := make(map[string]string)
	for _, r := range runs {
		if r.UndoOf == "" || r.State != StateCommitted {
			continue
		}
		m[r.UndoOf] = r.RunID
		for cur := byID[r.UndoOf]; cur != nil && cur.UndoOf != ""; cur = byID[cur.UndoOf] {
			if m[cur.RunID] != "" {
				delete(m, cur.UndoOf) // cur is undone: what it undid is in effect again
			} else {
				m[cur.UndoOf] = cur.RunID
			}
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
	state    RunState
	maxEpoch uint64 // the highest epoch the record names: its own and its history's
	rec      *RunRecord
}

// readRuns reads what recovery needs of every run, sorted by run id. A finished
// run listed in the heads file (heads.go) whose file has not changed since is not
// read at all; another finished one is read by its head (readHead) where that
// suffices, so the cost of start-up does not grow with the items of every run
// ever journaled; any other record is read and checked whole. keepHeads (a
// writable start) rewrites the heads file when it is not current.
func readRuns(dir string, keepHeads bool) ([]journaledRun, error) {
	files, err := recordFiles(dir)
	if err != nil {
		return nil, err
	}
	cached := readHeads(dir)
	heads := make(map[string]cachedHead, len(files))
	names := make([]string, 0, len(files))
	current := true
	runs := make([]journaledRun, 0, len(files))
	for _, path := range files {
		name := filepath.Base(path)
		var fi fs.FileInfo
		if cacheableName(name) {
			// Taken before the read: a change after it makes the next start read again.
			fi, _ = os.Lstat(path)
		}
		if c, ok := cached[name]; ok && fi != nil && c.matches(fi) {
			runs = append(runs, journaledRun{state: c.state, maxEpoch: c.maxEpoch})
			heads[name], names = c, append(names, name)
			continue
		}
		current = false
		r, err := readRun(path)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
		if fi != nil && r.state.Finished() {
			heads[name], names = headOf(fi, r), append(names, name)
		}
	}
	if keepHeads && (!current || len(cached) != len(names)) {
		writeHeads(dir, names, heads)
	}
	return runs, nil
}

// readRun reads one record for recovery: by its head when it is finished and the
// head reads well, else whole.
func readRun(path string) (journaledRun, error) {
	if h, ok := readHead(path); ok && h.State.Finished() {
		return journaledRun{state: h.State, maxEpoch: h.maxEpoch()}, nil
	}
	rec, err := readRecord(path)
	if err != nil {
		return journaledRun{}, err
	}
	h := recordHead{Epoch: rec.Epoch, History: rec.History}
	return journaledRun{state: rec.State, maxEpoch: h.maxEpoch(), rec: rec}, nil
}

// recordHead is the part of a RunRecord that precedes its items.
type recordHead struct {
	Format  int           `json:"format"`
	RunID   string        `json:"runId"`
	State   RunState      `json:"state"`
	Epoch   uint64        `json:"epoch"`
	History []StateChange `json:"history"`
}

func (h *recordHead) maxEpoch() uint64 {
	m := h.Epoch
	for _, c := range h.History {
		m = max(m, c.Epoch)
	}
	return m
}

// headKeys are the fields of recordHead, as writeRecord names them.
var headKeys = []string{"format", "runId", "state", "epoch", "history"}

// readHead reads a record's fields up to "items", which writeRecord puts last,
// and decodes no item. ok says the head is complete and sound: every field
// recovery needs seen once, under its exact name, before the items, the format
// and run id right. Otherwise (a record of the older layout, with the history
// after the items; a damaged file; a head longer than headWindow) the caller reads
// the record whole, which decodes it or says what is wrong. Records are replaced
// by rename, whole, and commits appended as checked update lines (lastLine reads
// the last), so a head that reads well belongs to a record that does.
func readHead(path string) (h recordHead, ok bool) {
	rf, ok := openFront(path, nil)
	if !ok {
		return recordHead{}, false
	}
	defer rf.close()
	h = rf.head
	if h.Format != JournalFormat {
		return h, true // format 1 has no update lines
	}
	line, ok := rf.lastLine()
	if !ok {
		return recordHead{}, false
	}
	out, _, err := parseUpdateOutcome(line, false)
	if err != nil || out.History == nil {
		return recordHead{}, false
	}
	h.State, h.History = out.State, out.History
	return h, true
}

// readSummary is List's line for a format-2 record, read as readHead reads one:
// the fields before its items, and its outcome and item count from its last update
// line, so listing a journal does not read every before and after image ever
// journaled (a back-fill of 1M ledgers leaves 10k runs of about 1 MB). Like
// readHead it does not look at the items: items damaged after they were written
// are found by the whole read (Show, undo). ok false: read the record whole
// (format 1 records, whose item count only the items say, and whatever readHead
// would not vouch for).
func readSummary(path string) (RunSummary, bool) {
	var rec RunRecord
	rf, ok := openFront(path, &rec)
	if !ok {
		return RunSummary{}, false
	}
	defer rf.close()
	if rec.Format != JournalFormat {
		return RunSummary{}, false
	}
	line, ok := rf.lastLine()
	if !ok {
		return RunSummary{}, false
	}
	outcome, items, err := parseUpdateOutcome(line, true)
	if err != nil {
		return RunSummary{}, false
	}
	rec.runOutcome = outcome
	return summaryOf(&rec, items, ""), true
}

// parseUpdateOutcome checks an update line and decodes its outcome, which comes
// before its items, without decoding the items; with countItems it counts them.
func parseUpdateOutcome(line []byte, countItems bool) (runOutcome, int, error) {
	payload, err := updatePayload(line)
	if err != nil {
		return runOutcome{}, 0, err
	}
	prefix, _, at, err := objectPrefix(payload, "items")
	if err != nil {
		return runOutcome{}, 0, fmt.Errorf("update line: %w", err)
	}
	var out runOutcome
	if err := json.Unmarshal(prefix, &out); err != nil {
		return runOutcome{}, 0, fmt.Errorf("update line: %w", err)
	}
	if !out.State.known() {
		return runOutcome{}, 0, fmt.Errorf("update line: unknown state %q", out.State)
	}
	items := 0
	if countItems && at >= 0 {
		if items, err = arrayLen(payload, at); err != nil {
			return runOutcome{}, 0, fmt.Errorf("update line items: %w", err)
		}
	}
	return out, items, nil
}

// recordFile is a journal record open for reading its ends: what readHead and
// readSummary need lies in its first and last few kB.
type recordFile struct {
	f     *os.File
	size  int64
	start []byte // what openFront read of the file's start (the whole file, when small)
	head  recordHead
}

func (rf *recordFile) close() { rf.f.Close() }

// openFront opens a record and decodes its fields before "items" into its head
// and, unless nil, into rec. ok false: the file does not open, or its
// fields before the items are not headKeys once each under their exact names (and
// any others), do not decode, are longer than headWindow, or name another run or
// an unknown format.
func openFront(path string, rec *RunRecord) (*recordFile, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	rf := &recordFile{f: f}
	if rf.readFront(path, rec) {
		return rf, true
	}
	f.Close()
	return nil, false
}

func (rf *recordFile) readFront(path string, rec *RunRecord) bool {
	fi, err := rf.f.Stat()
	if err != nil {
		return false
	}
	rf.size = fi.Size()
	for win := int64(4 << 10); win <= headWindow; win *= 4 {
		rf.start = make([]byte, min(win, rf.size))
		if _, err := rf.f.ReadAt(rf.start, 0); err != nil {
			return false
		}
		prefix, keys, _, err := objectPrefix(rf.start, "items")
		if errors.Is(err, errShortPrefix) && int64(len(rf.start)) < rf.size {
			continue
		}
		return err == nil && headKeysOnce(keys) && rf.decodeFront(prefix, rec) == nil && headOK(&rf.head, path)
	}
	return false
}

// decodeFront decodes a record's fields before its items into rec, when not nil,
// and its head.
func (rf *recordFile) decodeFront(prefix []byte, rec *RunRecord) error {
	if rec == nil {
		return json.Unmarshal(prefix, &rf.head)
	}
	if err := json.Unmarshal(prefix, rec); err != nil {
		return err
	}
	rf.head = recordHead{Format: rec.Format, RunID: rec.RunID, State: rec.State, Epoch: rec.Epoch, History: rec.History}
	return nil
}

// headKeysOnce: each of headKeys once, under its exact name, and no key repeated
// or spelled like one of them otherwise (json.Unmarshal matches names without
// regard to case).
func headKeysOnce(keys []string) bool {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			return false
		}
		seen[k] = true
		for _, want := range headKeys {
			if k != want && strings.EqualFold(k, want) {
				return false
			}
		}
	}
	for _, want := range headKeys {
		if !seen[want] {
			return false
		}
	}
	return true
}

func headOK(h *recordHead, path string) bool {
	return readableFormat(h.Format) &&
		h.RunID == strings.TrimSuffix(filepath.Base(path), recordSuffix)
}

// headWindow bounds how much of a record's start (for its head) and of its end
// (for its last line) readHead and readSummary read; each read starts at 4 kB (a
// back-fill record's head is a few hundred bytes, an update line of 100 items
// about 3 kB) and grows fourfold.
const headWindow = 256 << 10

// lastLine returns a format-2 record's last line, which is always an update line
// (writeRecord, appendUpdate), read from the file's end without the items before
// it, and without its newline. false: the file does not end with a newline (a torn
// append), holds one line only (a record without its update line), or its last
// line is longer than headWindow; the caller reads the record whole (which passes
// over a torn append and says what else is wrong).
func (rf *recordFile) lastLine() ([]byte, bool) {
	for win := int64(4 << 10); win <= headWindow; win *= 4 {
		off := max(0, rf.size-win)
		var buf []byte
		if off == 0 && int64(len(rf.start)) == rf.size {
			buf = rf.start
		} else {
			buf = make([]byte, rf.size-off)
			if _, err := rf.f.ReadAt(buf, off); err != nil {
				return nil, false
			}
		}
		if len(buf) == 0 || buf[len(buf)-1] != '\n' {
			return nil, false
		}
		at := bytes.LastIndexByte(buf[:len(buf)-1], '\n')
		if at < 0 && off > 0 {
			continue // the last line starts before the window
		}
		if at < 0 {
			return nil, false
		}
		return buf[at+1 : len(buf)-1], true
	}
	return nil, false
}

// Unfinished lists the runs a writable open would recover (applying or rolling
// back), oldest first. Like List it only reads; finished runs are passed over by
// their heads.
func Unfinished(journalDir string) ([]RunSummary, error) {
	runs, err := readRuns(journalDir, false) // a dry run writes nothing
	if err != nil {
		return nil, err
	}
	var out []RunSummary
	for _, r := range runs {
		if !r.state.Finished() {
			out = append(out, summaryOf(r.rec, len(r.rec.Items), ""))
		}
	}
	return out, nil
}

func readRecord(path string) (*RunRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read journal record: %w", err)
	}
	// The record is the file's first JSON value (format 1 records of early versions
	// were indented); update lines follow it.
	dec := json.NewDecoder(bytes.NewReader(b))
	var rec RunRecord
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("journal record %s: %w: %v", path, ErrBadJournal, err)
	}
	if !readableFormat(rec.Format) {
		return nil, fmt.Errorf("journal record %s: %w: format %d, want %d or %d", path, ErrBadJournal, rec.Format, oldJournalFormat, JournalFormat)
	}
	updates, err := validUpdates(b[dec.InputOffset():], rec.Format, len(rec.Items))
	if err != nil {
		return nil, fmt.Errorf("journal record %s: %w: %v", path, ErrBadJournal, err)
	}
	for _, u := range updates {
		u.applyTo(&rec)
	}
	if want := strings.TrimSuffix(filepath.Base(path), recordSuffix); rec.RunID != want {
		return nil, fmt.Errorf("journal record %s: %w: holds run %q", path, ErrBadJournal, rec.RunID)
	}
	if !rec.State.known() {
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
//
// A format-2 record ends with an update line of its state even when written whole,
// so the last line of every record says its state (lastLine).
func (s syncer) writeRecord(dir string, rec *RunRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("run %s: encode journal record: %w: %w", rec.RunID, ErrJournalWrite, err)
	}
	b = append(b, '\n')
	if rec.Format == JournalFormat {
		if b, err = appendUpdateLine(b, rec); err != nil {
			return fmt.Errorf("run %s: encode journal record: %w: %w", rec.RunID, ErrJournalWrite, err)
		}
	}
	return s.writeFileDurable(dir, rec.RunID+recordSuffix, b)
}

// recordUpdate is one update line's payload: what a commit changes in a record.
type recordUpdate struct {
	runOutcome
	Items []itemUpdate `json:"items"`
}

// itemUpdate is an item's outcome, in the record's item order.
type itemUpdate struct {
	Status  ItemStatus `json:"status"`
	Reason  string     `json:"reason,omitempty"`
	Written uint64     `json:"written,omitempty"`
}

// An update line as stored is exactly {"update":PAYLOAD,"crc32c":N}: PAYLOAD the
// JSON of a recordUpdate, N the CRC-32C of its bytes. Only ledgermedic writes them,
// so the envelope is matched as bytes (no second JSON scan of the payload).
const (
	updatePrefix = `{"update":`
	updateCRCKey = `,"crc32c":`
)

// updatePayload checks an update line's envelope and CRC and returns its payload.
func updatePayload(line []byte) ([]byte, error) {
	i := bytes.LastIndex(line, []byte(updateCRCKey))
	if !bytes.HasPrefix(line, []byte(updatePrefix)) || i < len(updatePrefix) || line[len(line)-1] != '}' {
		return nil, errors.New("not an update line")
	}
	payload := line[len(updatePrefix):i]
	crc, err := strconv.ParseUint(string(line[i+len(updateCRCKey):len(line)-1]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("update line crc32c: %v", err)
	}
	if got := crc32.Checksum(payload, crc32c.Table); got != uint32(crc) {
		return nil, fmt.Errorf("update line crc32c %d, its bytes have %d", crc, got)
	}
	return payload, nil
}

func updateOf(rec *RunRecord) recordUpdate {
	u := recordUpdate{runOutcome: rec.runOutcome, Items: make([]itemUpdate, len(rec.Items))}
	for i, it := range rec.Items {
		u.Items[i] = itemUpdate{Status: it.Status, Reason: it.Reason, Written: it.Written}
	}
	return u
}

func (u *recordUpdate) applyTo(rec *RunRecord) {
	rec.runOutcome = u.runOutcome
	for i, iu := range u.Items {
		rec.Items[i].Status, rec.Items[i].Reason, rec.Items[i].Written = iu.Status, iu.Reason, iu.Written
	}
}

// parseUpdate decodes one update line of a record of the given item count.
func parseUpdate(line []byte, items int) (*recordUpdate, error) {
	payload, err := updatePayload(line)
	if err != nil {
		return nil, err
	}
	var u recordUpdate
	if err := json.Unmarshal(payload, &u); err != nil {
		return nil, err
	}
	if !u.State.known() {
		return nil, fmt.Errorf("update line: unknown state %q", u.State)
	}
	if len(u.Items) != items {
		return nil, fmt.Errorf("update line has %d items, the record %d", len(u.Items), items)
	}
	return &u, nil
}

// validUpdates parses what follows a record: whitespace, then update lines. The
// lines after the last valid one (a torn or garbled append) are dropped; an
// invalid line before a valid one is damage. Format 1 records have none.
func validUpdates(rest []byte, format, items int) ([]*recordUpdate, error) {
	if format != JournalFormat {
		if len(bytes.TrimSpace(rest)) > 0 {
			return nil, fmt.Errorf("format %d record followed by more data", format)
		}
		return nil, nil
	}
	lines := bytes.Split(rest, []byte{'\n'})
	if len(bytes.TrimSpace(lines[0])) > 0 {
		return nil, errors.New("data after the record on its line")
	}
	if len(lines) < 2 {
		return nil, nil
	}
	lines = lines[1 : len(lines)-1] // the last piece has no newline: empty, or torn
	var out []*recordUpdate
	var bad error
	for n, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		u, err := parseUpdate(line, items)
		if err != nil {
			if bad == nil {
				bad = fmt.Errorf("update line %d: %v", n+1, err)
			}
			continue
		}
		if bad != nil {
			return nil, bad
		}
		out = append(out, u)
	}
	return out, nil
}

// appendUpdateLine appends rec's update line, newline included, to b.
func appendUpdateLine(b []byte, rec *RunRecord) ([]byte, error) {
	payload, err := json.Marshal(updateOf(rec))
	if err != nil {
		return nil, err
	}
	b = append(b, updatePrefix...)
	b = append(b, payload...)
	b = append(b, updateCRCKey...)
	b = strconv.AppendUint(b, uint64(crc32.Checksum(payload, crc32c.Table)), 10)
	return append(b, "}\n"...), nil
}

// appendUpdate commits rec's state to its record file: one update line appended
// and the file fsynced; no new file, no rename. Only runs this version started
// commit, so the record is format 2.
func (s syncer) appendUpdate(dir string, rec *RunRecord) error {
	fail := func(step string, e error) error {
		return fmt.Errorf("run %s: %s journal record: %w: %w", rec.RunID, step, ErrJournalWrite, e)
	}
	line, err := appendUpdateLine(nil, rec)
	if err != nil {
		return fail("encode update of", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, rec.RunID+recordSuffix), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail("open", err)
	}
	if step, err := s.writeAndSync(f, line); err != nil {
		return fail(step, err)
	}
	return nil
}

// writeAndSync writes data to f, fsyncs and closes it; step names what failed.
func (s syncer) writeAndSync(f *os.File, data []byte) (step string, err error) {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "write", err
	}
	if err := s.fsync(f); err != nil {
		f.Close()
		return "fsync", err
	}
	return "close", f.Close()
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
	if step, err := s.writeAndSync(f, data); err != nil {
		return fail(step, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fail("rename", err)
	}
	return nil
}

// syncDir makes every rename and creation in dir before the call durable. Calls
// for one folder that arrive while its fsync runs share the next one (group
// commit): a folder's fsync covers every change made in it before the fsync
// started, so the runs a Series journals at once pay one folder fsync between
// them, not one each.
func (s syncer) syncDir(dir string) error {
	return dirSyncerOf(dir).sync(func() error {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		return s.fsync(d)
	})
}

// dirSyncers holds one *dirSyncer per folder path.
var dirSyncers sync.Map

func dirSyncerOf(dir string) *dirSyncer {
	if ds, ok := dirSyncers.Load(dir); ok {
		return ds.(*dirSyncer)
	}
	ds, _ := dirSyncers.LoadOrStore(dir, newDirSyncer())
	return ds.(*dirSyncer)
}

// dirSyncer runs one folder's fsyncs one at a time. Each call takes a ticket; a
// fsync covers the tickets taken before it started, and a call whose ticket a
// finished fsync covers returns that fsync's outcome without one of its own.
type dirSyncer struct {
	mu      sync.Mutex
	idle    *sync.Cond
	running bool
	asked   uint64 // tickets handed out
	synced  uint64 // tickets the last finished fsync covers
	err     error  // its outcome
}

func newDirSyncer() *dirSyncer {
	ds := &dirSyncer{}
	ds.idle = sync.NewCond(&ds.mu)
	return ds
}

func (ds *dirSyncer) sync(fsync func() error) error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	ds.asked++
	ticket := ds.asked
	for ds.running {
		ds.idle.Wait()
	}
	if ds.synced >= ticket {
		return ds.err
	}
	ds.running = true
	covers := ds.asked
	ds.mu.Unlock()
	err := fsync()
	ds.mu.Lock()
	ds.running, ds.synced, ds.err = false, covers, err
	ds.idle.Broadcast()
	return err
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
