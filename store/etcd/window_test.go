package etcd

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWindowTo: a window ends one unit of its size after its start, and no
// later than the walk's end; the whole range's window is the walk's end.
func TestWindowTo(t *testing.T) {
	for _, c := range []struct {
		begin, end, lo string
		bits           int
		want           string
	}{
		{"/m/", "/m0", "/m/", 0, "/m0"},                 // the whole range
		{"/m/", "/m0", "/m/a", 2 * 8, "/m0"},            // 16 bits: the whole range again
		{"/m/", "/m0", "/m/abc", 4 * 8, "/m/bbc"},       // one at the 4th byte
		{"/m/", "/m0", "/m/abc", 4*8 - 1, "/m/cbc"},     // two at the 4th byte
		{"/m/", "/m0", "/m/abc", 4*8 - 2, "/m/ebc"},     // four
		{"/m/", "/m0", "/m/a\xff", 5 * 8, "/m/b\x00"},   // the carry
		{"/m/", "/m0", "/m/", 6 * 8, "/m/\x00\x00\x01"}, // lo padded with zeros
		{"/m/", "/m0", "/m/\xff\xff", 5 * 8, "/m0"},     // past the end
	} {
		w := newWindow(c.begin, c.end)
		w.bits = max(c.bits, w.min)
		if got := w.to(c.lo); got != c.want {
			t.Errorf("window of %d bits from %q = %q, want %q", c.bits, c.lo, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		lo := "/m/" + randomKey(r)
		w := newWindow("/m/", "/m0")
		w.bits = w.min + r.IntN(80)
		to := w.to(lo)
		if to <= lo || to > "/m0" {
			t.Fatalf("window of %d bits from %q ends at %q", w.bits, lo, to)
		}
		if to == "/m0" {
			continue
		}
		// to is lo plus one at its bits-th bit: the same length (lo padded to
		// whole bytes) and one unit more as a number.
		n := max((w.bits+7)/8, len(lo))
		unit := new(big.Int).Lsh(big.NewInt(1), uint(8*n-w.bits))
		want := new(big.Int).SetBytes([]byte((lo + strings.Repeat("\x00", n))[:n]))
		if len(to) != n || new(big.Int).SetBytes([]byte(to)).Cmp(want.Add(want, unit)) != 0 {
			t.Fatalf("window of %d bits from %q ends at %q: not one unit on", w.bits, lo, to)
		}
	}
}

func randomKey(r *rand.Rand) string {
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = "az09/-\x00\xff"[r.IntN(8)]
	}
	return string(b)
}

// TestWindowFit: a window that held pages narrows by as many halvings, one
// that held under half a page widens by as many doublings as fill it, none
// past the whole range.
func TestWindowFit(t *testing.T) {
	for _, c := range []struct {
		count, limit int64
		delta        int
	}{
		{1000, 1000, 0}, {1001, 1000, 1}, {2000, 1000, 1}, {2001, 1000, 2}, {1_000_000, 1000, 10},
		{500, 1000, 0}, {499, 1000, -1}, {300, 1000, -1}, {249, 1000, -2}, {64, 1000, -3}, {0, 1000, -3},
	} {
		w := &window{bits: 100, min: 0}
		w.fit(c.count, c.limit, "a", "b")
		if w.bits != 100+c.delta {
			t.Errorf("fit(%d, %d): %+d bits, want %+d", c.count, c.limit, w.bits-100, c.delta)
		}
	}
	w := &window{bits: 10, min: 8}
	if w.fit(0, 100, "", ""); w.bits != 8 {
		t.Errorf("a window widened past the whole range: %d bits", w.bits)
	}
	// A page of keys sharing 21 bytes: the window narrows to them at once.
	w = &window{bits: 24, min: 24}
	if w.fit(10_000, 100, "/w/ns/persistent/t-0000", "/w/ns/persistent/t-0099"); w.bits != 8*21 {
		t.Errorf("a window over keys sharing 21 bytes narrowed to %d bits, want 168", w.bits)
	}
}
