// Package radix sorts many strings that share long prefixes (metadata paths) by
// index, faster than a comparison sort: the offline ZooKeeper and etcd readers
// order a few hundred thousand paths each time they open.
package radix

import (
	"cmp"
	"slices"
	"strings"
)

// Sorter orders indexes so that strs[idx[k]][off:] ascend in byte order,
// equal strings by index. A comparison sort of 200k Pulsar paths spends its
// time re-reading the long prefixes they share (and missing the cache doing
// so); this MSD radix sort reads each string about once per 7 bytes of depth
// instead: it sorts 8-byte keys (7 bytes of the string from off, then how many
// of those 7 exist), skipping key bytes that are the same in every string,
// jumps over a prefix that all strings of a run share, and recurses into runs
// of equal keys.
type Sorter struct {
	strs      []string
	keys, tmp []sortKey // scratch; a call at base uses only [base, base+len(idx))
	dups      bool      // two equal strings were seen
	// same, when not nil, marks each position of the sorted order whose string
	// equals the one before it.
	same []bool
}

type sortKey struct {
	key uint64
	i   int32
}

// New returns a sorter of up to n indexes into strs; markSame asks for Same.
func New(strs []string, n int, markSame bool) *Sorter {
	rs := &Sorter{strs: strs, keys: make([]sortKey, n), tmp: make([]sortKey, n)}
	if markSame {
		rs.same = make([]bool, n)
	}
	return rs
}

// smallSort is the size below which insertion sort beats building keys.
const smallSort = 24

// sort orders idx, which sits at position base of the whole order.
// Sort orders idx (indexes into the strings), which sits at position base of
// the whole order; off is how many leading bytes all of them share (0 at the top).
func (rs *Sorter) Sort(idx []int32, off, base int) {
	for len(idx) > smallSort {
		keys, tmp := rs.keys[base:base+len(idx)], rs.tmp[base:base+len(idx)]
		diff := uint64(0)
		for k, i := range idx {
			keys[k] = sortKey{key7(rs.strs[i], off), i}
			diff |= keys[k].key ^ keys[0].key
		}
		if diff == 0 {
			if keys[0].key&0xff < 7 {
				rs.sortDups(idx, base)
				return
			}
			off += 7 + rs.commonPrefix(idx, off+7)
			continue
		}
		keys = lsdSort(keys, tmp, diff)
		for k := range keys {
			idx[k] = keys[k].i
		}
		// Runs of equal keys: exact duplicates when fewer than 7 bytes were
		// left, else strings equal so far whose order the next bytes decide.
		for lo := 0; lo < len(keys); {
			hi := lo + 1
			for hi < len(keys) && keys[hi].key == keys[lo].key {
				hi++
			}
			if hi-lo > 1 {
				if keys[lo].key&0xff < 7 {
					rs.sortDups(idx[lo:hi], base+lo)
				} else {
					rs.Sort(idx[lo:hi], off+7, base+lo)
				}
			}
			lo = hi
		}
		return
	}
	rs.insertion(idx, off, base)
}

// sortDups orders a run of equal strings by index.
func (rs *Sorter) sortDups(idx []int32, base int) {
	rs.dups = true
	slices.Sort(idx)
	if rs.same != nil {
		for k := 1; k < len(idx); k++ {
			rs.same[base+k] = true
		}
	}
}

// commonPrefix is how many bytes from off every string of idx shares.
func (rs *Sorter) commonPrefix(idx []int32, off int) int {
	first := rs.strs[idx[0]][off:]
	n := len(first)
	for _, i := range idx[1:] {
		s := rs.strs[i][off:]
		n = min(n, len(s))
		j := 0
		for j < n && s[j] == first[j] {
			j++
		}
		if n = j; n == 0 {
			break
		}
	}
	return n
}

// key7 packs s[off:off+7] big-endian (zero-padded) over the number of those
// bytes present, so keys compare as the strings do: a string that ends sorts
// before one that goes on, even with zero bytes.
func key7(s string, off int) uint64 {
	n := len(s) - off
	if n >= 8 {
		b := s[off : off+8]
		k := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
			uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8
		return k | 7
	}
	var k uint64
	for j := range 7 {
		k <<= 8
		if j < n {
			k |= uint64(s[off+j])
		}
	}
	return k<<8 | uint64(max(min(n, 7), 0))
}

// lsdSort sorts keys by key, one byte per pass over the bytes set in diff (the
// bytes in which keys differ); it returns whichever of keys and tmp holds the
// result.
func lsdSort(keys, tmp []sortKey, diff uint64) []sortKey {
	if len(keys) < 256 {
		// Fewer keys than a pass has buckets: a comparison sort is cheaper.
		slices.SortFunc(keys, func(a, b sortKey) int { return cmp.Compare(a.key, b.key) })
		return keys
	}
	for shift := uint(0); shift < 64; shift += 8 {
		if (diff>>shift)&0xff == 0 {
			continue
		}
		var count [256]int
		for _, e := range keys {
			count[byte(e.key>>shift)]++
		}
		sum := 0
		for b, c := range count {
			count[b], sum = sum, sum+c
		}
		for _, e := range keys {
			b := byte(e.key >> shift)
			tmp[count[b]] = e
			count[b]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// insertion sorts a few indexes by their strings from off, ties by index.
func (rs *Sorter) insertion(idx []int32, off, base int) {
	for k := 1; k < len(idx); k++ {
		for j := k; j > 0; j-- {
			c := strings.Compare(rs.strs[idx[j]][off:], rs.strs[idx[j-1]][off:])
			if c > 0 || (c == 0 && idx[j] > idx[j-1]) {
				break
			}
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	for k := 1; k < len(idx); k++ {
		if rs.strs[idx[k]][off:] == rs.strs[idx[k-1]][off:] {
			rs.dups = true
			if rs.same != nil {
				rs.same[base+k] = true
			}
		}
	}
}

// Dups reports whether two equal strings were seen.
func (rs *Sorter) Dups() bool { return rs.dups }

// Same reports whether the string at position k of the sorted order equals the
// one before it (New with markSame).
func (rs *Sorter) Same(k int) bool { return rs.same[k] }

// Sibling returns a sorter over the same strings sharing rs's scratch space, for
// a second goroutine that sorts disjoint positions.
func (rs *Sorter) Sibling() *Sorter { return &Sorter{strs: rs.strs, keys: rs.keys, tmp: rs.tmp} }
