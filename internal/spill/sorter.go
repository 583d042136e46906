package spill

import (
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

// maxFanIn bounds the runs merged at once: each holds a read buffer of 64 KB,
// 8 MB for all. A dataDir of a million topics sorts into about 115 runs, which
// then merge in one pass (docs/benchmarks.md, "Measured decisions"). A
// compressed run holds about half as much (compressedBlock), and
// compressedFanIn of them are merged at once. Past it, runs are first merged
// into longer ones.
const (
	maxFanIn        = 128
	compressedFanIn = 256
)

// recOverhead is what a record costs beyond its bytes (its rec).
const recOverhead = 16

// Sorter takes records in any order and gives them back in key order, records
// of equal keys in the order they were added. It holds up to its budget in
// memory: two buffers of half of it, one taking records while the other, full,
// is sorted and written to its Dir as a run in the background (a command's
// other core sorts while the first reads the store). Add is safe for concurrent
// use; Sorted may be called any number of times once the adds are done.
type Sorter struct {
	d          *Dir
	what       string
	budget     int
	compressed bool

	mu      sync.Mutex
	cur     *buffer // taking records
	spare   *buffer // written, for reuse
	writing *buffer // being written in the background
	written chan runResult
	runs    []run
	n       int64
	rw      *runWriter   // writes every run, one at a time
	readers []*runReader // read the runs of Sorted's merges
}

// buffer is records held in memory: their bytes back to back in arena.
type buffer struct {
	arena []byte
	recs  []rec
}

// rec is one record held in memory: where it is in the arena.
type rec struct {
	off       int
	klen, len int32
}

type runResult struct {
	r   run
	err error
}

// NewSorter starts a sorter whose runs are named after what; budget 0 means
// DefaultBudget.
func (d *Dir) NewSorter(what string, budget int, opts ...SorterOption) *Sorter {
	if budget <= 0 {
		budget = DefaultBudget
	}
	s := &Sorter{d: d, what: what, budget: budget, cur: &buffer{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// A SorterOption adjusts a new Sorter.
type SorterOption func(*Sorter)

// Compressed runs are S2-compressed (runWriter): for sorts of gigabytes, whose
// runs would otherwise take as much disk, and time to write and read back,
// as the records; it costs some CPU.
func Compressed() SorterOption { return func(s *Sorter) { s.compressed = true } }

// fanIn is the number of runs merged at once.
func (s *Sorter) fanIn() int {
	if s.compressed {
		return compressedFanIn
	}
	return maxFanIn
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
	if len(key) > MaxRecord || len(value) > MaxRecord {
		return fmt.Errorf("spill: %s: record of %d+%d bytes", s.what, len(key), len(value))
	}
	b := s.cur
	off := len(b.arena)
	b.arena = append(b.arena, key...)
	b.arena = append(b.arena, value...)
	b.recs = append(b.recs, rec{off: off, klen: int32(len(key)), len: int32(len(key) + len(value))})
	s.n++
	if b.size() >= s.budget/2 {
		return s.handOff()
	}
	return nil
}

func (b *buffer) size() int { return len(b.arena) + recOverhead*len(b.recs) }

func (b *buffer) key(r rec) []byte { return b.arena[r.off : r.off+int(r.klen)] }

func (b *buffer) value(r rec) []byte { return b.arena[r.off+int(r.klen) : r.off+int(r.len)] }

// sort orders the records by key, then by when they were added (their place
// in the arena).
func (b *buffer) sort() {
	slices.SortFunc(b.recs, func(x, y rec) int {
		return cmp.Or(bytes.Compare(b.key(x), b.key(y)), cmp.Compare(x.off, y.off))
	})
}

func (b *buffer) reset() { b.arena, b.recs = b.arena[:0], b.recs[:0] }

// handOff starts writing the current buffer as a run in the background, once
// the one before it is written, and takes the spare buffer for the next
// records.
func (s *Sorter) handOff() error {
	if err := s.waitWritten(); err != nil {
		return err
	}
	f, err := s.d.create(s.what)
	if err != nil {
		return err
	}
	s.writing, s.written = s.cur, make(chan runResult, 1)
	go func(b *buffer, done chan<- runResult) {
		r, err := s.writeRun(f, b)
		done <- runResult{r, err}
	}(s.writing, s.written)
	s.cur, s.spare = s.spare, nil
	if s.cur == nil {
		s.cur = &buffer{}
	}
	return nil
}

// waitWritten waits for the run being written, if any, and keeps it.
func (s *Sorter) waitWritten() error {
	if s.writing == nil {
		return nil
	}
	res := <-s.written
	b := s.writing
	s.writing = nil
	// Keep the buffer for reuse unless one record made it grow far past the budget.
	if cap(b.arena) <= s.budget {
		b.reset()
		s.spare = b
	}
	if res.err != nil {
		return res.err
	}
	s.runs = append(s.runs, res.r)
	return nil
}

// writeRun sorts b and writes it to f, with the sorter's runWriter.
func (s *Sorter) writeRun(f *os.File, b *buffer) (run, error) {
	b.sort()
	w := s.runWriter(f)
	for _, r := range b.recs {
		if err := w.add(b.key(r), b.value(r)); err != nil {
			w.abort()
			return run{}, err
		}
	}
	return w.finish()
}

// Sorted calls fn with every record in key order (equal keys: in the order
// added). key and value are valid only during fn. It stops at fn's first error
// or when ctx is done.
func (s *Sorter) Sorted(ctx context.Context, fn func(key, value []byte) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.waitWritten(); err != nil {
		return err
	}
	if len(s.runs) == 0 {
		b := s.cur
		b.sort()
		for i, r := range b.recs {
			if i&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := fn(b.key(r), b.value(r)); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	if len(s.cur.recs) > 0 {
		f, err := s.d.create(s.what)
		if err != nil {
			return err
		}
		r, err := s.writeRun(f, s.cur)
		if err != nil {
			return err
		}
		s.runs = append(s.runs, r)
	}
	// Everything is in runs: the buffers are not needed again, the writer and
	// readers not after the merges.
	s.cur, s.spare = &buffer{}, nil
	defer func() { s.rw, s.readers = nil, nil }()
	// Past fanIn runs, groups of consecutive runs are merged into one each,
	// which takes the group's place (so equal keys keep their order): groups
	// as large as leave fanIn runs, each next one after the last, so that a
	// run is merged again only once every run was merged once.
	for i := 0; len(s.runs) > s.fanIn(); i++ {
		g := min(s.fanIn(), len(s.runs)-s.fanIn()+1)
		if i+g > len(s.runs) {
			i = 0
		}
		if err := s.mergeGroup(ctx, i, i+g); err != nil {
			return err
		}
	}
	return s.merge(ctx, s.runs, fn)
}

// mergeGroup merges runs[from:to] into one run in their place.
func (s *Sorter) mergeGroup(ctx context.Context, from, to int) error {
	f, err := s.d.create(s.what)
	if err != nil {
		return err
	}
	w := s.runWriter(f)
	if err := s.merge(ctx, s.runs[from:to], w.add); err != nil {
		w.abort()
		return fmt.Errorf("spill: merge into %s: %w", f.Name(), err)
	}
	merged, err := w.finish()
	if err != nil {
		return err
	}
	for _, r := range s.runs[from:to] {
		r.f.Close()
		os.Remove(r.f.Name())
	}
	s.runs = slices.Replace(s.runs, from, to, merged)
	return nil
}

// merge calls fn with the records of runs in key order; of equal keys, the
// earlier run's first.
func (s *Sorter) merge(ctx context.Context, runs []run, fn func(key, value []byte) error) error {
	h := make(runHeap, 0, len(runs))
	for i, r := range runs {
		rr := s.runReader(i, r)
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
	err := s.waitWritten()
	for _, r := range s.runs {
		r.f.Close()
		if rerr := os.Remove(r.f.Name()); err == nil && rerr != nil {
			err = fmt.Errorf("spill: %w", rerr)
		}
	}
	s.runs, s.cur, s.spare, s.rw = nil, &buffer{}, nil, nil
	return err
}
