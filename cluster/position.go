package cluster

import "fmt"

// Position is one entry of a ledger, ledger:entry.
type Position struct {
	LedgerID int64 `json:"ledger_id"`
	EntryID  int64 `json:"entry_id"`
}

func (p Position) String() string { return fmt.Sprintf("%d:%d", p.LedgerID, p.EntryID) }

// Less orders positions by ledger, then entry.
func (p Position) Less(q Position) bool {
	return p.LedgerID < q.LedgerID || p.LedgerID == q.LedgerID && p.EntryID < q.EntryID
}
