package mutate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/formats/crc32c"
)

// writeHeadRecords journals n finished records (every third refused, the rest
// committed) and returns their paths in run-id order.
func writeHeadRecords(t testing.TB, dir string, n int) []string {
	t.Helper()
	var paths []string
	for i := range n {
		state := StateCommitted
		if i%3 == 2 {
			state = StateRefused
		}
		rec := headRecord(fmt.Sprintf("20261201T090000.%09dZ-aaaa", i), state)
		rec.History[1].Epoch = uint64(10 + i)
		if err := syncer(nil).writeRecord(dir, rec); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, rec.RunID+recordSuffix))
	}
	return paths
}

// damageInPlace overwrites the file's bytes with as many of garbage, in the same
// inode, and gives it back its modification time: only the heads file's view of
// it stays the same.
func damageInPlace(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Repeat([]byte("#"), int(fi.Size())), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// A writable start lists the finished records in the heads file; the next start
// does not read them (a record damaged behind the cache's back, same inode, size
// and time, goes unread), and reads again any record whose inode, size or time
// changed.
func TestHeadsSpareTheReadsOfUnchangedRecords(t *testing.T) {
	dir := t.TempDir()
	paths := writeHeadRecords(t, dir, 5)
	want, err := readRuns(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, headsFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read without keepHeads wrote the heads file: %v", err)
	}
	if got, err := readRuns(dir, true); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("readRuns(keep) = %+v, %v; want %+v", got, err, want)
	}
	heads := readHeads(dir)
	if len(heads) != len(paths) {
		t.Fatalf("heads file holds %d records, want %d", len(heads), len(paths))
	}
	for i, p := range paths {
		if c := heads[filepath.Base(p)]; c.state != want[i].state || c.maxEpoch != want[i].maxEpoch {
			t.Fatalf("heads of %s = %+v, want state %s, max epoch %d", p, c, want[i].state, want[i].maxEpoch)
		}
	}

	good, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	damageInPlace(t, paths[1])
	if got, err := readRuns(dir, true); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("readRuns with the heads file read a listed record: %+v, %v", got, err)
	}
	// Without the heads file the damage shows.
	os.Remove(filepath.Join(dir, headsFileName))
	if _, err := readRuns(dir, false); !errors.Is(err, ErrBadJournal) {
		t.Fatalf("readRuns without the heads file: %v; want ErrBadJournal", err)
	}
	original := func() { // the record as written, listed again, then damaged behind the list's back
		t.Helper()
		fi, _ := os.Stat(paths[1])
		if err := os.WriteFile(paths[1], good, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(paths[1], fi.ModTime(), fi.ModTime())
		os.Remove(filepath.Join(dir, headsFileName))
		if _, err := readRuns(dir, true); err != nil {
			t.Fatalf("record restored: %v", err)
		}
		damageInPlace(t, paths[1])
		if _, err := readRuns(dir, false); err != nil {
			t.Fatalf("damage in place was read: %v", err)
		}
	}
	changes := map[string]func(path string){
		"size": func(path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("#"))
			f.Close()
		},
		"time": func(path string) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(path, later, later); err != nil {
				t.Fatal(err)
			}
		},
		"inode": func(path string) { // replaced by rename, as the journal replaces records
			fi, _ := os.Stat(path)
			data, _ := os.ReadFile(path)
			tmp := path + ".new"
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		},
	}
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		original()
		changes[name](paths[1])
		if _, err := readRuns(dir, false); !errors.Is(err, ErrBadJournal) {
			t.Errorf("record's %s changed: readRuns = %v; want it read again (ErrBadJournal)", name, err)
		}
	}
}

