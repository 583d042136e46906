package mutate

import (
	"fmt"
	"testing"
)

// BenchmarkApplyBatch measures the per-run overhead a back-fill pays: one run of ten
// node sets (journal twice, epoch once, CAS, verify).
func BenchmarkApplyBatch(b *testing.B) {
	dd, _ := newDataDir(b)
	const n = 10
	for i := range n {
		if _, err := dd.Metadata.CompareAndSet(fmt.Sprintf("/ml/%d", i), 0, []byte("v0")); err != nil {
			b.Fatal(err)
		}
	}
	e := newEngine(b, dd)
	for i := 0; b.Loop(); i++ {
		p := &Plan{Command: "backfill"}
		for j := range n {
			path := fmt.Sprintf("/ml/%d", j)
			p.Items = append(p.Items, Item{Kind: KindSet, Path: path, Expect: version(b, dd, path), After: []byte(fmt.Sprintf("v%d", i+1))})
		}
		if _, err := e.Apply(ctx, p, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
