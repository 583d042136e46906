package mutate

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/ledgermedic/ledgermedic/store"
)

// Bookie-ledger items (KindBookieLedger) put a restored ledger on live bookies in
// BookKeeper's safe order (docs/formats.md, "Writing a ledger to live bookies"):
//
//  1. the metadata node created OPEN: a bookie's garbage collector deletes any
//     ledger it holds that has no node (ScanAndCompareGarbageCollector);
//  2. each entry added to every bookie of its write set, each answering EOK;
//  3. the node compare-and-set to CLOSED;
//  4. every copy read back and compared;
//
// and all of it before the run's node step, so no locator the run writes ever
// names a ledger that a broker's recovery open cannot read. The run is journaled
// as applying before step 1, so a crash anywhere is rolled back by the next
// start: the node, OPEN or CLOSED, with or without entries, is deleted.
// Crash points: "item-I-created", "item-I-add-K" after the K-th bookie's EOK,
// "item-I-closed", and "item-I" once read back.

// bookieWriter is the ledger store as a writer of live ledgers.
func (e *Engine) bookieWriter(it *Item) (store.BookieWriter, error) {
	bw, ok := e.dd.Ledgers.(store.BookieWriter)
	if !ok {
		return nil, fmt.Errorf("%s: the ledger store does not write to bookies (give --ledgers bk:): %w", it.label(), ErrInvalidPlan)
	}
	return bw, nil
}

func payloads(entries []LedgerEntry) [][]byte {
	out := make([][]byte, len(entries))
	for i, e := range entries {
		out[i] = nonNil(e.Value)
	}
	return out
}

// writeBookieLedger runs steps 1 to 4 for item i.
func (e *Engine) writeBookieLedger(ctx context.Context, rec *RunRecord, i int) error {
	it := &rec.Items[i]
	fail := func(err error) error {
		it.Status, it.Reason = StatusFailed, err.Error()
		return fmt.Errorf("item %d (%s): %w", i, it.label(), err)
	}
	bw, err := e.bookieWriter(&it.Item)
	if err != nil {
		return fail(err)
	}
	if err := e.beforeStep(ctx, rec, it); err != nil {
		return err
	}
	md := e.dd.Metadata
	v, err := md.CompareAndSet(it.Path, 0, it.Open)
	if err != nil {
		return fail(fmt.Errorf("create metadata node %s (OPEN): %w", it.Path, err))
	}
	e.crashPoint("item-%d-created", i)
	adds := 0
	err = bw.AddEntries(ctx, it.LedgerID, it.Open, payloads(it.Entries), func(int64, string) {
		e.crashPoint("item-%d-add-%d", i, adds)
		adds++
	})
	if err != nil {
		return fail(fmt.Errorf("add entries: %w", err))
	}
	if err := e.beforeStep(ctx, rec, it); err != nil {
		return err
	}
	if v, err = md.CompareAndSet(it.Path, v, it.After); err != nil {
		return fail(fmt.Errorf("close: metadata node %s: %w", it.Path, err))
	}
	it.Written = v
	e.crashPoint("item-%d-closed", i)
	if err := bw.ReadBack(ctx, it.LedgerID, it.After, payloads(it.Entries)); err != nil {
		return fail(err)
	}
	it.Status = StatusApplied
	e.crashPoint("item-%d", i)
	return nil
}

// preflightBookieLedger: the node must not exist yet, and the store must write
// to bookies.
func (e *Engine) preflightBookieLedger(it *Item) (string, error) {
	if _, err := e.bookieWriter(it); err != nil {
		return "", err
	}
	n, err := e.dd.Metadata.Get(it.Path)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("ledger %d: metadata node %s already exists (version %d)", it.LedgerID, it.Path, n.Version), nil
}

// verifyBookieLedger: the node holds the CLOSED bytes (the copies were read back
// when written).
func (e *Engine) verifyBookieLedger(it *Item) (string, error) {
	n, err := e.dd.Metadata.Get(it.Path)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Sprintf("ledger %d: metadata node %s is gone", it.LedgerID, it.Path), nil
	}
	if err != nil {
		return "", fmt.Errorf("verify ledger %d: %w", it.LedgerID, err)
	}
	if !bytes.Equal(n.Value, it.After) {
		return fmt.Sprintf("ledger %d: metadata node %s does not hold what the run wrote", it.LedgerID, it.Path), nil
	}
	return "", nil
}

// rollbackBookieLedger deletes the ledger's node when it holds what the run
// wrote (OPEN or CLOSED). The ledger's id came from the cluster's generator, so
// no one else names it; a node holding other bytes (a recovery open moved it to
// IN_RECOVERY or closed it) is left and reported.
func (e *Engine) rollbackBookieLedger(it *JournalItem) (string, error) {
	md := e.dd.Metadata
	n, err := md.Get(it.Path)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !bytes.Equal(n.Value, it.Open) && !bytes.Equal(n.Value, it.After) {
		return fmt.Sprintf("ledger %d: metadata node %s changed by someone else; not deleted", it.LedgerID, it.Path), nil
	}
	return "", md.CompareAndDelete(it.Path, n.Version)
}
