package mutate

import (
	"context"
	"errors"
	"fmt"

	"github.com/ledgermedic/ledgermedic/store"
)

// A run writes in few durable steps: each step is one store transaction with one
// commit (one fsync). The steps go in the only order that is safe at every crash
// point, whatever the order of the plan's items:
//
//  1. new ledgers on live bookies (KindBookieLedger, bookies.go), then the entries
//     of new ledgers (KindLedger), so no node written next refers to a ledger
//     without entries;
//  2. every node change (set, create, delete), as one atomic compare-and-set of all
//     the run's nodes; a node changed since the plan was read makes the whole step
//     write nothing;
//  3. ledgers to drop (KindDropLedger), once no node written in step 2 refers to them.
//
// A step larger than stepBytes, or than the store takes in one transaction, is split.
// Atomicity of the run as a whole still comes from the journal: a run that stops
// between steps is rolled back from its before-images.

// stepBytes bounds the bytes (keys and values) of one step: under what one
// transaction of the store's writable Badger options holds (15% of its memtable:
// 2.4 MB at 16 MB, 1.2 MB at 8 MB), so splitting on store.ErrBatchTooBig is rare.
// Engine.StepBytes overrides it (tests: one item per step).
const stepBytes = 1 << 20

// stepOverhead is what a step counts per key on top of its key and value bytes.
const stepOverhead = 32

// nodeStore is the batched view of the metadata store the engine writes through.
func (e *Engine) nodeStore() (store.NodeBatcher, bool) {
	return store.BatchNodes(e.dd.Metadata)
}

// checkNodeSizes refuses a run that writes a node over the store's size limit
// before anything is written: the store would refuse it only at its step, after
// the steps before it were written (and then rolled back).
func (e *Engine) checkNodeSizes(rec *RunRecord) error {
	l, ok := e.dd.Metadata.(store.NodeSizeLimiter)
	if !ok {
		return nil
	}
	for i := range rec.Items {
		it := &rec.Items[i].Item
		if it.Kind != KindSet && it.Kind != KindCreate {
			continue
		}
		if err := l.CheckNodeSize(it.Path, len(it.After)); err != nil {
			return fmt.Errorf("item %d (%s): %w", i, it.label(), err)
		}
	}
	return nil
}

// entryStore is the batched view of the ledger store.
func (e *Engine) entryStore() store.EntryBatcher {
	return store.BatchEntries(e.dd.Ledgers)
}

// applyItems writes every item, in the steps described above. The first failure
// stops it; the caller rolls back.
func (e *Engine) applyItems(ctx context.Context, rec *RunRecord) error {
	var bookies, ledgers, nodes, drops []int
	for i := range rec.Items {
		switch rec.Items[i].Kind {
		case KindBookieLedger:
			bookies = append(bookies, i)
		case KindLedger:
			ledgers = append(ledgers, i)
		case KindDropLedger:
			drops = append(drops, i)
		default:
			nodes = append(nodes, i)
		}
	}
	done := 0
	progress := func(n int) {
		done += n
		if e.Progress != nil && n > 0 {
			e.Progress(done, len(rec.Items))
		}
	}
	for _, i := range bookies {
		if err := e.writeBookieLedger(ctx, rec, i); err != nil {
			return err
		}
		progress(1)
	}
	if err := e.writeLedgers(ctx, rec, ledgers, progress); err != nil {
		return err
	}
	_, atomic := e.nodeStore()
	for _, step := range nodeSteps(rec, nodes, atomic, e.stepLimit()) {
		if err := e.writeNodes(ctx, rec, step); err != nil {
			return err
		}
		progress(len(step))
	}
	for _, i := range drops {
		it := &rec.Items[i]
		if err := e.beforeStep(ctx, rec, it); err != nil {
			return err
		}
		if err := e.dd.Ledgers.DeleteLedgerEntries(it.LedgerID); err != nil {
			it.Status, it.Reason = StatusFailed, err.Error()
			return fmt.Errorf("item %d (%s): %w", i, it.label(), err)
		}
		it.Status = StatusApplied
		e.crashPoint("item-%d", i)
		progress(1)
	}
	return nil
}

// beforeStep stops a run that was cancelled or fenced before its next write.
func (e *Engine) beforeStep(ctx context.Context, rec *RunRecord, next *JournalItem) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("before %s: %w", next.label(), err)
	}
	return e.checkEpoch(rec.Epoch)
}

// entryRef names one entry of a ledger item.
type entryRef struct{ item, entry int }

// writeLedgers writes the entries of the new ledgers in steps of at most stepBytes.
func (e *Engine) writeLedgers(ctx context.Context, rec *RunRecord, items []int, progress func(int)) error {
	var step []entryRef
	size := 0
	flush := func() error {
		if len(step) == 0 {
			return nil
		}
		err := e.writeEntries(ctx, rec, step)
		step, size = nil, 0
		return err
	}
	for _, i := range items {
		it := &rec.Items[i]
		for j, en := range it.Entries {
			n := len(en.Value) + stepOverhead
			if len(step) > 0 && size+n > e.stepLimit() {
				if err := flush(); err != nil {
					return err
				}
			}
			step = append(step, entryRef{i, j})
			size += n
		}
	}
	if err := flush(); err != nil {
		return err
	}
	for _, i := range items {
		if rec.Items[i].Status == StatusPending { // a ledger item with no entries
			rec.Items[i].Status = StatusApplied
			e.crashPoint("item-%d", i)
		}
	}
	progress(len(items))
	return nil
}

