package radix

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// Sort gives the order of a stable comparison sort, for strings that share long
// prefixes, differ late, repeat, or are prefixes of each other.
func TestSortMatchesAStableComparisonSort(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	parts := []string{"/managed-ledgers", "/ledgers", "/schemas", "/a", "/a-1", "/a/x", "acme", "persistent", "L0012", "", "~", "é"}
	for round := 0; round < 200; round++ {
		n := rng.Intn(300)
		strs := make([]string, n)
		for i := range strs {
			var b strings.Builder
			for k := rng.Intn(6); k >= 0; k-- {
				b.WriteString(parts[rng.Intn(len(parts))])
				if rng.Intn(4) == 0 {
					fmt.Fprintf(&b, "/%d", rng.Intn(30))
				}
			}
			strs[i] = b.String()
		}
		idx := make([]int32, n)
		want := make([]int32, n)
		for i := range idx {
			idx[i], want[i] = int32(i), int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int { return strings.Compare(strs[a], strs[b]) })
		rs := New(strs, n, true)
		rs.Sort(idx, 0, 0)
		if !slices.Equal(idx, want) {
			t.Fatalf("round %d: order differs from a stable sort", round)
		}
		dups := false
		for k := 1; k < n; k++ {
			same := strs[idx[k]] == strs[idx[k-1]]
			dups = dups || same
			if rs.Same(k) != same {
				t.Fatalf("round %d: Same(%d) = %v, want %v", round, k, rs.Same(k), same)
			}
		}
		if rs.Dups() != dups {
			t.Fatalf("round %d: Dups() = %v, want %v", round, rs.Dups(), dups)
		}
	}
}
