package mutate

import (
	"fmt"
	"strings"
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

// BenchmarkApplyBackfillRun is one back-fill batch: 100 managed-ledger nodes of
// about 5 kB rewritten in one run. It reports the journal's fsyncs per run.
func BenchmarkApplyBackfillRun(b *testing.B) {
	dd, _ := newDataDir(b)
	const n = 100
	value := func(gen int) []byte { return []byte(fmt.Sprintf("%d %s", gen, strings.Repeat("x", 5000))) }
	for i := range n {
		if _, err := dd.Metadata.CompareAndSet(fmt.Sprintf("/ml/%d", i), 0, value(0)); err != nil {
			b.Fatal(err)
		}
	}
	e := newEngine(b, dd)
	if _, err := e.Recover(ctx); err != nil {
		b.Fatal(err)
	}
	syncs := 0
	e.OnSync = func(string) { syncs++ }
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		p := &Plan{Command: "index backfill"}
		for j := range n {
			path := fmt.Sprintf("/ml/%d", j)
			p.Items = append(p.Items, Item{Kind: KindSet, Path: path, Expect: version(b, dd, path), After: value(i + 1)})
		}
		b.StartTimer()
		if _, err := e.Apply(ctx, p, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(syncs)/float64(b.N), "journal-fsyncs/op")
}
