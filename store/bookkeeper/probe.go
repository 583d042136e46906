package bookkeeper

import (
	"context"
	"errors"
	"sync"

	"github.com/ledgermedic/ledgermedic/store"
)

// ProbeEntry asks every bookie of the entry's write set for it at once
// (READ_ENTRY without the fence flag, as every read here), where a read stops
// at the first good copy. A bad copy or a bookie that cannot answer is recorded
// as a replica finding, as a read's would be.
func (s *Store) ProbeEntry(ctx context.Context, ledgerID, entryID int64) (store.EntryProbe, error) {
	l, err := s.ledger(ctx, ledgerID)
	if err != nil {
		return store.EntryProbe{}, err
	}
	p := store.EntryProbe{WriteSet: l.writeSet(entryID)}
	errs := make([]error, len(p.WriteSet))
	var wg sync.WaitGroup
	for i, b := range p.WriteSet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.readFrom(ctx, b, l, entryID)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return store.EntryProbe{}, err
	}
	for i, b := range p.WriteSet {
		err := errs[i]
		var se *StatusError
		switch {
		case err == nil:
			p.Holding = append(p.Holding, b)
		case errors.As(err, &se) && se.Missing():
			p.Missing = append(p.Missing, b)
		case errors.Is(err, errBadEntry):
			p.Corrupt = append(p.Corrupt, b)
			s.report(store.FindingReplicaCorrupt, ledgerID, entryID, b, err)
		default:
			p.Unavailable = append(p.Unavailable, b)
			s.report(store.FindingBookieUnavailable, ledgerID, entryID, b, err)
		}
	}
	return p, nil
}
