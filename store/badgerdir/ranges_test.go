package badgerdir

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

// TestLedgerRangesCoverTheStoreOnce: a store of many tables cut into ranges and
// read range by range gives every entry once, in key order, the same values as
// a raw iteration; no ledger falls in two ranges; the estimate is the count.
func TestLedgerRangesCoverTheStoreOnce(t *testing.T) {
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := d.NewBulkWriter()
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 300)
	const ledgers = 400
	for l := range int64(ledgers) {
		// Uneven ledgers, ids with gaps and one id past 2^63 (unsigned key order).
		id := l*3 + 1
		if l == ledgers-1 {
			id = -5
		}
		for e := range int64(10 + rng.IntN(400)) {
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
			if err := w.PutEntry(id, e, value); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, dir, store.Options{ReadOnly: true, NoSandbox: true})
	if n := len(d.ledgers.Tables()); n < 4 {
		t.Fatalf("%d tables: the test needs several", n)
	}
	type kv struct {
		l, e int64
		v    string
	}
	var want []kv
	err = d.RawLedgerIteration(context.Background(), func(k, v []byte) error {
		l, e, err := ParseEntryKey(k)
		want = append(want, kv{l, e, string(v)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if est, ok := d.EstimateEntries(); !ok || est != int64(len(want)) {
		t.Errorf("estimate %d %v, want %d", est, ok, len(want))
	}
	for _, n := range []int{1, 2, 3, 8, 64} {
		ranges, splittable := d.LedgerRanges(n)
		if !splittable || len(ranges) > n || (n > 1 && len(ranges) < 2) {
			t.Fatalf("n=%d: %d ranges (splittable %v)", n, len(ranges), splittable)
		}
		var got []kv
		sizes := make([]int, len(ranges))
		for i, r := range ranges {
			if i > 0 && (!ranges[i-1].HasEnd || ranges[i-1].End != r.First) {
				t.Fatalf("n=%d: range %d (%s) does not start where %s ends", n, i, r, ranges[i-1])
			}
			err := d.ScanLedgerRange(context.Background(), r, func(l, e int64, v []byte) error {
				if len(got) > 0 && got[len(got)-1].l == l && sizes[i] == 0 {
					return fmt.Errorf("ledger %d is in two ranges", l)
				}
				got = append(got, kv{l, e, string(v)})
				sizes[i]++
				return nil
			}, nil)
			if err != nil {
				t.Fatalf("n=%d: %s: %v", n, r, err)
			}
		}
		if last := ranges[len(ranges)-1]; ranges[0].First != 0 || last.HasEnd {
			t.Errorf("n=%d: ranges %v do not span the key space", n, ranges)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: ranges gave %d entries, raw iteration %d (or other values/order)", n, len(got), len(want))
		}
		// No range holds more than twice its share (tables are the granularity).
		for i, s := range sizes {
			if n > 1 && n <= 8 && s > 2*len(want)/len(ranges)+2000 {
				t.Errorf("n=%d: range %d holds %d of %d entries: %v", n, i, s, len(want), sizes)
			}
		}
	}
	// One ledger alone.
	var one []int64
	if err := d.ScanLedgerRange(context.Background(), store.OneLedger(4), func(l, e int64, _ []byte) error {
		if l != 4 {
			t.Errorf("ledger %d in the range of ledger 4", l)
		}
		one = append(one, e)
		return nil
	}, nil); err != nil || len(one) == 0 || one[0] != 0 {
		t.Errorf("ledger 4: %d entries from %v, err %v", len(one), one[:min(1, len(one))], err)
	}
}

// TestLedgerCuts: key counts spread over table boundaries give cuts in order,
// at ledger starts, that balance the keys.
func TestLedgerCuts(t *testing.T) {
	key := func(l uint64) []byte {
		k := []byte{entryKeyPrefix, 0, 0, 0, 0, 0, 0, 0, byte(l), 0, 0, 0, 0, 0, 0, 0, 9}
		return append(k, 0, 0, 0, 0, 0, 0, 0, 1) // Badger's version suffix
	}
	var tables []badger.TableInfo
	for i := range uint64(10) {
		tables = append(tables, badger.TableInfo{Level: 6, Left: key(i * 10), Right: key(i*10 + 9), KeyCount: 1000})
	}
	// An L0 table over everything.
	tables = append(tables, badger.TableInfo{Level: 0, Left: key(0), Right: key(99), KeyCount: 1000})
	cuts := ledgerCuts(tables, 4)
	if len(cuts) != 3 || !slices.IsSorted(cuts) {
		t.Fatalf("cuts %v", cuts)
	}
	for i, c := range cuts {
		want := float64(i+1) * 100 / 4
		if d := float64(c) - want; d < -12 || d > 12 {
			t.Errorf("cut %d at ledger %d, want about %.0f: %v", i, c, want, cuts)
		}
	}
	if cuts := ledgerCuts(nil, 4); cuts != nil {
		t.Errorf("no tables: cuts %v", cuts)
	}
}
