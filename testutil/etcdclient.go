package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdClient is a plain client for seeding and checking, independent of our backend.
func EtcdClient(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// EtcdPut puts kvs (key, value, key, value...) one by one.
func EtcdPut(t testing.TB, c *clientv3.Client, kvs ...string) {
	t.Helper()
	for i := 0; i+1 < len(kvs); i += 2 {
		if _, err := c.Put(context.Background(), kvs[i], kvs[i+1]); err != nil {
			t.Fatalf("put %q: %v", kvs[i], err)
		}
	}
}

// EtcdPutMany writes n keys prefix+%06d in txns of 100.
func EtcdPutMany(t testing.TB, c *clientv3.Client, prefix string, n int, value func(i int) string) {
	t.Helper()
	for lo := 0; lo < n; lo += 100 {
		var ops []clientv3.Op
		for i := lo; i < min(lo+100, n); i++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s%06d", prefix, i), value(i)))
		}
		if _, err := c.Txn(context.Background()).Then(ops...).Commit(); err != nil {
			t.Fatalf("txn: %v", err)
		}
	}
}
