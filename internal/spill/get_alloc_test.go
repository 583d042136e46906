//go:build !race

// The race detector drops a quarter of what sync.Pool is given, on purpose.

package spill

import (
	"encoding/binary"
	"runtime"
	"testing"
)

// TestGetReusesReaders: a lookup does not allocate a read buffer (64 KB) each.
func TestGetReusesReaders(t *testing.T) {
	d := open(t)
	recs := want(randomRecords(5, 20_000, 2_000))
	f := appendedFile(t, d, recs)
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, r := range recs[:1000] {
		if _, ok, err := f.Get([]byte(r.k)); err != nil || !ok {
			t.Fatalf("Get(%x): ok %v, %v", r.k, ok, err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 1000; per > 4<<10 {
		t.Errorf("a Get allocates %d bytes, want at most 4 KB", per)
	}
}

// TestIndexKeysShareOneBuffer: a File's index does not allocate a key per
// entry. Such keys live as long as the File among the short-lived objects of
// their size and keep those objects' heap spans from being freed.
func TestIndexKeysShareOneBuffer(t *testing.T) {
	d := open(t)
	f, err := d.NewFile("t")
	if err != nil {
		t.Fatal(err)
	}
	key, value := make([]byte, 8), make([]byte, 4000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 20_000 {
		binary.BigEndian.PutUint64(key, uint64(i))
		if err := f.Append(key, value); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if len(f.index) < 2000 {
		t.Fatalf("index of %d entries: the test needs more", len(f.index))
	}
	if n := after.Mallocs - before.Mallocs; n > uint64(len(f.index))/10 {
		t.Errorf("appending %d records with %d index entries made %d allocations, want at most %d",
			20_000, len(f.index), n, len(f.index)/10)
	}
	for i := range f.index {
		if got := binary.BigEndian.Uint64(f.indexKey(i)); i > 0 && got <= binary.BigEndian.Uint64(f.indexKey(i-1)) {
			t.Fatalf("index entry %d: key %d after %d", i, got, binary.BigEndian.Uint64(f.indexKey(i-1)))
		}
	}
}
