package index

import (
	"context"
	"math"
	"math/bits"
)

// verdict says where an entry stands against the search target.
type verdict int

const (
	before verdict = iota // the entry is before the target: the answer is later
	after                 // the entry satisfies the target, an earlier one may too
	exact                 // the entry is the answer
)

// byOffset judges entries for "the first entry whose last offset >= t".
func byOffset(t int64) func(EntryInfo) verdict {
	return func(e EntryInfo) verdict {
		switch {
		case e.Last < t:
			return before
		case e.Base <= t:
			return exact // every earlier entry ends before this one's first message
		default:
			return after
		}
	}
}

// byTime judges entries for "the first entry whose time >= t".
func byTime(t uint64) func(EntryInfo) verdict {
	return func(e EntryInfo) verdict {
		if e.Time() < t {
			return before
		}
		return after
	}
}

// ceilLog2 returns ⌈log2 n⌉ for n >= 1.
func ceilLog2(n int64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(uint64(n - 1))
}

// interpolation, when set, lets lowerBound guess a probe from offsets: Base of the
// first entry of the range (LoOff) and Last of its final entry (HiOff), -1 when unknown.
type interpolation struct {
	Target       int64
	LoOff, HiOff int64
}

// guess places t between the known offsets at the ends of [lo, hi).
func (ip *interpolation) guess(lo, hi int64) (int64, bool) {
	if ip == nil || ip.LoOff < 0 || ip.HiOff < ip.LoOff {
		return 0, false
	}
	span := float64(ip.HiOff - ip.LoOff + 1)
	g := lo + int64(float64(ip.Target-ip.LoOff)*float64(hi-lo)/span)
	return g, true
}

// lowerBound returns the first i in [0, n) whose entry judge does not call before,
// with that entry; ok is false when there is none. It reads at most ⌈log2 n⌉+1
// entries: each probe is the interpolated guess when ip allows one, clamped so
// that whichever side is left can still be bisected within the reads remaining.
func lowerBound(ctx context.Context, n int64, judge func(EntryInfo) verdict, probe func(int64) (EntryInfo, error), ip *interpolation) (int64, EntryInfo, bool, error) {
	lo, hi := int64(0), n
	budget := ceilLog2(n) + 1
	var best EntryInfo
	for lo < hi {
		if err := ctx.Err(); err != nil {
			return 0, EntryInfo{}, false, err
		}
		g, ok := ip.guess(lo, hi)
		if !ok {
			g = lo + (hi-lo)/2
		}
		// A side of size s needs ⌈log2(s+1)⌉ more reads; keep both within budget-1.
		side := int64(math.MaxInt64)
		if budget-1 < 62 {
			side = int64(1)<<(budget-1) - 1
		}
		g = min(max(g, hi-1-side, lo), lo+side, hi-1)
		e, err := probe(g)
		if err != nil {
			return 0, EntryInfo{}, false, err
		}
		budget--
		switch judge(e) {
		case exact:
			return g, e, true, nil
		case before:
			lo = g + 1
			if ip != nil {
				ip.LoOff = e.Last + 1
			}
		case after:
			hi, best = g, e
			if ip != nil {
				ip.HiOff = e.Base - 1
			}
		}
	}
	if hi == n {
		return 0, EntryInfo{}, false, nil
	}
	return hi, best, true, nil
}
