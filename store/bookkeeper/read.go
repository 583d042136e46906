package bookkeeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ledgermedic/ledgermedic/store"
)

// readable returns the ledger and its last readable entry: lastEntryId when
// CLOSED, the last add confirmed when open.
func (s *Store) readable(ctx context.Context, ledgerID int64) (*ledger, error) {
	l, err := s.ledger(ctx, ledgerID)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (s *Store) Entry(ledgerID, entryID int64) ([]byte, error) {
	var out []byte
	err := s.peek(context.Background(), ledgerID, entryID, func(v []byte) error {
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

func (s *Store) peek(ctx context.Context, ledgerID, entryID int64, fn func([]byte) error) error {
	l, err := s.readable(ctx, ledgerID)
	if err != nil {
		return err
	}
	if entryID < 0 || entryID > l.last {
		return fmt.Errorf("ledger %d entry %d: past the last readable entry %d: %w", ledgerID, entryID, l.last, store.ErrNotFound)
	}
	p, err := s.readEntry(ctx, l, entryID)
	if err != nil {
		return err
	}
	return fn(p)
}

// EntryReader reads single entries; each read is one request to a bookie.
func (s *Store) EntryReader() store.EntryReader { return entryReader{s} }

type entryReader struct{ s *Store }

func (r entryReader) Peek(ledgerID, entryID int64, fn func([]byte) error) error {
	return r.s.peek(context.Background(), ledgerID, entryID, fn)
}

func (entryReader) Close() {}

// Entries reads from..to of one ledger in order, with up to 2× the per-bookie
// in-flight bound of reads outstanding (the bookies of the write sets answer
// in parallel; fn sees them in entry order). A ledger without metadata has no
// entries here.
func (s *Store) Entries(ctx context.Context, ledgerID, from, to int64, fn func(entryID int64, value []byte) error) error {
	l, err := s.readable(ctx, ledgerID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	from = max(from, 0)
	if to < 0 || to > l.last {
		to = l.last
	}
	if from > to {
		return nil
	}
	type result struct {
		payload []byte
		err     error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan chan result, 2*s.inflight)
	go func() {
		defer close(queue)
		for e := from; e <= to; e++ {
			ch := make(chan result, 1)
			select {
			case queue <- ch:
			case <-ctx.Done():
				return
			}
			go func() {
				p, err := s.readEntry(ctx, l, e)
				ch <- result{p, err}
			}()
		}
	}()
	e := from
	for ch := range queue {
		r := <-ch
		if r.err != nil {
			return r.err
		}
		if err := fn(e, r.payload); err != nil {
			return err
		}
		e++
	}
	if e <= to {
		return ctx.Err()
	}
	return nil
}

func (s *Store) LastEntry(ledgerID int64) (int64, error) {
	l, err := s.readable(context.Background(), ledgerID)
	if err != nil {
		return 0, err
	}
	if l.last < 0 {
		return 0, fmt.Errorf("ledger %d last entry: %w", ledgerID, store.ErrNotFound)
	}
	return l.last, nil
}

// LedgerIDs lists the ledgers of the metadata store under the root, ascending
// (the hierarchical paths sort as the ids do), with their readable entry counts;
// a ledger with none is left out. A ledger whose metadata does not decode is
// skipped here (check reports its node).
//
// The metadata is walked a page of ledgerPage ledgers at a time (WalkFrom
// resumes after the page's last node), so memory does not grow with the
// cluster and no walk stays open while fn works (a long pause could outlive an
// etcd revision the walk is pinned to). The open ledgers of a page have their
// last add confirmed read from their bookies lacConcurrency at a time.
func (s *Store) LedgerIDs(ctx context.Context, fn func(ledgerID int64, entries int64) error) error {
	for start := s.root + "/"; ; {
		page, next, err := s.ledgerPage(ctx, start)
		if err != nil {
			return err
		}
		if err := s.finishLedgers(ctx, page); err != nil {
			return err
		}
		for _, l := range page {
			if l.last >= 0 {
				if err := fn(l.id, l.last+1); err != nil {
					return err
				}
			}
		}
		if next == "" {
			return nil
		}
		start = next
	}
}

// errPageFull stops a page's walk.
var errPageFull = errors.New("page full")

// ledgerPage reads up to ledgerPage ledgers' metadata from start on; next is
// where the following page starts ("" after the last).
func (s *Store) ledgerPage(ctx context.Context, start string) (page []*ledger, next string, err error) {
	err = s.meta.WalkFrom(ctx, s.root+"/", start, func(n store.Node) error {
		if len(page) == ledgerPage {
			next = n.Path
			return errPageFull
		}
		id, err := parseLedgerPath(s.root, n.Path)
		if err != nil {
			return nil
		}
		l, err := s.parseLedger(id, n.Value)
		if err != nil {
			return nil // check reports the node that does not decode
		}
		page = append(page, l)
		return nil
	})
	if errors.Is(err, errPageFull) {
		err = nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("bk: ledgers under %s: %w", s.root, err)
	}
	return page, next, nil
}

// finishLedgers asks the bookies of the page's open ledgers for their last add
// confirmed, lacConcurrency ledgers at a time, and caches every ledger.
func (s *Store) finishLedgers(ctx context.Context, page []*ledger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	sem := make(chan struct{}, lacConcurrency)
	for _, l := range page {
		if !l.open {
			s.cache(l)
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := s.finishLedger(ctx, l)
			switch {
			case err == nil:
			case ctx.Err() == nil && !errors.Is(err, store.ErrNotFound):
				// No bookie of its last ensemble answered (each is reported
				// unavailable): listed without entries, the scan goes on.
				l.last = -1
				s.markUnread(l.id, 0)
			default:
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	return first
}

// ScanEntries passes every readable entry of every ledger to fn, in (ledger,
// entry) order; an entry no replica serves intact goes to skipped as a
// *store.TruncatedError and the scan goes on past it. A ledger ends at the
// first entry no bookie of its write set holds (the store then holds fewer
// entries than the metadata says, as a bookie dir missing them would).
func (s *Store) ScanEntries(ctx context.Context, fn func(ledgerID, entryID int64, value []byte) error, skipped func(*store.TruncatedError) error) error {
	// Each ledger is read as the streaming LedgerIDs hands it over: no list of
	// every id is held.
	return s.LedgerIDs(ctx, func(id, _ int64) error {
		for from := int64(0); ; {
			next := from
			err := s.Entries(ctx, id, from, -1, func(e int64, v []byte) error { next = e + 1; return fn(id, e, v) })
			var te *store.TruncatedError
			if errors.Is(err, store.ErrNotFound) && !errors.As(err, &te) {
				return nil // no bookie holds the rest: check compares what was read with the metadata
			}
			if errors.Is(err, errNoReplica) && ctx.Err() == nil {
				// Every bookie of the write set failed and is reported
				// unavailable: the rest of this ledger cannot be read now.
				s.markUnread(id, next)
				return nil
			}
			if skipped == nil || !errors.As(err, &te) || te.LedgerID != id || te.EntryID < from {
				return err
			}
			if err := skipped(te); err != nil {
				return err
			}
			from = te.EntryID + 1
		}
	})
}
