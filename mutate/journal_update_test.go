package mutate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// commitOne applies a one-node run and returns the engine, its record's path and
// the record as Show reads it.
func commitOne(t *testing.T, value string, items int) (*Engine, string, *RunRecord) {
	t.Helper()
	dd, _ := newDataDir(t)
	seed(t, dd)
	e := newEngine(t, dd)
	p := &Plan{Command: "set"}
	for i := range items {
		p.Items = append(p.Items, Item{Kind: KindCreate, Path: fmt.Sprintf("/u/%04d", i), After: []byte(value)})
	}
	res, err := e.Apply(ctx, p, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Show(e.JournalDir(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return e, filepath.Join(e.JournalDir(), res.RunID+recordSuffix), rec
}

// A commit is one update line appended to the record: the record line and its own
// update line still say applying, the appended one says committed with every
// item's outcome, and both the whole read and the head read see the committed run.
func TestCommitAppendsOneUpdateLine(t *testing.T) {
	_, path, rec := commitOne(t, "v", 3)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"state":"applying"`) ||
		!strings.HasPrefix(lines[1], `{"update":{"state":"applying"`) || !strings.HasPrefix(lines[2], `{"update":{"state":"committed"`) {
		t.Fatalf("record file has %d lines, want the applying record, its update line and the commit's:\n%s", len(lines), b)
	}
	if rec.State != StateCommitted || !rec.Verified || len(rec.History) != 2 {
		t.Fatalf("Show = state %s, verified %v, history %v", rec.State, rec.Verified, rec.History)
	}
	for i, it := range rec.Items {
		if it.Status != StatusVerified || it.Written == 0 {
			t.Errorf("item %d: status %s, written %d; want verified with its version", i, it.Status, it.Written)
		}
	}
	h, ok := readHead(path)
	if !ok || h.State != StateCommitted || len(h.History) != 2 {
		t.Fatalf("readHead = %+v, %v; want the committed state from the update line", h, ok)
	}
}

// A commit the crash cut short, torn or garbled, is not a commit: the run reads as
// applying, and the next start rolls it back. A damaged line with a good one after
// it is damage, reported.
func TestTornCommitReadsAsApplying(t *testing.T) {
	e, path, _ := commitOne(t, "v", 2)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	nl := bytes.LastIndexByte(b[:len(b)-1], '\n') // the end of the applying record's lines
	record, update := b[:nl+1], b[nl+1:]
	flipped := bytes.Clone(update)
	flipped[len(flipped)/2] ^= 0x01
	for name, tail := range map[string][]byte{
		"torn":            update[:len(update)/2],
		"torn at the end": update[:len(update)-1],
		"bad crc":         flipped,
		"zeros":           append(make([]byte, 300), '\n'),
	} {
		if err := os.WriteFile(path, append(bytes.Clone(record), tail...), 0o644); err != nil {
			t.Fatal(err)
		}
		rec, err := readRecord(path)
		if err != nil || rec.State != StateApplying || rec.Verified {
			t.Fatalf("%s: readRecord = %v, %v; want the run applying", name, rec, err)
		}
		if h, ok := readHead(path); ok && h.State != StateApplying {
			t.Fatalf("%s: readHead says %s", name, h.State)
		}
	}
	// A garbled line before a good one: damage, not a torn append.
	if err := os.WriteFile(path, append(append(bytes.Clone(record), flipped...), update...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRecord(path); !errors.Is(err, ErrBadJournal) {
		t.Fatalf("garbled line then a good one: %v, want ErrBadJournal", err)
	}
	// Torn: the next start rolls the run back, and the store is as before it.
	if err := os.WriteFile(path, append(bytes.Clone(record), update[:10]...), 0o644); err != nil {
		t.Fatal(err)
	}
	reports, err := e.Recover(ctx)
	if err != nil || len(reports) != 1 || reports[0].State != StateRolledBack {
		t.Fatalf("Recover = %+v, %v; want the run rolled back", reports, err)
	}
	rec, err := readRecord(path)
	if err != nil || rec.State != StateRolledBack {
		t.Fatalf("after recovery: %v, %v", rec, err)
	}
	if b, _ := os.ReadFile(path); bytes.Count(b, []byte{'\n'}) != 2 {
		t.Errorf("the rolled-back record was not rewritten whole (the record and its update line):\n%s", b)
	}
}

// A record larger than readHead's window is still passed over by its head when the
// update line fits the window; an update line larger than it is read whole.
func TestReadHeadOfLargeRecords(t *testing.T) {
	_, path, rec := commitOne(t, strings.Repeat("x", 2000), 100) // ~270 kB record, 3 kB update
	if fi, _ := os.Stat(path); fi.Size() < 64<<10 {
		t.Fatalf("record of %d bytes, want over 64 kB", fi.Size())
	}
	if h, ok := readHead(path); !ok || h.State != StateCommitted {
		t.Fatalf("readHead = %+v, %v; want committed from the window", h, ok)
	}
	_, path, rec = commitOne(t, "v", 12000) // the update line alone is over headWindow
	if h, ok := readHead(path); ok && h.State != StateCommitted {
		t.Fatalf("readHead of a record whose update is over the window = %+v", h)
	}
	runs, err := readRuns(filepath.Dir(path), false)
	if err != nil || len(runs) != 1 || runs[0].state != StateCommitted || rec.State != StateCommitted {
		t.Fatalf("readRuns = %+v, %v; want the run committed", runs, err)
	}
}

// Format 1 records (one JSON value, no update lines) are read as before; data
// after one is damage.
func TestFormatOneRecordsStillRead(t *testing.T) {
	dir := t.TempDir()
	rec := headRecord("r1", StateCommitted)
	rec.Format = oldJournalFormat
	if err := syncer(nil).writeRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	got, err := Show(dir, "r1")
	if err != nil || got.State != StateCommitted || got.Items[0].Written != 3 {
		t.Fatalf("Show of a format 1 record = %+v, %v", got, err)
	}
	if h, ok := readHead(filepath.Join(dir, "r1.json")); !ok || h.State != StateCommitted {
		t.Fatalf("readHead of a format 1 record = %+v, %v", h, ok)
	}
	path := filepath.Join(dir, "r1.json")
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(b, []byte(`{"update":{}}`+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Show(dir, "r1"); !errors.Is(err, ErrBadJournal) {
		t.Fatalf("a format 1 record with an update line: %v, want ErrBadJournal", err)
	}
}
