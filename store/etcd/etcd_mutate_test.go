package etcd_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// etcdDataDir opens a data dir (journal and ledgers) whose metadata store is the etcd at endpoint.
func etcdDataDir(t testing.TB, dir, endpoint string) *datadir.DataDir {
	t.Helper()
	u, err := store.ParseMetadataURL("etcd:" + endpoint)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := datadir.Open(dir, store.Options{Metadata: &u, Remote: store.RemoteOptions{Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatalf("open data dir %s with etcd %s: %v", dir, endpoint, err)
	}
	return dd
}

func newEtcdDataDir(t testing.TB, endpoint string) (string, *datadir.DataDir) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dd")
	dd, err := datadir.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, etcdDataDir(t, dir, endpoint)
}

// etcdState is every key as the client sees it: key -> value bytes (quoted).
func etcdState(t testing.TB, c *clientv3.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatalf("read etcd: %v", err)
	}
	m := map[string]string{}
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = fmt.Sprintf("%q", kv.Value)
	}
	return m
}

func seedForPlan(t testing.TB, c *clientv3.Client) {
	testutil.EtcdPut(t, c, "/schemas/acme/t", "\x0a\x01locator-old\x00\xff", "/managed-ledgers/acme/t", "ml", "/gone", "bye\x00")
}

func etcdPlan(t testing.TB, md store.MetadataStore) *mutate.Plan {
	t.Helper()
	ver := func(p string) uint64 {
		n, err := md.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		return n.Version
	}
	return &mutate.Plan{Command: "schema repair", Items: []mutate.Item{
		{Kind: mutate.KindSet, Path: "/schemas/acme/t", Expect: ver("/schemas/acme/t"), After: []byte("\x0a\x01locator-new")},
		{Kind: mutate.KindCreate, Path: "/schemas/acme/t/new", After: []byte{0, 1, 2}},
		{Kind: mutate.KindDelete, Path: "/gone", Expect: ver("/gone")},
	}}
}

func wantAfter(before map[string]string) map[string]string {
	after := map[string]string{}
	for k, v := range before {
		after[k] = v
	}
	after["/schemas/acme/t"] = fmt.Sprintf("%q", "\x0a\x01locator-new")
	after["/schemas/acme/t/new"] = fmt.Sprintf("%q", "\x00\x01\x02")
	delete(after, "/gone")
	return after
}

// Apply then undo through etcd: every key back byte for byte, read by the client.
func TestEtcdMutateApplyUndo(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	seedForPlan(t, c)
	before := etcdState(t, c)
	_, dd := newEtcdDataDir(t, srv.Endpoint)
	defer dd.Close()
	e, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Apply(context.Background(), etcdPlan(t, dd.Metadata), mutate.ApplyOptions{})
	if err != nil || res.State != mutate.StateCommitted || !res.Verified {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	if got := etcdState(t, c); fmt.Sprint(got) != fmt.Sprint(wantAfter(before)) {
		t.Errorf("after apply = %v\nwant %v", got, wantAfter(before))
	}
	if _, err := e.Undo(context.Background(), res.RunID, mutate.ApplyOptions{}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if got := etcdState(t, c); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("after undo = %v\nwant %v", got, before)
	}
}

// etcdRPCs is how many requests of a gRPC method (Range, Txn) the server has
// answered, from its own /metrics.
func etcdRPCs(t testing.TB, endpoint, method string) int {
	t.Helper()
	resp, err := http.Get(endpoint + "/metrics")
	if err != nil {
		t.Fatalf("etcd metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "grpc_server_handled_total{") && strings.Contains(line, `grpc_method="`+method+`"`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("etcd metrics line %q: %v", line, err)
			}
			n += int(v)
		}
	}
	return n
}

// A run's verification on etcd reads nothing of its own: the compare-and-set's
// Txn read the nodes back after writing them, and verify compares those.
func TestEtcdMutateVerifiesFromTheWriteTxn(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	seedForPlan(t, c)
	_, dd := newEtcdDataDir(t, srv.Endpoint)
	defer dd.Close()
	e, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	plan := etcdPlan(t, dd.Metadata)
	txns, ranges := etcdRPCs(t, srv.Endpoint, "Txn"), etcdRPCs(t, srv.Endpoint, "Range")
	res, err := e.Apply(context.Background(), plan, mutate.ApplyOptions{})
	if err != nil || res.State != mutate.StateCommitted || !res.Verified {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	// Preflight reads the set's and the delete's nodes (one Txn of Gets), then
	// the compare-and-set: two Txns, and no read for verification.
	if n, r := etcdRPCs(t, srv.Endpoint, "Txn")-txns, etcdRPCs(t, srv.Endpoint, "Range")-ranges; n != 2 || r != 0 {
		t.Errorf("the run sent %d Txns and %d Ranges; want 2 Txns (preflight, write) and no Range", n, r)
	}
	for _, it := range res.Items {
		if it.Status != mutate.StatusVerified {
			t.Errorf("item %s: %s, want verified", it.Path, it.Status)
		}
	}
}

// kill -9 of etcd at each point of a run, restart, recover: the keys are as before
// the run or fully applied, never a mixture.
func TestEtcdMutateKilledServer(t *testing.T) {
	cases := []struct {
		step      string
		wantAfter bool // the run committed before the kill
	}{
		{"journaled", false}, // the write never reaches etcd: outcome unknown to the engine
		// The write committed, the engine lost etcd right after: verification
		// compares what the write's own Txn read back and the commit is the
		// journal's, so the run ends committed without etcd.
		{"item-0", true},
		{"applied", true},
		{"verified", true}, // the journal commit needs no etcd: the run is done
	}
	for _, tc := range cases {
		t.Run(tc.step, func(t *testing.T) {
			srv := testutil.StartEtcd(t)
			c := testutil.EtcdClient(t, srv.Endpoint)
			seedForPlan(t, c)
			before := etcdState(t, c)
			dir, dd := newEtcdDataDir(t, srv.Endpoint)
			e, err := mutate.New(dd)
			if err != nil {
				t.Fatal(err)
			}
			plan := etcdPlan(t, dd.Metadata)
			e.CrashHook = func(s string) {
				if s == tc.step {
					srv.Kill()
				}
			}
			_, applyErr := e.Apply(context.Background(), plan, mutate.ApplyOptions{})
			e.CrashHook = nil
			dd.Close()
			if (applyErr == nil) != tc.wantAfter {
				t.Errorf("apply with etcd killed at %s: %v", tc.step, applyErr)
			}
			srv.Restart()
			dd = etcdDataDir(t, dir, srv.Endpoint)
			defer dd.Close()
			e, err = mutate.New(dd)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Recover(context.Background()); err != nil {
				t.Fatalf("recover: %v", err)
			}
			want := before
			if tc.wantAfter {
				want = wantAfter(before)
			}
			if got := etcdState(t, c); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("after kill at %s and recovery = %v\nwant %v", tc.step, got, want)
			}
		})
	}
}
