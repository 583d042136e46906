//go:build !race

// The race detector drops a quarter of what sync.Pool is given, on purpose.

package spill

import (
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
