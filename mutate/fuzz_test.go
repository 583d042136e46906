package mutate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ledgermedic/ledgermedic/formats/crc32c"
)

// FuzzJournalRecord feeds arbitrary bytes to the journal reader: it must return a
// record or an error, never panic, and what it accepts must survive the code that
// recovery and undo run on it.
func FuzzJournalRecord(f *testing.F) {
	rec := RunRecord{
		Format: JournalFormat, RunID: "r1", Command: "c", runOutcome: runOutcome{State: StateCommitted}, Epoch: 3,
		Items: []JournalItem{
			{Item: Item{Kind: KindSet, Path: "/a", Expect: 2, Before: []byte("x"), After: []byte("y")}, Status: StatusVerified, Written: 5},
			{Item: Item{Kind: KindLedger, LedgerID: 9, Entries: []LedgerEntry{{0, []byte("e")}}}, Status: StatusVerified},
			{Item: Item{Kind: KindDelete, Path: "/d", Expect: 1, Before: []byte("z")}, Status: StatusApplied},
		},
	}
	seedJSON, _ := json.Marshal(rec)
	f.Add(seedJSON)
	// As written: the record, its update line, and a commit's appended update line.
	written, _ := appendUpdateLine(append(bytes.Clone(seedJSON), '\n'), &rec)
	f.Add(written)
	committed := rec
	committed.History = []StateChange{{State: StateApplying, Epoch: 3}, {State: StateCommitted, Epoch: 3}}
	withCommit, _ := appendUpdateLine(bytes.Clone(written), &committed)
	f.Add(withCommit)
	f.Add(withCommit[:len(withCommit)-7])
	f.Add([]byte(`{"format":1,"runId":"r1","state":"applying","items":[{"kind":"create","path":"/x"}]}`))
	f.Add([]byte(`{"format":1,"runId":"r1","state":"weird"}`))
	f.Add([]byte(`{"format":1,"runId":"r1","state":"applying","items":[{"kind":"ledger","ledgerId":-4}]}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"format":1,"runId":"r1","state":"committed","epoch":2,"history":[{"state":"committed","epoch":5}],"items":[]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, "r1.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Show(dir, "r1")
		// What readHead and readSummary vouch for is what the whole record says,
		// for records as writeRecord and commits write them. Left out: keys repeated
		// or after the items, and a last update line of another item count than
		// the record's items (the ends are read so that the items are not: items
		// changed after they were written are for the whole read, Show and undo, to
		// find).
		asWritten := err == nil && !repeatsKey(data) && !keyAfterItems(data) && lastLineCounts(data, len(got.Items))
		if h, ok := readHead(filepath.Join(dir, "r1.json")); ok && asWritten {
			whole := recordHead{Epoch: got.Epoch, History: got.History}
			if h.State != got.State || h.RunID != got.RunID || h.maxEpoch() != whole.maxEpoch() {
				t.Fatalf("head %+v disagrees with the record: state %s, max epoch %d", h, got.State, whole.maxEpoch())
			}
		}
		if sum, ok := readSummary(filepath.Join(dir, "r1.json")); ok && asWritten {
			if want := summaryOf(got, len(got.Items), ""); !reflect.DeepEqual(sum, want) {
				t.Fatalf("summary from the ends %+v, from the whole record %+v", sum, want)
			}
		}
		if err != nil {
			if !errors.Is(err, ErrBadJournal) {
				t.Fatalf("error %v does not wrap ErrBadJournal", err)
			}
			return
		}
		if _, err := List(dir); err != nil {
			t.Fatalf("Show accepted what List refuses: %v", err)
		}
		resultOf(got)
		if got.State == StateCommitted {
			inversePlan(got).Validate()
		}
	})
}

// lastLineCounts: data's last line is not an update line, or one of items items.
func lastLineCounts(data []byte, items int) bool {
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	_, n, err := parseUpdateOutcome(lines[len(lines)-1], true)
	return err != nil || n == items
}

// keyAfterItems reports a top-level key after "items" (writeRecord puts items last).
func keyAfterItems(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	items := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return true
		}
		if items {
			return true
		}
		items = t == "items"
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return true
		}
	}
	return false
}

// repeatsKey reports a top-level key that occurs twice, compared as
// encoding/json matches them (case-insensitively).
func repeatsKey(data []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false // not an object: readHead refuses it anyway
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return true
		}
		if seen[strings.ToLower(k)] {
			return true
		}
		seen[strings.ToLower(k)] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return true
		}
	}
	return false
}

// FuzzArrayLen: arrayLen counts what encoding/json reads as the elements of a
// valid array (or null), and never panics.
func FuzzArrayLen(f *testing.F) {
	for _, s := range []string{`[]`, `null`, ` [1, "a,]", {"b":[2,3]}, [], null]`, `[{"status":"verified"},{"status":"applied","written":5}]`, `[1,,2]`, `[1 2]`, `[`, `["\"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := arrayLen(data, 0)
		var elems []json.RawMessage
		if json.Unmarshal(data, &elems) != nil {
			return // not an array: any error or count will do (the CRC-checked update lines are)
		}
		if err != nil || n != len(elems) {
			t.Fatalf("arrayLen(%q) = %d, %v; encoding/json reads %d elements", data, n, err, len(elems))
		}
	})
}

// FuzzObjectPrefix: on any bytes objectPrefix returns without panicking, and on
// a JSON object it returns exactly the fields before the stop key, as
// encoding/json's own tokenizer reads them, in order.
func FuzzObjectPrefix(f *testing.F) {
	f.Add([]byte(`{"format":2,"runId":"r","history":[{"state":"a","note":"}]\"items\":"}],"items":[1,2]}`), "items")
	f.Add([]byte(` { "a" : { "b" : [ 1, "x\"" ] } , "c":null,"d":true}`), "c")
	f.Add([]byte(`{"a":1}`), "items")
	f.Add([]byte(`{}`), "items")
	f.Add([]byte(`{"a":"\u0041\\","items":`), "items")
	f.Add([]byte(`{"a":1 "b":2}`), "b")
	f.Fuzz(func(t *testing.T, data []byte, stop string) {
		prefix, keys, value, err := objectPrefix(data, stop)
		want, wantKeys, complete := fieldsBefore(data, stop)
		if !complete {
			return // not a valid object up to stop: any answer but a panic will do
		}
		if err != nil {
			t.Fatalf("objectPrefix(%q, %q): %v; the fields before it are %s", data, stop, err, want)
		}
		if value >= 0 && data[value-1] != ':' {
			t.Fatalf("objectPrefix(%q, %q): stop's value at %d, not after its colon", data, stop, value)
		}
		got, gotKeys, ok := fieldsBefore(prefix, "\x00none")
		if !ok || got != want || strings.Join(gotKeys, ",") != strings.Join(wantKeys, ",") || strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
			t.Fatalf("objectPrefix(%q, %q) = %q (keys %q); want the fields %s (keys %q)", data, stop, prefix, keys, want, wantKeys)
		}
	})
}

// fieldsBefore reads data's top-level fields up to key stop (or the object's end)
// with encoding/json and returns them compacted, with their keys. complete: data is
// an object of plain keys (no escapes; valid UTF-8, which encoding/json would
// otherwise replace) that is valid up to there.
func fieldsBefore(data []byte, stop string) (fields string, keys []string, complete bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", nil, false
	}
	var b strings.Builder
	for {
		if !dec.More() {
			if t, err := dec.Token(); err != nil || t != json.Delim('}') {
				return "", nil, false
			}
			break
		}
		at := dec.InputOffset()
		t, err := dec.Token()
		k, isKey := t.(string)
		raw := data[at:dec.InputOffset()]
		if err != nil || !isKey || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			return "", nil, false
		}
		if k == stop {
			// objectPrefix also says where stop's value starts: it needs the colon.
			if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) == 0 || rest[0] != ':' {
				return "", nil, false
			}
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", nil, false
		}
		var c bytes.Buffer
		if json.Compact(&c, v) != nil {
			return "", nil, false
		}
		keys = append(keys, k)
		fmt.Fprintf(&b, "%q:%s;", k, c.String())
	}
	return b.String(), keys, true
}

