package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/store"
)

// walkNodes is cluster.WalkNodes: a walk that survives truncated values.
func walkNodes(ctx context.Context, ms store.MetadataStore, prefix string, fn func(store.Node) error, bad func(*store.TruncatedError) error) error {
	return cluster.WalkNodes(ctx, ms, prefix, fn, bad)
}

// streamLedger is LedgerStore.Entries from entry id from to the end of a ledger
// that survives truncated values: each one is passed to bad and the stream
// resumes after it.
func streamLedger(ctx context.Context, ls store.LedgerStore, ledgerID, from int64, fn func(entryID int64, value []byte) error, bad func(*store.TruncatedError) error) error {
	for {
		err := ls.Entries(ctx, ledgerID, from, -1, fn)
		var te *store.TruncatedError
		// The bad entry's id must lie ahead, or the next round would not get past it.
		if !errors.As(err, &te) || te.Path != "" || te.LedgerID != ledgerID || te.EntryID < from || te.EntryID+1 < 0 {
			return err
		}
		if err := bad(te); err != nil {
			return err
		}
		from = te.EntryID + 1
	}
}

// truncatedDetail describes a truncated value without naming its key, for a
// finding located at the key.
func truncatedDetail(te *store.TruncatedError) string {
	return fmt.Sprintf("%v (read %d of about %d bytes)", store.ErrTruncatedValue, te.Read, te.Size)
}
