package spill

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

func open(t testing.TB) *Dir {
	t.Helper()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

type kv struct{ k, v string }

// randomRecords are n records with keys from a small space (many equal keys)
// and values that say when each was added.
func randomRecords(seed uint64, n, keys int) []kv {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]kv, n)
	for i := range out {
		// Keys of several lengths, so that a shorter key is a prefix of longer ones.
		k := binary.BigEndian.AppendUint64(nil, uint64(rng.IntN(keys)))
		k = k[:1+rng.IntN(8)]
		out[i] = kv{string(k), fmt.Sprintf("%d:%s", i, strings.Repeat("x", rng.IntN(40)))}
	}
	return out
}

// want is the records sorted by key, equal keys in the order added.
func want(recs []kv) []kv {
	out := slices.Clone(recs)
	slices.SortStableFunc(out, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	return out
}

func sorted(t *testing.T, s *Sorter) []kv {
	t.Helper()
	var got []kv
	if err := s.Sorted(context.Background(), func(k, v []byte) error {
		got = append(got, kv{string(k), string(v)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSorterIsAStableSort: whatever the budget (all in memory, a few runs, more
// runs than are merged at once, so many that merged runs are merged again),
// plain or compressed, the records come back as a stable sort by key would
// give them, every time they are read.
func TestSorterIsAStableSort(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		budget     int
		compressed bool
		minRuns    int
	}{
		{"in-memory", 5_000, 0, false, 0},
		{"few-runs", 5_000, 16 << 10, false, 2},
		{"multi-pass", 20_000, 2 << 10, false, maxFanIn + 1},
		{"merged again", 100_000, 512, false, maxFanIn*maxFanIn + 1},
		{"empty", 0, 0, false, 0},
		{"compressed in-memory", 5_000, 0, true, 0},
		{"compressed few-runs", 5_000, 16 << 10, true, 2},
		{"compressed multi-pass", 20_000, 2 << 10, true, compressedFanIn + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.n > 20_000 && testing.Short() {
				t.Skip("a few thousand runs")
			}
			recs := randomRecords(uint64(tc.n), tc.n, tc.n/10+1)
			var opts []SorterOption
			if tc.compressed {
				opts = append(opts, Compressed())
			}
			s := open(t).NewSorter("t", tc.budget, opts...)
			for _, r := range recs {
				if err := s.Add([]byte(r.k), []byte(r.v)); err != nil {
					t.Fatal(err)
				}
			}
			s.mu.Lock()
			s.waitWritten()
			s.mu.Unlock()
			if len(s.runs) < tc.minRuns {
				t.Fatalf("%d runs: the test wants %d at least", len(s.runs), tc.minRuns)
			}
			w := want(recs)
			for range 2 {
				if got := sorted(t, s); !slices.Equal(got, w) {
					t.Fatalf("got %d records, want %d; first difference at %d", len(got), len(w), firstDiff(got, w))
				}
			}
			if s.Len() != int64(tc.n) {
				t.Fatalf("Len %d, want %d", s.Len(), tc.n)
			}
		})
	}
}

func firstDiff(a, b []kv) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSorterConcurrentAdds: records added from several goroutines all come back, sorted.
func TestSorterConcurrentAdds(t *testing.T) {
	s := open(t).NewSorter("t", 8<<10)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := binary.BigEndian.AppendUint64(nil, uint64(i*4+g))
				if err := s.Add(k, nil); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got := sorted(t, s)
	if len(got) != 8000 {
		t.Fatalf("%d records, want 8000", len(got))
	}
	for i, r := range got {
		if binary.BigEndian.Uint64([]byte(r.k)) != uint64(i) {
			t.Fatalf("record %d has key %x", i, r.k)
		}
	}
}

func TestSorterStopsOnErrorAndCancel(t *testing.T) {
	s := open(t).NewSorter("t", 1<<10)
	for i := range 5000 {
		s.Add(binary.BigEndian.AppendUint64(nil, uint64(i)), nil)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.Sorted(context.Background(), func(k, v []byte) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || n != 3 {
		t.Fatalf("err %v after %d records", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Sorted(ctx, func(k, v []byte) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// appendedFile is a new File holding recs (sorted), not yet finished.
func appendedFile(t *testing.T, d *Dir, recs []kv) *File {
	t.Helper()
	f, err := d.NewFile("t")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := f.Append([]byte(r.k), []byte(r.v)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestFileScanFromAnyKey: a scan from any key, present or not, gives exactly
// the records at and after it, equal keys included even where they straddle an
// index block.
func TestFileScanFromAnyKey(t *testing.T) {
	d := open(t)
	recs := want(randomRecords(3, 30_000, 3_000))
	f := appendedFile(t, d, recs)
	if err := f.Append([]byte{}, nil); err == nil {
		t.Fatal("an out-of-order append was taken")
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(f.index) < 10 {
		t.Fatalf("index of %d entries: the test does not cross blocks", len(f.index))
	}
	rng := rand.New(rand.NewPCG(4, 4))
	froms := [][]byte{nil, {}, {0xff, 0xff}}
	for range 200 {
		froms = append(froms, []byte(recs[rng.IntN(len(recs))].k))
		froms = append(froms, append([]byte(recs[rng.IntN(len(recs))].k), 0))
	}
	for i := range f.index {
		froms = append(froms, f.indexKey(i))
	}
	for _, from := range froms {
		i, _ := slices.BinarySearchFunc(recs, string(from), func(a kv, k string) int { return strings.Compare(a.k, k) })
		var got []kv
		if err := f.Scan(context.Background(), from, func(k, v []byte) error {
			got = append(got, kv{string(k), string(v)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, recs[i:]) {
			t.Fatalf("scan from %x: %d records, want %d", from, len(got), len(recs)-i)
		}
	}
	v, ok, err := f.Get([]byte(recs[100].k))
	if i := slices.IndexFunc(recs, func(r kv) bool { return r.k == recs[100].k }); err != nil || !ok || string(v) != recs[i].v {
		t.Fatalf("Get = %q %v %v, want %q", v, ok, err, recs[i].v)
	}
	if _, ok, err := f.Get([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); ok || err != nil {
		t.Fatalf("Get of a missing key: ok %v, err %v", ok, err)
	}
	checkGets(t, f, recs)
}

// checkGets looks up keys of recs (sorted; for a repeated key Get returns the
// first record's value) and keys between them, forward, backward and at random,
// from four goroutines at once (Get pools its Readers).
func checkGets(t *testing.T, f *File, recs []kv) {
	t.Helper()
	first := map[string]string{}
	var keys []string
	for _, r := range recs {
		if _, ok := first[r.k]; !ok {
			first[r.k] = r.v
			keys = append(keys, r.k, r.k+"\x00")
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			order := slices.Clone(keys)
			switch g {
			case 1:
				slices.Reverse(order)
			case 2, 3:
				r := rand.New(rand.NewPCG(uint64(g), 9))
				r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
			for _, k := range order {
				v, ok, err := f.Get([]byte(k))
				want, wantOK := first[k]
				if err != nil || ok != wantOK || string(v) != want {
					errs <- fmt.Errorf("Get(%x) = %q %v %v, want %q %v", k, v, ok, err, want, wantOK)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestDamagedRunNamesFileAndOffset: a run cut short, plain or compressed, is an
// error naming the file and the record's byte offset, not a short result.
func TestDamagedRunNamesFileAndOffset(t *testing.T) {
	for _, opts := range [][]SorterOption{nil, {Compressed()}} {
		d := open(t)
		s := d.NewSorter("cut", 1<<10, opts...)
		for i := range 1000 {
			s.Add(binary.BigEndian.AppendUint64(nil, uint64(i)), []byte("value"))
		}
		s.mu.Lock()
		if err := s.waitWritten(); err != nil {
			t.Fatal(err)
		}
		r := s.runs[0]
		s.mu.Unlock()
		if err := os.Truncate(r.f.Name(), r.size-3); err != nil {
			t.Fatal(err)
		}
		err := s.Sorted(context.Background(), func(k, v []byte) error { return nil })
		if err == nil || !strings.Contains(err.Error(), r.f.Name()) || !strings.Contains(err.Error(), "record at byte") {
			t.Fatalf("cut run (compressed %v): %v", s.compressed, err)
		}
	}
}

func TestCloseRemovesEverything(t *testing.T) {
	parent := t.TempDir()
	d, err := Open(parent)
	if err != nil {
		t.Fatal(err)
	}
	s := d.NewSorter("t", 1<<10)
	for i := range 1000 {
		s.Add(binary.BigEndian.AppendUint64(nil, uint64(i)), nil)
	}
	if f, err := d.NewFile("f"); err != nil || f.Append([]byte("a"), nil) != nil || f.Finish() != nil {
		t.Fatal("file", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("parent holds %d entries after Close", len(ents))
	}
	if err := s.Add([]byte("x"), nil); err == nil {
		// Add keeps records in memory until the budget; a spill then must fail.
		for i := 0; i < 100 && err == nil; i++ {
			err = s.Add(bytes.Repeat([]byte{1}, 100), nil)
		}
		if err == nil {
			t.Fatal("adds to a closed dir never failed")
		}
	}
}

// BenchmarkSort adds b.N 9-byte keys with 24-byte values in random order and
// reads them back sorted: the cost of re-keying one per-ledger fact.
func BenchmarkSort(b *testing.B) {
	s := open(b).NewSorter("bench", 0)
	rng := rand.New(rand.NewPCG(1, 2))
	v := bytes.Repeat([]byte{7}, 24)
	k := make([]byte, 9)
	b.ResetTimer()
	for range b.N {
		binary.BigEndian.PutUint64(k[1:], rng.Uint64())
		if err := s.Add(k, v); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	if err := s.Sorted(context.Background(), func(k, v []byte) error { n++; return nil }); err != nil || n != b.N {
		b.Fatalf("sorted %d of %d: %v", n, b.N, err)
	}
}

// TestReaderSeeksAnyWay: a Reader sought forward, back, to the record it just
// returned and past the end always returns what a fresh scan from that key
// would, in a File with equal keys and in one without (where a Seek to the key
// just returned is answered without a read).
func TestReaderSeeksAnyWay(t *testing.T) {
	withDups := want(randomRecords(5, 20_000, 2_000))
	unique := slices.CompactFunc(slices.Clone(withDups), func(a, b kv) bool { return a.k == b.k })
	for name, recs := range map[string][]kv{"equal keys": withDups, "unique keys": unique} {
		t.Run(name, func(t *testing.T) { seekAnyWay(t, recs) })
	}
}

func seekAnyWay(t *testing.T, recs []kv) {
	d := open(t)
	f, err := d.NewFile("t")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		f.Append([]byte(r.k), []byte(r.v))
	}
	f.Finish()
	r, err := f.NewReader()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	var last []byte // the key Next returned last
	for step := range 4000 {
		var from []byte
		switch rng.IntN(4) {
		case 0:
			from = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		case 1:
			from = slices.Clone(last)
		default:
			from = []byte(recs[rng.IntN(len(recs))].k)
		}
		r.Seek(from)
		i, _ := slices.BinarySearchFunc(recs, string(from), func(a kv, k string) int { return strings.Compare(a.k, k) })
		for n := rng.IntN(50); n >= 0; n-- {
			ok := r.Next()
			if i >= len(recs) {
				if ok {
					t.Fatalf("step %d: Next past the end gave %x", step, r.Key())
				}
				break
			}
			if !ok || string(r.Key()) != recs[i].k || string(r.Value()) != recs[i].v {
				t.Fatalf("step %d: from %x record %d: got %v %x, want %x", step, from, i, ok, r.Key(), recs[i].k)
			}
			last = append(last[:0], r.Key()...)
			i++
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
}
