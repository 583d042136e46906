package app

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"

	"github.com/ledgermedic/ledgermedic/index"
)

func BenchmarkScratchPlan(b *testing.B) {
	raw := startEtcdRaw(b)
	f := loadLiveFixture(b, raw)
	dd := openLive(b, f.dir, raw.url(), false)
	if _, err := index.Backfill(context.Background(), dd, index.BackfillOptions{Apply: true}); err != nil {
		b.Fatal(err)
	}
	cloneTopics(b, raw, "/managed-ledgers", "bf0", liveBenchBackfill, f.indexed)
	pf, _ := os.Create(os.Getenv("SCRATCH_PROF"))
	pprof.StartCPUProfile(pf)
	defer pprof.StopCPUProfile()
	b.ResetTimer()
	for b.Loop() {
		if _, err := index.Backfill(context.Background(), dd, index.BackfillOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
