package mutate

import (
	"strings"
	"testing"
)

// NewLedgers names exactly the ledger items' ledgers; the message names each and
// is empty when no ledger is written.
func TestLedgersNotOnBookies(t *testing.T) {
	items := []Item{
		{Kind: KindCreate, Path: "/ledgers/00/0000/L0061"},
		{Kind: KindLedger, LedgerID: 61},
		{Kind: KindDropLedger, LedgerID: 7},
		{Kind: KindLedger, LedgerID: 1234567890123},
		{Kind: KindSet, Path: "/schemas/a/b/c"},
	}
	ids := NewLedgers(items)
	if len(ids) != 2 || ids[0] != 61 || ids[1] != 1234567890123 {
		t.Fatalf("NewLedgers = %v, want [61 1234567890123]", ids)
	}
	msg := LedgersNotOnBookies(ids)
	for _, want := range []string{"2 new ledger(s) (61, 1234567890123)", "does not write to bookies"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if got := LedgersNotOnBookies(NewLedgers(items[4:])); got != "" {
		t.Errorf("no ledger written, message %q", got)
	}
}
