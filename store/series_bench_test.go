package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ledgermedic/ledgermedic/internal/testutil"
	"github.com/ledgermedic/ledgermedic/internal/testutil/rusage"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
)

// The write path of a back-fill alone, without its planning: a mutate.Series of
// runs of seriesBenchBatch node sets each (journal, compare-and-set, read-back
// verification, commit) against a live store, and a bare loop of the same batches
// (Multi of SetData, Txn of compares and puts) over other nodes in the same run.
// "cpu-µs/node" is this process's CPU per node written by the series.
const (
	seriesBenchNodes = 2000
	seriesBenchBatch = 100
	seriesBenchValue = 200 // bytes per node, about a back-filled ManagedLedgerInfo
)

// seriesBenchValue is the value of generation gen: same size every generation.
func seriesBenchBytes(gen int) []byte {
	v := make([]byte, seriesBenchValue)
	for i := range v {
		v[i] = byte('a' + (gen+i)%26)
	}
	return v
}

// benchSeries runs one series over paths per iteration and the bare batches over
// bare; writeBare writes one batch of the bare nodes.
func benchSeries(b *testing.B, dd *store.DataDir, paths, bare []string, writeBare func(batch []string, gen int)) {
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
		for i := 0; i < len(paths); i += seriesBenchBatch {
			batch := paths[i:min(i+seriesBenchBatch, len(paths))]
			nodes, err := nb.GetNodes(batch)
			if err != nil {
				b.Fatal(err)
			}
			p := &mutate.Plan{Command: "bench series", Flags: map[string]string{"key": "k"}}
			for _, n := range nodes {
				p.Items = append(p.Items, mutate.Item{
					Kind: mutate.KindSet, Path: n.Path, Expect: n.Version, Before: n.Value,
					After: seriesBenchBytes(gen), Description: "set k on 1 ledger(s) of " + n.Path,
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
		for i := 0; i < len(bare); i += seriesBenchBatch {
			writeBare(bare[i:min(i+seriesBenchBatch, len(bare))], gen)
		}
		bareT += time.Since(t1)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(written), "cpu-µs/node")
	b.ReportMetric(float64(written)/ours.Seconds(), "ours-nodes/s")
	b.ReportMetric(bareT.Seconds()/ours.Seconds(), "ours/bare-speed")
}

func BenchmarkLiveZKSeriesWrite(b *testing.B) {
	srv := testutil.StartZooKeeper(b, testutil.ZKOptions{SnapCount: -1})
	raw := zkRaw(b, srv.Addr)
	var paths, bare []string
	for _, root := range []string{"/ml", "/bare"} {
		if _, err := raw.Create(root, nil, 0, openACL); err != nil {
			b.Fatal(err)
		}
		for i := range seriesBenchNodes {
			p := fmt.Sprintf("%s/tenant/ns/persistent/topic-%05d", root, i)
			if i == 0 {
				for _, d := range []string{root + "/tenant", root + "/tenant/ns", root + "/tenant/ns/persistent"} {
					if _, err := raw.Create(d, nil, 0, openACL); err != nil {
						b.Fatal(err)
					}
				}
			}
			if _, err := raw.Create(p, seriesBenchBytes(0), 0, openACL); err != nil {
				b.Fatal(err)
			}
			if root == "/ml" {
				paths = append(paths, p)
			} else {
				bare = append(bare, p)
			}
		}
	}
	dd, _ := zkEngine(b, zkJournalDir(b), srv.Addr)
	benchSeries(b, dd, paths, bare, func(batch []string, gen int) {
		ops := make([]any, len(batch))
		for i, p := range batch {
			ops[i] = &zk.SetDataRequest{Path: p, Data: seriesBenchBytes(gen), Version: int32(gen - 1)}
		}
		if _, err := raw.Multi(ops...); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkLiveEtcdSeriesWrite(b *testing.B) {
	srv := testutil.StartEtcd(b)
	c := etcdClient(b, srv.Endpoint)
	v0 := string(seriesBenchBytes(0))
	putMany(b, c, "/ml/tenant/ns/persistent/topic-", seriesBenchNodes, func(int) string { return v0 })
	putMany(b, c, "/bare/tenant/ns/persistent/topic-", seriesBenchNodes, func(int) string { return v0 })
	list := func(prefix string) []string {
		resp, err := c.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			b.Fatal(err)
		}
		var out []string
		for _, kv := range resp.Kvs {
			out = append(out, string(kv.Key))
		}
		return out
	}
	paths, bare := list("/ml/"), list("/bare/")
	_, dd := newEtcdDataDir(b, srv.Endpoint)
	b.Cleanup(func() { dd.Close() })
	benchSeries(b, dd, paths, bare, func(batch []string, gen int) {
		cmps := make([]clientv3.Cmp, len(batch))
		puts := make([]clientv3.Op, len(batch))
		for i, p := range batch {
			cmps[i] = clientv3.Compare(clientv3.Version(p), "=", gen)
			puts[i] = clientv3.OpPut(p, string(seriesBenchBytes(gen)))
		}
		r, err := c.Txn(context.Background()).If(cmps...).Then(puts...).Commit()
		if err != nil || !r.Succeeded {
			b.Fatal(err)
		}
	})
}