// FuzzHeads feeds arbitrary bytes to the heads file's decoder: it returns heads or
// an error, never panics; what it accepts lists only finished runs under names
// the file can hold, and encodes back to the same bytes (names in order).
func FuzzHeads(f *testing.F) {
	heads := map[string]cachedHead{
		"20261201T090000.000000001Z-aaaa.json": {id: 12, size: 1420, mtime: 1796145247539237230, state: StateCommitted, maxEpoch: 4},
		"20261201T090000.000000002Z-aaaa.json": {id: 13, size: 99, mtime: -1, state: StateRolledBack, maxEpoch: 0},
	}
	good := encodeHeads(slices.Sorted(maps.Keys(heads)), heads)
	f.Add(good)
	f.Add(encodeHeads(nil, nil))
	f.Add(good[:len(good)-3])
	f.Add([]byte(headsMagic + "a.json\t1\t2\t3\tapplying\t4\ncrc32c\t0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkHeads(t, data)
		// The same bytes as the lines of a file whose checksum holds, which a
		// mutated file rarely has: the line parser gets the fuzzer's bytes too.
		sealed := append([]byte(headsMagic), data...)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			sealed = append(sealed, '\n')
		}
		checkHeads(t, fmt.Appendf(sealed, "crc32c\t%d\n", crc32c.Checksum(sealed)))
	})
}

// checkHeads: decodeHeads of data accepts only finished runs under names a heads
// file can hold, and what it accepts encodes back to heads that decode the same.
func checkHeads(t *testing.T, data []byte) {
	got, err := decodeHeads(data)
	if err != nil {
		return
	}
	for name, c := range got {
		if !cacheableName(name) || !c.state.Finished() || c.size < 0 {
			t.Fatalf("accepted %q: %+v", name, c)
		}
	}
	names := headNames(data)
	if len(names) != len(got) {
		return // a name listed twice: the last line counts
	}
	if back := encodeHeads(names, got); !bytes.Equal(back, data) {
		// Numbers with leading zeros or a sign decode to the same heads.
		again, err := decodeHeads(back)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("re-encoded %q -> %q: %v", data, back, err)
		}
	}
}

// headNames are the record names of a heads file that decodes, in file order.
func headNames(data []byte) []string {
	var names []string
	lines := strings.Split(string(data[len(headsMagic):]), "\n")
	for _, l := range lines[:len(lines)-2] { // the checksum line, and after its newline
		name, _, _ := strings.Cut(l, "\t")
		names = append(names, name)
	}
	return names
}
