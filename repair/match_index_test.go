package repair

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMayApplyHoldsEveryApplicable: for random inputs and keys, every candidate
// applies accepts is among mayApply's, which come in input order (the matcher's
// index only narrows the search; find's order of preference is input order).
func TestMayApplyHoldsEveryApplicable(t *testing.T) {
	locals := []string{"orders", "orders-partition-2", "a b", "caf\u00e9", "x%2Fy", "orders-partition-x", ""}
	keys := []string{"acme/sales/orders", "acme/sales/a%20b", "acme/sales/caf%C3%A9", "orders", "acme/other/orders",
		"t/n/x%2Fy", "t/n/x%252Fy", "acme/sales/orders-partition-x"}
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 2))
		cands := make([]Candidate, r.IntN(40))
		for i := range cands {
			switch r.IntN(3) {
			case 0:
				cands[i].SchemaKey = keys[r.IntN(len(keys))]
			case 1:
				cands[i].Name = locals[r.IntN(len(locals))]
			}
			cands[i].HasVersion = r.IntN(2) == 0
		}
		m := newMatcher(cands, Options{})
		for _, key := range keys {
			may := m.mayApply(key)
			if !slices.IsSorted(may) {
				t.Fatalf("seed %d key %q: %v not in input order", seed, key, may)
			}
			for i := range cands {
				if m.applies(&cands[i], key) && !slices.Contains(may, i) {
					t.Fatalf("seed %d key %q: candidate %d (%+v) applies but is not among %v", seed, key, i, cands[i], may)
				}
			}
		}
	}
}
