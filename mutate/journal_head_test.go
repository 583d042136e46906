package mutate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
)

// headRecord is a finished record with items and a history whose last change
// has a later epoch than the run (as an undo's rollback writes).
func headRecord(id string, state RunState) *RunRecord {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	return &RunRecord{
		Format: JournalFormat, RunID: id, Command: "index backfill", Args: []string{"--apply"}, Epoch: 4,
		CreatedAt: at,
		Items: []JournalItem{
			{Item: Item{Kind: KindSet, Path: "/a", Expect: 2, Before: []byte("x"), After: []byte("y")}, Status: StatusVerified, Written: 3},
		},
		runOutcome: runOutcome{State: state,
			History: []StateChange{{State: StateApplying, At: at, Epoch: 4}, {State: state, At: at, Epoch: 9, Note: "later"}}},
	}
}

// What writeRecord writes, readHead reads without the items: the fields
// recovery needs, items last.
func TestReadHeadOfWrittenRecord(t *testing.T) {
	dir := t.TempDir()
	rec := headRecord("20261201T090000.000000000Z-aaaa", StateCommitted)
	if err := syncer(nil).writeRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, rec.RunID+recordSuffix)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(b), `"history"`), strings.Index(string(b), `"items"`); i < 0 || j < i {
		t.Fatalf("items are not written after the history: %s", b)
	}
	h, ok := readHead(path)
	if !ok || h.RunID != rec.RunID || h.State != StateCommitted || h.Epoch != 4 || h.maxEpoch() != 9 {
		t.Fatalf("readHead = %+v, %v; want the record's run id, state, epoch 4 and max epoch 9", h, ok)
	}
	runs, err := readRuns(dir, false)
	if err != nil || len(runs) != 1 || runs[0].rec != nil || runs[0].maxEpoch != 9 {
		t.Fatalf("readRuns = %+v, %v; want the finished run by its head, max epoch 9", runs, err)
	}
}

// A head longer than readHead's first read (long arguments, a long history) is
// read by growing the window, and one longer than headWindow is read whole.
func TestReadHeadOfLongHead(t *testing.T) {
	dir := t.TempDir()
	for _, args := range []int{10_000, headWindow} {
		rec := headRecord("20261201T090000.000000000Z-bbbb", StateCommitted)
		rec.Args = []string{strings.Repeat("a", args)}
		if err := syncer(nil).writeRecord(dir, rec); err != nil {
			t.Fatal(err)
		}
		h, ok := readHead(filepath.Join(dir, rec.RunID+recordSuffix))
		if want := args < headWindow; ok != want || (ok && (h.State != StateCommitted || h.maxEpoch() != 9)) {
			t.Errorf("readHead with %d bytes of arguments = %+v, %v; want ok %v", args, h, ok, want)
		}
	}
}

