package etcd

import "math/bits"

// etcd counts every key of the range a read asks for, whatever its limit
// (rangeKeys in etcd's mvcc/kvstore_txn.go: 3.4 collects the revisions of all
// of them, later versions count them), so the pages of one range over a million topics each cost the
// server the whole rest of the range: a check of a 1,000,000-topic etcd 3.4 kept
// its CPU at 100% with 10 GB resident and had not finished after ten minutes.
// A walk therefore asks each page of a window [lo, to) meant to hold about one
// page, and moves the window's size by the count each answer carries.

// window picks the key ranges of a walk's pages. A window spans 2^-bits of
// the key space, read as a binary fraction: from lo to lo plus one unit at its
// bits-th bit.
type window struct {
	end  string // the walk's end
	bits int
	min  int // the bits of the walk's whole range
}

func newWindow(begin, end string) *window {
	n := 8 * sharedPrefix(begin, end)
	return &window{end: end, bits: n, min: n}
}

// sharedPrefix is the number of leading bytes a and b share.
func sharedPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// to is the end of the window that starts at lo: after lo, at most the walk's end.
func (w *window) to(lo string) string {
	if w.bits <= w.min {
		return w.end
	}
	n := (w.bits + 7) / 8
	b := []byte(lo)
	for len(b) < n {
		b = append(b, 0)
	}
	carry := uint(1) << (8*n - w.bits)
	for i := n - 1; i >= 0 && carry > 0; i-- {
		s := uint(b[i]) + carry
		b[i], carry = byte(s), s>>8
	}
	if carry > 0 || string(b) >= w.end {
		return w.end // past the last key of this many bits
	}
	return string(b)
}

// fit moves the window's size by what the last window held: count keys, of
// which a page of limit went from first to last. A window that held more than
// a page narrows by as many halvings as it held pages, and at least to the
// bits first and last share: keys that share a long prefix (a namespace's
// million topics) would otherwise take a narrowing per bit of it, each
// counting them all again. One that held under half a page widens by as many
// doublings as would fill it, an empty one eightfold. (Widening ever faster
// across a run of empty windows overshot into dense stretches, each then
// counted whole: a 1M-topic check took 216 s against 85.)
func (w *window) fit(count, limit int64, first, last string) {
	switch {
	case count > limit:
		w.bits = max(w.bits+bits.Len64(uint64((count-1)/limit)), 8*sharedPrefix(first, last))
	case count == 0:
		w.bits -= 3
	case count < limit/2:
		// As many doublings as fit: the limit also grows fourfold over the
		// walk's first pages.
		w.bits -= bits.Len64(uint64(limit/count)) - 1
	}
	w.bits = max(w.bits, w.min)
}
