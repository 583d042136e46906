package mutate

import (
	"context"
	"errors"
	"testing"
)

// TestBookieLedgerPlan: a bookie-ledger item is refused, before anything is
// written, by a plan check (its fields) and by a ledger store that cannot write
// to bookies; its undo is the delete of its node at the version the run wrote.
func TestBookieLedgerPlan(t *testing.T) {
	ok := Item{Kind: KindBookieLedger, LedgerID: 7, Path: "/ledgers/00/0000/L0007", Open: []byte("open"), After: []byte("closed"),
		Entries: []LedgerEntry{{EntryID: 0, Value: []byte("e")}}}
	for name, it := range map[string]Item{
		"no open bytes":   {Kind: KindBookieLedger, LedgerID: 7, Path: ok.Path, After: ok.After, Entries: ok.Entries},
		"no path":         {Kind: KindBookieLedger, LedgerID: 7, Open: ok.Open, After: ok.After, Entries: ok.Entries},
		"before-image":    {Kind: KindBookieLedger, LedgerID: 7, Path: ok.Path, Open: ok.Open, After: ok.After, Before: []byte("x")},
		"entry ids gap":   {Kind: KindBookieLedger, LedgerID: 7, Path: ok.Path, Open: ok.Open, After: ok.After, Entries: []LedgerEntry{{EntryID: 1}}},
		"negative ledger": {Kind: KindBookieLedger, LedgerID: -1, Path: ok.Path, Open: ok.Open, After: ok.After},
	} {
		p := &Plan{Command: "test", Items: []Item{it}}
		if err := p.Validate(); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: Validate = %v, want ErrInvalidPlan", name, err)
		}
	}
	dup := &Plan{Command: "test", Items: []Item{ok, {Kind: KindCreate, Path: ok.Path, After: []byte("x")}}}
	if err := dup.Validate(); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("a bookie ledger and a create of its node: Validate = %v", err)
	}

	dd, _ := newDataDir(t)
	e := newEngine(t, dd)
	before := dump(t, dd)
	_, err := e.Apply(context.Background(), &Plan{Command: "test", Items: []Item{ok}}, ApplyOptions{})
	if !errors.Is(err, ErrInvalidPlan) {
		t.Fatalf("a bookie ledger on the data dir's ledger store: %v, want ErrInvalidPlan", err)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Fatalf("the refused run wrote: %s", d)
	}

	inv := inversePlan(&RunRecord{RunID: "r", Command: "test", Items: []JournalItem{{Item: ok, Written: 2}}})
	if len(inv.Items) != 1 || inv.Items[0].Kind != KindDelete || inv.Items[0].Path != ok.Path || inv.Items[0].Expect != 2 ||
		string(inv.Items[0].Before) != "closed" || inv.Validate() != nil {
		t.Fatalf("undo of a bookie ledger: %+v", inv.Items)
	}
}
