package etcd_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestEtcdBigNodes: etcd takes a request up to its --max-request-bytes (1.5 MiB
// by default). A cluster run with a larger one, named in the URL, takes a 5 MiB
// node past the client's own 2 MiB send cap; a node over the limit is refused
// before anything is sent, naming the node, its size and the limit.
func TestEtcdBigNodes(t *testing.T) {
	srv := testutil.StartEtcdWith(t, testutil.EtcdOptions{ExtraArgs: []string{"--max-request-bytes=10485760"}})
	addr := strings.TrimPrefix(srv.Endpoint, "http://")
	s := testutil.MustOpenMetadata(t, "etcd://"+addr+"?max-request-bytes=10485760", store.Options{Remote: store.RemoteOptions{}})
	v := bytes.Repeat([]byte{1, 2, 3, 4}, 5<<18) // 5 MiB
	if _, err := s.(store.NodeBatcher).CompareAndSetNodes([]store.NodeWrite{{Path: "/managed-ledgers/t/big", Value: v}}); err != nil {
		t.Fatalf("a 5 MiB node: %v", err)
	}
	if n, err := s.Get("/managed-ledgers/t/big"); err != nil || !bytes.Equal(n.Value, v) {
		t.Fatalf("Get: %d bytes, %v", len(n.Value), err)
	}
	var walked int
	if err := s.Walk(context.Background(), "/managed-ledgers/", func(n store.Node) error {
		if bytes.Equal(n.Value, v) {
			walked++
		}
		return nil
	}); err != nil || walked != 1 {
		t.Fatalf("walk: %d, %v", walked, err)
	}

	// The default limit, on a server that runs with it.
	def := testutil.StartEtcd(t)
	d := testutil.MustOpenMetadata(t, "etcd://"+strings.TrimPrefix(def.Endpoint, "http://"), store.Options{Remote: store.RemoteOptions{}})
	over := make([]byte, 2<<20)
	_, err := d.(store.NodeBatcher).CompareAndSetNodes([]store.NodeWrite{{Path: "/a", Value: []byte("a")}, {Path: "/managed-ledgers/t/huge", Value: over}})
	if !errors.Is(err, store.ErrNodeTooBig) {
		t.Fatalf("a 2 MiB node on a default etcd: %v, want ErrNodeTooBig", err)
	}
	for _, says := range []string{`"/managed-ledgers/t/huge"`, strconv.Itoa(len(over)), strconv.Itoa(3 << 19)} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("the refusal does not say %s: %v", says, err)
		}
	}
	if _, err := d.Get("/a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused batch wrote /a: %v", err)
	}
}
