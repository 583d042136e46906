package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ledgermedic/ledgermedic/store"
)

// walkNodes is MetadataStore.Walk that survives values truncated by a damaged
// value log: it reports each one to bad and resumes the walk after it.
func walkNodes(ctx context.Context, ms store.MetadataStore, prefix string, fn func(store.Node) error, bad func(*store.TruncatedError) error) error {
	err := ms.Walk(ctx, prefix, fn)
	for start := ""; err != nil; {
		te, ok := truncatedNode(err, prefix, start)
		if !ok {
			return err
		}
		if err := bad(te); err != nil {
			return err
		}
		start = te.Path + "\x00" // the next path
		err = ms.WalkFrom(ctx, prefix, start, fn)
	}
	return nil
}

// truncatedNode returns the truncated node a walk of prefix from start stopped
// at, telling it from a truncated value fn met reading another node.
func truncatedNode(err error, prefix, start string) (*store.TruncatedError, bool) {
	var te *store.TruncatedError
	if !errors.As(err, &te) || te.Path == "" || !strings.HasPrefix(te.Path, prefix) || te.Path < start {
		return nil, false
	}
	return te, true
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
