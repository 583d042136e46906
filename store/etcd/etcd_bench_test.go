package etcd_test

import (
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// benchLiveEtcd starts an etcd holding 50k keys of 200 bytes.
const (
	benchLiveKeys = 50_000
	benchCASBatch = 100
)

func benchLiveEtcd(b *testing.B) *testutil.EtcdServer {
	b.Helper()
	srv := testutil.StartEtcd(b)
	c := testutil.EtcdClient(b, srv.Endpoint)
	testutil.EtcdPutMany(b, c, "/managed-ledgers/t/ns/persistent/topic-", benchLiveKeys, func(int) string { return string(make([]byte, 200)) })
	return srv
}

// BenchmarkEtcdLiveWalk: Walk over 50k keys against a bare client range read in pages
// of the same size (1000), pinned to the first page's revision.
func BenchmarkEtcdLiveWalk(b *testing.B) {
	srv := benchLiveEtcd(b)
	b.Run("ours", func(b *testing.B) {
		m := testutil.MustOpenMetadata(b, "etcd:"+srv.Endpoint, store.Options{Remote: store.RemoteOptions{}})
		for b.Loop() {
			n := 0
			if err := m.Walk(context.Background(), "/managed-ledgers/", func(store.Node) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
			if n != benchLiveKeys {
				b.Fatalf("walked %d", n)
			}
		}
	})
	b.Run("bare-range-pages", func(b *testing.B) {
		c := testutil.EtcdClient(b, srv.Endpoint)
		ctx := context.Background()
		end := clientv3.GetPrefixRangeEnd("/managed-ledgers/")
		for b.Loop() {
			n, begin, rev := 0, "/managed-ledgers/", int64(0)
			for {
				opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
				if rev > 0 {
					opts = append(opts, clientv3.WithRev(rev))
				}
				resp, err := c.Get(ctx, begin, opts...)
				if err != nil {
					b.Fatal(err)
				}
				rev = resp.Header.Revision
				n += len(resp.Kvs)
				if !resp.More {
					break
				}
				begin = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
			}
			if n != benchLiveKeys {
				b.Fatalf("read %d", n)
			}
		}
	})
}

// BenchmarkEtcdCAS: one CompareAndSetNodes of 100 nodes per op against a bare Txn of
// the same 100 version compares and puts.
func BenchmarkEtcdCAS(b *testing.B) {
	srv := benchLiveEtcd(b)
	paths := make([]string, benchCASBatch)
	for i := range paths {
		paths[i] = fmt.Sprintf("/managed-ledgers/t/ns/persistent/topic-%06d", i)
	}
	b.Run("ours", func(b *testing.B) {
		m := testutil.MustOpenMetadata(b, "etcd:"+srv.Endpoint, store.Options{Remote: store.RemoteOptions{}})
		nodes, err := m.GetNodes(paths)
		if err != nil {
			b.Fatal(err)
		}
		writes := make([]store.NodeWrite, len(paths))
		for b.Loop() {
			for i, n := range nodes {
				writes[i] = store.NodeWrite{Path: n.Path, Expect: n.Version, Value: []byte("v")}
			}
			vs, err := m.CompareAndSetNodes(writes)
			if err != nil {
				b.Fatal(err)
			}
			for i := range nodes {
				nodes[i].Version = vs[i]
			}
		}
	})
	b.Run("bare-txn", func(b *testing.B) {
		c := testutil.EtcdClient(b, srv.Endpoint)
		ctx := context.Background()
		resp, err := c.Get(ctx, paths[0], clientv3.WithRange(paths[len(paths)-1]+"\x00"))
		if err != nil {
			b.Fatal(err)
		}
		versions := make([]int64, len(paths))
		for i, kv := range resp.Kvs {
			versions[i] = kv.Version
		}
		for b.Loop() {
			cmps := make([]clientv3.Cmp, len(paths))
			ops := make([]clientv3.Op, len(paths))
			for i, p := range paths {
				cmps[i] = clientv3.Compare(clientv3.Version(p), "=", versions[i])
				ops[i] = clientv3.OpPut(p, "v")
			}
			r, err := c.Txn(ctx).If(cmps...).Then(ops...).Commit()
			if err != nil || !r.Succeeded {
				b.Fatalf("txn: %v (succeeded %v)", err, r != nil && r.Succeeded)
			}
			for i := range versions {
				versions[i]++
			}
		}
	})
}