// Records readHead cannot vouch for are read whole: the older layout (history
// after the items), and heads missing a field, repeating one, or naming
// another run or format.
func TestReadHeadRefusesWhatItCannotVouchFor(t *testing.T) {
	dir := t.TempDir()
	id := "r1"
	path := filepath.Join(dir, id+recordSuffix)
	old := `{"format":1,"runId":"r1","epoch":4,"state":"committed","items":[],"verified":true,"history":[{"state":"committed","at":"2026-12-01T09:00:00Z","epoch":7}]}`
	for name, data := range map[string]string{
		"older layout":       old,
		"no history":         `{"format":1,"runId":"r1","epoch":4,"state":"committed","items":[]}`,
		"repeated state":     `{"format":1,"runId":"r1","epoch":4,"state":"committed","state":"applying","history":[],"items":[]}`,
		"other run":          `{"format":1,"runId":"r2","epoch":4,"state":"committed","history":[],"items":[]}`,
		"other format":       `{"format":3,"runId":"r1","epoch":4,"state":"committed","history":[],"items":[]}`,
		"wrong case":         `{"format":1,"runId":"r1","epoch":4,"State":"committed","history":[],"items":[]}`,
		"not json":           `{"format":1,"runId":`,
		"not an object":      `[1]`,
		"epoch not a number": `{"format":1,"runId":"r1","epoch":"4","state":"committed","history":[],"items":[]}`,
		"escaped key":        `{"format":1,"runId":"r1","epoch":4,"st\u0061te":"committed","history":[],"items":[]}`,
		"unquoted key":       `{"format":1,"runId":"r1",epoch:4,"state":"committed","history":[],"items":[]}`,
		"head not closed":    `{"format":1,"runId":"r1","epoch":4,"state":"committed","history":[]`,
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if h, ok := readHead(path); ok {
			t.Errorf("%s: readHead = %+v, ok; want it refused", name, h)
		}
	}
	// A record of the older layout is read whole: its history's epoch counts.
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := readRuns(dir, false)
	if err != nil || len(runs) != 1 || runs[0].rec == nil || runs[0].maxEpoch != 7 {
		t.Fatalf("readRuns of the older layout = %+v, %v; want the whole record, max epoch 7", runs, err)
	}
	// A damaged record is still reported, naming it.
	if err := os.WriteFile(path, []byte(`{"format":1,"runId":"r1","state":"committed","epoch":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRuns(dir, false); !errors.Is(err, ErrBadJournal) || !strings.Contains(err.Error(), path) {
		t.Fatalf("readRuns of a damaged record: %v; want ErrBadJournal naming %s", err, path)
	}
}

// Start-up passes over a finished run by its head: its items are not decoded
// (a committed record whose items would not decode does not stop recovery; undo
// and show read it whole and say so), its epochs still count, and an unfinished
// run is read whole and recovered.
func TestRecoverPassesOverFinishedRunsByHead(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	e := newEngine(t, dd)
	p := &Plan{Command: "set", Items: []Item{{Kind: KindSet, Path: "/a", Expect: version(t, dd, "/a"), After: []byte("new")}}}
	if _, err := e.Apply(ctx, p, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := e.JournalDir()
	rec := headRecord("20200101T000000.000000000Z-old0", StateCommitted)
	rec.History[1].Epoch = 1000
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), `"items":`)
	line, err := appendUpdateLine(nil, rec) // a format-2 record ends with its state
	if err != nil {
		t.Fatal(err)
	}
	damaged := string(b[:i]) + `"items":[{"kind":"no-such-kind"}]}` + "\n" + string(line)
	path := filepath.Join(dir, rec.RunID+recordSuffix)
	if err := os.WriteFile(path, []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Show(dir, rec.RunID); !errors.Is(err, ErrBadJournal) {
		t.Fatalf("Show of the record with a bad item: %v, want ErrBadJournal", err)
	}
	if _, err := newEngine(t, dd).Recover(ctx); err != nil {
		t.Fatalf("recover with a finished run whose items do not decode: %v", err)
	}
	if ep, err := readEpoch(dir); err != nil || ep < 1000 {
		t.Fatalf("epoch file %d (%v): the finished run's history epoch 1000 was not counted", ep, err)
	}
	// An unfinished run among finished ones is found and rolled back.
	un := headRecord("20300101T000000.000000000Z-unf0", StateApplying)
	un.Items[0].Item = Item{Kind: KindSet, Path: "/a", Expect: version(t, dd, "/a"), Before: []byte("new"), After: []byte("new")}
	un.Items[0].Status = StatusPending
	un.MetadataStore = e.store
	if err := syncer(nil).writeRecord(dir, un); err != nil {
		t.Fatal(err)
	}
	unf, err := Unfinished(dir)
	if err != nil || len(unf) != 1 || unf[0].RunID != un.RunID || unf[0].State != StateApplying {
		t.Fatalf("Unfinished = %+v, %v; want run %s applying", unf, err, un.RunID)
	}
	reports, err := newEngine(t, dd).Recover(ctx)
	if err != nil || len(reports) != 1 || reports[0].RunID != un.RunID || reports[0].State != StateRolledBack {
		t.Fatalf("Recover = %+v, %v; want run %s rolled back", reports, err, un.RunID)
	}
	if unf, err := Unfinished(dir); err != nil || len(unf) != 0 {
		t.Fatalf("Unfinished after recovery = %+v, %v; want none", unf, err)
	}
}

// wholeSummaries is List as it was before it read records by their ends: every
// record decoded whole. The oracle for List.
func wholeSummaries(t *testing.T, dir string) []RunSummary {
	t.Helper()
	files, err := recordFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []RunSummary
	for _, path := range files {
		rec, err := readRecord(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, summaryOf(rec, len(rec.Items), ""))
	}
	undone := undoneBy(out)
	for i := range out {
		out[i].UndoneBy = undone[out[i].RunID]
	}
	return out
}

// List reads each record by its ends and says what reading every record whole
// says, for runs in every state the engine leaves: committed, refused, undone, an
// undo undone (re-applied), and a format 1 record among them.
func TestListReadsRecordsByTheirEnds(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	e := newEngine(t, dd)
	set := func(after string) *Result {
		p := &Plan{Command: "set", Args: []string{after}, Flags: map[string]string{"k": "v"},
			Items: []Item{{Kind: KindSet, Path: "/a", Expect: version(t, dd, "/a"), After: []byte(after)}}}
		res, err := e.Apply(ctx, p, ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := set("one")
	set("two")
	stale := &Plan{Command: "set", Items: []Item{{Kind: KindSet, Path: "/a", Expect: 1, After: []byte("stale")}}}
	if _, err := e.Apply(ctx, stale, ApplyOptions{}); !errors.Is(err, store.ErrVersionMismatch) {
		t.Fatalf("stale plan: %v, want a refusal", err)
	}
	last := set("three")
	undo, err := e.Undo(ctx, last.RunID, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Undo(ctx, undo.RunID, ApplyOptions{}); err != nil { // re-applies "three"
		t.Fatal(err)
	}
	dir := e.JournalDir()
	old := `{"format":1,"runId":"20000101T000000.000000000Z-f1f1","command":"old","state":"committed","epoch":1,` +
		`"history":[],"items":[{"kind":"create","path":"/x","after":"eA==","status":"verified"},{"kind":"create","path":"/y","after":"eQ==","status":"verified"}]}`
	if err := os.WriteFile(filepath.Join(dir, "20000101T000000.000000000Z-f1f1"+recordSuffix), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := wholeSummaries(t, dir)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("List:\n%+v\nreading every record whole:\n%+v", got, want)
	}
	if len(got) != 7 || got[0].Items != 2 || got[1].RunID != first.RunID || got[5].UndoneBy == "" {
		t.Fatalf("List = %+v; want the format 1 run (2 items) first, then six runs with the undo of run %s undone", got, last.RunID)
	}
	files, _ := recordFiles(dir)
	for _, path := range files[1:] {
		if _, ok := readSummary(path); !ok {
			t.Errorf("%s was read whole, not by its ends", path)
		}
	}
}

// List does not decode items: a committed record whose items would not decode is
// listed from its ends (show and undo read it whole and say so), as recovery
// passes over it.
func TestListPassesOverItems(t *testing.T) {
	dir := t.TempDir()
	rec := headRecord("20200101T000000.000000000Z-old0", StateCommitted)
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	line, err := appendUpdateLine(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), `"items":`)
	damaged := string(b[:i]) + `"items":[{"kind":"no-such-kind"}]}` + "\n" + string(line)
	if err := os.WriteFile(filepath.Join(dir, rec.RunID+recordSuffix), []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := List(dir)
	if err != nil || len(runs) != 1 || runs[0].State != StateCommitted || runs[0].Items != 1 || runs[0].Command != "index backfill" {
		t.Fatalf("List = %+v, %v; want the committed run of 1 item", runs, err)
	}
	if _, err := Show(dir, rec.RunID); !errors.Is(err, ErrBadJournal) {
		t.Fatalf("Show: %v, want ErrBadJournal", err)
	}
}

// List closes every record it opens, the format 1 ones it then reads whole too.
func TestListClosesRecords(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count open files")
	}
	dir := t.TempDir()
	for i := range 50 {
		id := fmt.Sprintf("20000101T000000.%09dZ-f1f1", i)
		rec := `{"format":1,"runId":"` + id + `","command":"old","state":"committed","epoch":1,"history":[],"items":[]}`
		if err := os.WriteFile(filepath.Join(dir, id+recordSuffix), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := open()
	if runs, err := List(dir); err != nil || len(runs) != 50 {
		t.Fatalf("List = %d runs, %v", len(runs), err)
	}
	if after := open(); after > before {
		t.Fatalf("%d files open after List, %d before", after, before)
	}
}