// The heads file is kept current by writable starts only, and a start that finds
// it current does not write it.
func TestHeadsRewrittenOnlyWhenStale(t *testing.T) {
	dir := t.TempDir()
	writeHeadRecords(t, dir, 3)
	heads := filepath.Join(dir, headsFileName)
	if _, err := readRuns(dir, true); err != nil {
		t.Fatal(err)
	}
	fi1, err := os.Stat(heads)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(heads, old, old)
	if _, err := readRuns(dir, true); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(heads); !fi.ModTime().Equal(old) {
		t.Fatalf("a start with a current heads file rewrote it (%v, was %v)", fi.ModTime(), fi1.ModTime())
	}
	// A new finished record, and one removed: both make it stale.
	paths := writeHeadRecords(t, dir, 4)
	if _, err := readRuns(dir, true); err != nil {
		t.Fatal(err)
	}
	if h := readHeads(dir); len(h) != 4 {
		t.Fatalf("after a new record the heads file holds %d, want 4", len(h))
	}
	os.Remove(paths[0])
	if _, err := readRuns(dir, true); err != nil {
		t.Fatal(err)
	}
	if h := readHeads(dir); len(h) != 3 || h[filepath.Base(paths[0])] != (cachedHead{}) {
		t.Fatalf("after a record was removed the heads file holds %d: %v", len(h), h)
	}
	// A dry run's read leaves a stale heads file as it is.
	writeHeadRecords(t, dir, 6)
	before, _ := os.ReadFile(heads)
	if _, err := Unfinished(dir); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(heads); !bytes.Equal(before, after) {
		t.Fatal("Unfinished (a dry run's read) wrote the heads file")
	}
}

// An unfinished run is never listed, so it is always read whole and recovered,
// whatever the heads file says of the runs before it; recovery then lists it
// finished.
func TestHeadsNeverHideAnUnfinishedRun(t *testing.T) {
	dd, _, e, res := appliedSample(t)
	if _, err := newEngine(t, dd).Recover(ctx); err != nil { // lists the committed run
		t.Fatal(err)
	}
	e = newEngine(t, dd)
	if !crashAt(t, e.JournalDir(), "journaled")(func() { e.Undo(ctx, res.RunID, ApplyOptions{}) }) {
		t.Fatal("no crash")
	}
	if h := readHeads(e.JournalDir()); len(h) != 1 {
		t.Fatalf("heads file holds %d runs before recovery, want the committed one", len(h))
	}
	reports, err := newEngine(t, dd).Recover(ctx)
	if err != nil || len(reports) != 1 || reports[0].State != StateRolledBack {
		t.Fatalf("recover = %+v, %v; want the unfinished run rolled back", reports, err)
	}
	h := readHeads(e.JournalDir())
	if len(h) != 2 || h[reports[0].RunID+recordSuffix].state != StateRolledBack {
		t.Fatalf("heads after recovery = %v; want both runs, the recovered one rolled back", h)
	}
}

// A heads file damaged anywhere (a flipped bit, cut short, a line that does not
// parse, a state that is not finished) is not used: start-up reads the records.
func TestHeadsDamagedAreIgnored(t *testing.T) {
	dir := t.TempDir()
	paths := writeHeadRecords(t, dir, 3)
	if _, err := readRuns(dir, true); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, headsFileName))
	if err != nil {
		t.Fatal(err)
	}
	damageInPlace(t, paths[0]) // shows only when the heads file is not used
	var bad [][]byte
	for i := range len(good) * 8 {
		b := bytes.Clone(good)
		b[i/8] ^= 1 << (i % 8)
		bad = append(bad, b)
	}
	for n := range len(good) {
		bad = append(bad, good[:n])
	}
	unfinished := bytes.Replace(good, []byte("\tcommitted\t"), []byte("\tapplying\t"), 1)
	bad = append(bad, fixCRC(t, unfinished), fixCRC(t, bytes.Replace(good, []byte("\t"), []byte(" "), 1)))
	for i, b := range bad {
		if heads, err := decodeHeads(b); err == nil {
			t.Fatalf("damage %d decoded: %q -> %v", i, b, heads)
		}
		if err := os.WriteFile(filepath.Join(dir, headsFileName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readRuns(dir, false); !errors.Is(err, ErrBadJournal) {
			t.Fatalf("damage %d (%q) was used: %v", i, b, err)
		}
	}
}

// fixCRC gives a heads file whose lines were edited the checksum they now have.
func fixCRC(t *testing.T, b []byte) []byte {
	t.Helper()
	i := bytes.LastIndex(b, []byte("crc32c\t"))
	return fmt.Appendf(bytes.Clone(b[:i]), "crc32c\t%d\n", crc32c.Checksum(b[:i]))
}
