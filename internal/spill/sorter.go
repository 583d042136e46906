package spill

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// DefaultBudget is the memory a Sorter holds records in before it writes them
// to disk as a sorted run.
const DefaultBudget = 16 << 20

// maxFanIn bounds the runs merged at once: each holds a read buffer. Past it,
// runs are first merged into longer ones.
const maxFanIn = 64

// recOverhead is what a record costs beyond its bytes (its rec).
const recOverhead = 16

// Sorter takes records in any order and gives them back in key order, records
// of equal keys in the order they were added. It holds up to its budget in
// memory and writes sorted runs to its Dir past that. Add is safe for
// concurrent use; Sorted may be called any number of times once the adds are
// done.
type Sorter struct {
	d      *Dir
	what   string
	budget int

	mu    sync.Mutex
	arena []byte
	recs  []rec
	runs  []run
	n     int64
}

// rec is one record held in memory: where it is in the arena.
type rec struct {
	off       int
	klen, len int32
}

// run is one sorted run on disk.
type run struct {
	f    *os.File
	size int64
}

// NewSorter starts a sorter whose runs are named after what; budget 0 means
// DefaultBudget.
func (d *Dir) NewSorter(what string, budget int) *Sorter {
	if budget <= 0 {
		budget = DefaultBudget
	}
	return &Sorter{d: d, what: what, budget: budget}
}

// Len is the number of records added.
func (s *Sorter) Len() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Add adds one record; key and value are copied.
func (s *Sorter) Add(key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(key) > maxRecord || len(value) > maxRecord {
		return fmt.Errorf("spill: %s: record of %d+%d bytes", s.what, len(key), len(value))
	}
	off := len(s.arena)
	s.arena = append(s.arena, key...)
	s.arena = append(s.arena, value...)
	s.recs = append(s.recs, rec{off: off, klen: int32(len(key)), len: int32(len(key) + len(value))})
	s.n++
	if len(s.arena)+recOverhead*len(s.recs) >= s.budget {
		return s.spill()
	}
	return nil
}

func (s *Sorter) key(r rec) []byte { return s.arena[r.off : r.off+int(r.klen)] }

// sortHeld sorts the records in memory by key, then by when they were added
// (their place in the arena).
func (s *Sorter) sortHeld() {
	slices.SortFunc(s.recs, func(a, b rec) int {
		return cmp.Or(bytes.Compare(s.key(a), s.key(b)), cmp.Compare(a.off, b.off))
	})
}

// spill writes the records held as one sorted run and empties memory.
func (s *Sorter) spill() error {
	if len(s.recs) == 0 {
		return nil
	}
	s.sortHeld()
	f, err := s.d.create(s.what)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	var (
		b    []byte
		size int64
	)
	for _, r := range s.recs {
		b = appendRecord(b[:0], s.key(r), s.arena[r.off+int(r.klen):r.off+int(r.len)])
		size += int64(len(b))
		if _, err := w.Write(b); err != nil {
			f.Close()
			return fmt.Errorf("spill: write %s: %w", f.Name(), err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("spill: write %s: %w", f.Name(), err)
	}
	s.runs = append(s.runs, run{f: f, size: size})
	// Keep the arena's capacity unless a record made it grow past the budget.
	if cap(s.arena) > 2*s.budget {
		s.arena = nil
	}
	s.arena, s.recs = s.arena[:0], s.recs[:0]
	return nil
}

// Sorted calls fn with every record in key order (equal keys: in the order
// added). key and value are valid only during fn. It stops at fn's first error
// or when ctx is done.
func (s *Sorter) Sorted(ctx context.Context, fn func(key, value []byte) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.runs) == 0 {
		s.sortHeld()
		for i, r := range s.recs {
			if i&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := fn(s.key(r), s.arena[r.off+int(r.klen):r.off+int(r.len)]); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	if err := s.spill(); err != nil {
		return err
	}
	for len(s.runs) > maxFanIn {
		if err := s.mergeRuns(ctx); err != nil {
			return err
		}
	}
	return mergeRuns(ctx, s.runs, fn)
}

// mergeRuns merges the first maxFanIn runs into one, keeping the order of
// equal keys (the merged run takes the first one's place).
func (s *Sorter) mergeRuns(ctx context.Context) error {
	f, err := s.d.create(s.what)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	var (
		b    []byte
		size int64
	)
	err = mergeRuns(ctx, s.runs[:maxFanIn], func(k, v []byte) error {
		b = appendRecord(b[:0], k, v)
		size += int64(len(b))
		_, err := w.Write(b)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("spill: merge into %s: %w", f.Name(), err)
	}
	for _, r := range s.runs[:maxFanIn] {
		r.f.Close()
		os.Remove(r.f.Name())
	}
	s.runs = append([]run{{f: f, size: size}}, s.runs[maxFanIn:]...)
	return nil
}

// mergeRuns calls fn with the records of runs in key order; of equal keys, the
// earlier run's first.
func mergeRuns(ctx context.Context, runs []run, fn func(key, value []byte) error) error {
	h := make(runHeap, 0, len(runs))
	for i, r := range runs {
		rr := newRecordReader(io.NewSectionReader(r.f, 0, r.size), r.f.Name(), 0)
		err := rr.next()
		if errors.Is(err, io.EOF) {
			continue
		}
		if err != nil {
			return err
		}
		h = append(h, &heapRun{rr: rr, i: i})
	}
	h.init()
	for n := 0; len(h) > 0; n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		top := h[0]
		if err := fn(top.rr.key, top.rr.val); err != nil {
			return err
		}
		switch err := top.rr.next(); {
		case errors.Is(err, io.EOF):
			h.pop()
		case err != nil:
			return err
		default:
			h.down(0)
		}
	}
	return ctx.Err()
}

type heapRun struct {
	rr *recordReader
	i  int // the run's place: ties go to the earlier run
}

// runHeap is a min-heap of runs by their current key, then run order.
type runHeap []*heapRun

func (h runHeap) less(a, b int) bool {
	if c := bytes.Compare(h[a].rr.key, h[b].rr.key); c != 0 {
		return c < 0
	}
	return h[a].i < h[b].i
}

func (h runHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h runHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *runHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
}

// Close drops what the sorter holds, in memory and on disk; it must not be
// used after.
func (s *Sorter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for _, r := range s.runs {
		r.f.Close()
		if rerr := os.Remove(r.f.Name()); err == nil && rerr != nil {
			err = fmt.Errorf("spill: %w", rerr)
		}
	}
	s.runs, s.arena, s.recs = nil, nil, nil
	return err
}
