package mutate

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ledgermedic/ledgermedic/store"
)

// ErrPushConflict: a node the run changed no longer holds, in the target store,
// the bytes the run saw before it wrote.
var ErrPushConflict = errors.New("the target store changed since the run was planned")

// PushPlan turns a committed run (made on a working copy) into a plan for another
// metadata store: the same node changes, each expected at the target's current
// version, and only where the target still holds the bytes the run saw before it
// wrote (the run's before-image; absent for a create). Ledger items are not pushed:
// entries stay in the data dir's ledger store (LedgersNotOnBookies). The plan's
// Before images make the engine's preflight re-check every node at apply time.
func PushPlan(rec *RunRecord, target store.MetadataStore) (*Plan, error) {
	if rec.State != StateCommitted {
		return nil, fmt.Errorf("push run %s: it is %s: %w", rec.RunID, rec.State, ErrNotCommitted)
	}
	p := &Plan{Command: "journal push", Args: []string{rec.RunID},
		Notes: []string{"push of " + rec.Command + " run " + rec.RunID}}
	var conflicts []error
	skipped := 0
	for _, ji := range rec.Items {
		it := ji.Item
		switch it.Kind {
		case KindLedger, KindDropLedger:
			skipped++
			continue
		}
		cur, err := target.Get(it.Path)
		exists := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("push run %s: read node %s: %w", rec.RunID, it.Path, err)
		}
		wantExists := it.Kind != KindCreate
		switch {
		case exists != wantExists && exists:
			conflicts = append(conflicts, fmt.Errorf("node %s exists on the target, the run created it", it.Path))
			continue
		case exists != wantExists:
			conflicts = append(conflicts, fmt.Errorf("node %s is absent on the target, the run saw %d bytes", it.Path, len(it.Before)))
			continue
		case exists && !bytes.Equal(cur.Value, it.Before):
			conflicts = append(conflicts, fmt.Errorf("node %s holds %d bytes on the target that differ from the %d the run saw before it wrote",
				it.Path, len(cur.Value), len(it.Before)))
			continue
		}
		pi := Item{Kind: it.Kind, Path: it.Path, After: it.After, Description: it.Description}
		if exists {
			pi.Expect, pi.Before = cur.Version, nonNil(cur.Value)
		}
		p.Items = append(p.Items, pi)
	}
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("push run %s: %w: %w", rec.RunID, ErrPushConflict, errors.Join(conflicts...))
	}
	if skipped > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d ledger item(s) not pushed", skipped))
	}
	if len(p.Items) == 0 {
		return nil, fmt.Errorf("push run %s: %w: it changed no metadata node", rec.RunID, ErrInvalidPlan)
	}
	return p, nil
}