// writeEntries writes one step of entries, halving it while it is too big for one
// transaction. Crash points follow each commit: "item-I-entry-J" for every entry
// written, "item-I" for every ledger item whose last entry was written.
func (e *Engine) writeEntries(ctx context.Context, rec *RunRecord, step []entryRef) error {
	first := &rec.Items[step[0].item]
	if err := e.beforeStep(ctx, rec, first); err != nil {
		return err
	}
	writes := make([]store.EntryWrite, len(step))
	for k, r := range step {
		it := &rec.Items[r.item]
		en := it.Entries[r.entry]
		writes[k] = store.EntryWrite{LedgerID: it.LedgerID, EntryID: en.EntryID, Value: nonNil(en.Value)}
	}
	err := e.entryStore().PutEntries(writes)
	if errors.Is(err, store.ErrBatchTooBig) && len(step) > 1 {
		h := len(step) / 2
		if err := e.writeEntries(ctx, rec, step[:h]); err != nil {
			return err
		}
		return e.writeEntries(ctx, rec, step[h:])
	}
	if err != nil {
		first.Status, first.Reason = StatusFailed, err.Error()
		return fmt.Errorf("item %d (%s): %w", step[0].item, first.label(), err)
	}
	for _, r := range step {
		e.crashPoint("item-%d-entry-%d", r.item, r.entry)
		if it := &rec.Items[r.item]; r.entry == len(it.Entries)-1 {
			it.Status = StatusApplied
			e.crashPoint("item-%d", r.item)
		}
	}
	return nil
}

// nodeSteps groups node items into steps of at most limit bytes; one item per step
// when the store cannot change several nodes atomically.
func nodeSteps(rec *RunRecord, items []int, atomic bool, limit int) [][]int {
	var steps [][]int
	var step []int
	size := 0
	for _, i := range items {
		it := &rec.Items[i]
		n := len(it.Path) + len(it.After) + stepOverhead
		if len(step) > 0 && (!atomic || size+n > limit) {
			steps = append(steps, step)
			step, size = nil, 0
		}
		step = append(step, i)
		size += n
	}
	if len(step) > 0 {
		steps = append(steps, step)
	}
	return steps
}

// writeNodes applies one step of node items as one compare-and-set, halving it while
// it is too big for one transaction. A refused step wrote nothing, so all its items
// are failed (rollback leaves them alone). Crash points "item-I" follow the commit.
func (e *Engine) writeNodes(ctx context.Context, rec *RunRecord, step []int) error {
	if err := e.beforeStep(ctx, rec, &rec.Items[step[0]]); err != nil {
		return err
	}
	writes := make([]store.NodeWrite, len(step))
	for k, i := range step {
		it := &rec.Items[i]
		w := store.NodeWrite{Path: it.Path, Expect: it.Expect, Value: nonNil(it.After)}
		switch it.Kind {
		case KindCreate:
			w.Expect = 0
		case KindDelete:
			w.Delete, w.Value = true, nil
		}
		writes[k] = w
	}
	versions, readBack, err := e.compareAndSet(writes)
	if errors.Is(err, store.ErrBatchTooBig) && len(step) > 1 {
		h := len(step) / 2
		if err := e.writeNodes(ctx, rec, step[:h]); err != nil {
			return err
		}
		return e.writeNodes(ctx, rec, step[h:])
	}
	if err != nil {
		// A version mismatch (or conflict) refused the whole step: nothing of it was
		// written, and rollback must leave these nodes alone. After any other error
		// the outcome is unknown: rollback judges each node by what it holds.
		status := StatusPending
		if errors.Is(err, store.ErrVersionMismatch) {
			status = StatusFailed
		}
		for _, i := range step {
			rec.Items[i].Status, rec.Items[i].Reason = status, err.Error()
		}
		if len(step) == 1 {
			return fmt.Errorf("item %d (%s): %w", step[0], rec.Items[step[0]].label(), err)
		}
		return fmt.Errorf("items %d to %d (%d node changes, none written): %w", step[0], step[len(step)-1], len(step), err)
	}
	for k, i := range step {
		it := &rec.Items[i]
		it.Status = StatusApplied
		if it.Kind != KindDelete {
			it.Written = versions[k]
		}
	}
	if readBack != nil {
		if rec.readBack == nil {
			rec.readBack = make(map[int]store.Node, len(rec.Items))
		}
		for k, i := range step {
			rec.readBack[i] = readBack[k]
		}
	}
	for _, i := range step {
		e.crashPoint("item-%d", i)
	}
	return nil
}

// compareAndSet writes one step, reading the nodes back in the same
// transaction when the store can (nil nodes when it did not).
func (e *Engine) compareAndSet(writes []store.NodeWrite) ([]uint64, []store.Node, error) {
	nb, _ := e.nodeStore()
	if rb, ok := nb.(store.ReadBackWriter); ok {
		return rb.CompareAndSetNodesReadBack(writes)
	}
	versions, err := nb.CompareAndSetNodes(writes)
	return versions, nil, err
}

// getNodes reads the nodes of the given items from one snapshot.
func (e *Engine) getNodes(rec *RunRecord, items []int) ([]store.Node, error) {
	paths := make([]string, len(items))
	for k, i := range items {
		paths[k] = rec.Items[i].Path
	}
	nb, _ := e.nodeStore()
	return nb.GetNodes(paths)
}
