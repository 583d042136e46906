package mutate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzJournalRecord feeds arbitrary bytes to the journal reader: it must return a
// record or an error, never panic, and what it accepts must survive the code that
// recovery and undo run on it.
func FuzzJournalRecord(f *testing.F) {
	rec := RunRecord{
		Format: JournalFormat, RunID: "r1", Command: "c", State: StateCommitted, Epoch: 3,
		Items: []JournalItem{
			{Item: Item{Kind: KindSet, Path: "/a", Expect: 2, Before: []byte("x"), After: []byte("y")}, Status: StatusVerified, Written: 5},
			{Item: Item{Kind: KindLedger, LedgerID: 9, Entries: []LedgerEntry{{0, []byte("e")}}}, Status: StatusVerified},
			{Item: Item{Kind: KindDelete, Path: "/d", Expect: 1, Before: []byte("z")}, Status: StatusApplied},
		},
	}
	seedJSON, _ := json.Marshal(rec)
	f.Add(seedJSON)
	f.Add([]byte(`{"format":1,"runId":"r1","state":"applying","items":[{"kind":"create","path":"/x"}]}`))
	f.Add([]byte(`{"format":1,"runId":"r1","state":"weird"}`))
	f.Add([]byte(`{"format":1,"runId":"r1","state":"applying","items":[{"kind":"ledger","ledgerId":-4}]}`))
	f.Add([]byte(`not json`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, "r1.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Show(dir, "r1")
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
