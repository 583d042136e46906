package zk_test

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

// pulsarZK is a ZooKeeper run as Pulsar runs it: jute.maxbuffer 10 MiB.
func pulsarZK(t *testing.T) *testutil.ZKServer {
	return testutil.StartZooKeeper(t, testutil.ZKOptions{JVMFlags: []string{"-Djute.maxbuffer=10485760"}})
}

// TestZKBigNodes: on a server with Pulsar's 10 MiB jute.maxbuffer, a 5 MiB node is
// created, rewritten and read back by every read path (Get, GetNodes, Walk); a node
// over the limit is refused before anything is sent, naming the node, its size and
// the limit, alone or in a batch.
func TestZKBigNodes(t *testing.T) {
	srv := pulsarZK(t)
	raw := testutil.ZKClient(t, srv.Addr)
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{})
	big := func(seed byte, n int) []byte { return bytes.Repeat([]byte{seed, seed + 1, seed + 2, seed + 3}, n/4) }
	v1, v2 := big(1, 5<<20), big(7, 5<<20+12345)

	vs, err := s.CompareAndSetNodes([]store.NodeWrite{{Path: "/managed-ledgers/t/big", Value: v1}})
	if err != nil {
		t.Fatalf("create a 5 MiB node: %v", err)
	}
	if _, err := s.CompareAndSet("/managed-ledgers/t/big", vs[0], v2); err != nil {
		t.Fatalf("rewrite a 5 MiB node: %v", err)
	}
	if got, _, err := raw.Get("/managed-ledgers/t/big"); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("raw read: %d bytes, %v", len(got), err)
	}
	if n, err := s.Get("/managed-ledgers/t/big"); err != nil || !bytes.Equal(n.Value, v2) {
		t.Errorf("Get: %d bytes, %v", len(n.Value), err)
	}
	if nodes, err := s.(store.NodeBatcher).GetNodes([]string{"/managed-ledgers/t/big"}); err != nil || !bytes.Equal(nodes[0].Value, v2) {
		t.Errorf("GetNodes: %v", err)
	}
	var walked []store.Node
	if err := s.Walk(context.Background(), "/managed-ledgers/", func(n store.Node) error { walked = append(walked, n); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(walked) != 2 || !bytes.Equal(walked[1].Value, v2) {
		t.Errorf("walk: %d nodes", len(walked))
	}

	over := big(3, 10<<20)
	for _, writes := range [][]store.NodeWrite{
		{{Path: "/managed-ledgers/t/huge", Value: over}},
		{{Path: "/managed-ledgers/t/small", Value: []byte("x")}, {Path: "/managed-ledgers/t/huge", Value: over}},
	} {
		_, err := s.CompareAndSetNodes(writes)
		if !errors.Is(err, store.ErrNodeTooBig) {
			t.Fatalf("a 10 MiB node in %d writes: %v, want ErrNodeTooBig", len(writes), err)
		}
		for _, says := range []string{`"/managed-ledgers/t/huge"`, strconv.Itoa(len(over)), "10485760", srv.Addr} {
			if !strings.Contains(err.Error(), says) {
				t.Errorf("the refusal does not say %s: %v", says, err)
			}
		}
	}
	for _, p := range []string{"/managed-ledgers/t/huge", "/managed-ledgers/t/small"} {
		if ok, _, _ := raw.Exists(p); ok {
			t.Errorf("%s was written by a refused batch", p)
		}
	}
}

// TestZKMaxBufferOption: ?jute-maxbuffer= says what the ensemble runs with, and is
// checked as a URL option.
func TestZKMaxBufferOption(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{}) // ZooKeeper's default, 0xfffff
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr+"?jute-maxbuffer=1048575", store.Options{})
	_, err := s.CompareAndSetNodes([]store.NodeWrite{{Path: "/n", Value: make([]byte, 1<<20)}})
	if !errors.Is(err, store.ErrNodeTooBig) || !strings.Contains(err.Error(), "1048575") {
		t.Fatalf("a 1 MiB node on a 0xfffff server: %v, want ErrNodeTooBig naming the limit", err)
	}
	for _, bad := range []string{"x", "0", "-5", "12"} {
		if _, err := testutil.OpenMetadata(t, "zk://"+srv.Addr+"?jute-maxbuffer="+bad, store.Options{}); !errors.Is(err, store.ErrBadURL) {
			t.Errorf("jute-maxbuffer=%s: %v, want ErrBadURL", bad, err)
		}
	}
}
