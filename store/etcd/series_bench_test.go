package etcd_test

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ledgermedic/ledgermedic/testutil"
)

func BenchmarkLiveEtcdSeriesWrite(b *testing.B) {
	srv := testutil.StartEtcd(b)
	c := testutil.EtcdClient(b, srv.Endpoint)
	v0 := string(testutil.SeriesBenchBytes(0))
	testutil.EtcdPutMany(b, c, "/ml/tenant/ns/persistent/topic-", testutil.SeriesBenchNodes, func(int) string { return v0 })
	testutil.EtcdPutMany(b, c, "/bare/tenant/ns/persistent/topic-", testutil.SeriesBenchNodes, func(int) string { return v0 })
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
	testutil.BenchSeries(b, dd, paths, bare, func(batch []string, gen int) {
		cmps := make([]clientv3.Cmp, len(batch))
		puts := make([]clientv3.Op, len(batch))
		for i, p := range batch {
			cmps[i] = clientv3.Compare(clientv3.Version(p), "=", gen)
			puts[i] = clientv3.OpPut(p, string(testutil.SeriesBenchBytes(gen)))
		}
		r, err := c.Txn(context.Background()).If(cmps...).Then(puts...).Commit()
		if err != nil || !r.Succeeded {
			b.Fatal(err)
		}
	})
}
