package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// The write path of a back-fill alone, without its planning: a mutate.Series of
// runs of SeriesBenchBatch node sets each (journal, compare-and-set, read-back
// verification, commit) against a live store, and a bare loop of the same batches
// (Multi of SetData, Txn of compares and puts) over other nodes in the same run.
// "cpu-µs/node" is this process's CPU per node written by the series.
const (
	SeriesBenchNodes = 2000
	SeriesBenchBatch = 100
	seriesBenchValue = 200 // bytes per node, about a back-filled ManagedLedgerInfo
)

// SeriesBenchBytes is the value of generation gen: same size every generation.
func SeriesBenchBytes(gen int) []byte {
	v := make([]byte, seriesBenchValue)
	for i := range v {
		v[i] = byte('a' + (gen+i)%26)
	}
	return v
}

// BenchSeries runs one series over paths per iteration and the bare batches over
// bare; writeBare writes one batch of the bare nodes.
func BenchSeries(b *testing.B, dd *datadir.DataDir, paths, bare []string, writeBare func(batch []string, gen int)) {
	e, err := mutate.New(dd)
	if err != nil {
		b.Fatal(err)
	}
	nb := dd.Metadata.(store.NodeBatcher)
	var ours, bareT, cpu time.Duration
	written := 0
	for gen := 1; b.Loop(); gen++ {
		b.StopTimer()
		var plans []*mutate.Plan
		for i := 0; i < len(paths); i += SeriesBenchBatch {
			batch := paths[i:min(i+SeriesBenchBatch, len(paths))]
			nodes, err := nb.GetNodes(batch)
			if err != nil {
				b.Fatal(err)
			}
			p := &mutate.Plan{Command: "bench series", Flags: map[string]string{"key": "k"}}
			for _, n := range nodes {
				p.Items = append(p.Items, mutate.Item{
					Kind: mutate.KindSet, Path: n.Path, Expect: n.Version, Before: n.Value,
					After: SeriesBenchBytes(gen), Description: "set k on 1 ledger(s) of " + n.Path,
				})
			}
			plans = append(plans, p)
		}
		b.StartTimer()
		t0, c0 := time.Now(), rusage.ProcessCPU()
		var failed error
		s, err := e.StartSeries(context.Background(), mutate.ApplyOptions{TrustBefore: true}, func(_ *mutate.Plan, _ *mutate.Result, err error) {
			if err != nil && failed == nil {
				failed = err
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range plans {
			if err := s.Apply(p); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil || failed != nil {
			b.Fatal(err, failed)
		}
		ours, cpu = ours+time.Since(t0), cpu+rusage.ProcessCPU()-c0
		written += len(paths)
		t1 := time.Now()
		for i := 0; i < len(bare); i += SeriesBenchBatch {
			writeBare(bare[i:min(i+SeriesBenchBatch, len(bare))], gen)
		}
		bareT += time.Since(t1)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(written), "cpu-µs/node")
	b.ReportMetric(float64(written)/ours.Seconds(), "ours-nodes/s")
	b.ReportMetric(bareT.Seconds()/ours.Seconds(), "ours/bare-speed")
}
