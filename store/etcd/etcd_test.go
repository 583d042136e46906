package etcd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ledgermedic/ledgermedic/store"
	etcdstore "github.com/ledgermedic/ledgermedic/store/etcd"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func walkPaths(t testing.TB, m store.MetadataStore, prefix, start string) []string {
	t.Helper()
	var got []string
	err := m.WalkFrom(context.Background(), prefix, start, func(n store.Node) error {
		got = append(got, n.Path)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %q from %q: %v", prefix, start, err)
	}
	return got
}

func TestEtcdLiveReads(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	testutil.EtcdPut(t, c,
		"/managed-ledgers/acme/orders/persistent/o1", "v1",
		"/managed-ledgers/acme/orders/persistent/o1", "v1b", // version 2
		"/managed-ledgers/acme/ordinal/persistent/x", "x",
		"/managed-ledgers/acme/other/persistent/y", "y",
		"/managed-ledgers/acme/orders", "", // a parent key with an empty value (sequential nodes)
		"/schemas/acme/orders/t", "\x00\xff\x01",
		"foo", "not pulsar",
	)
	b := testutil.MustOpenMetadata(t, "etcd:"+srv.Endpoint, store.Options{Remote: store.RemoteOptions{}})

	src := b.Source()
	if src.Kind != store.SchemeEtcd || src.Revision < 8 || src.ReadOnly {
		t.Errorf("Source = %+v; want kind etcd, revision >= 8, writable", src)
	}
	n, err := b.Get("/managed-ledgers/acme/orders/persistent/o1")
	if err != nil || string(n.Value) != "v1b" || n.Version != 2 {
		t.Errorf("Get o1 = %+v, %v; want v1b version 2", n, err)
	}
	if n, err := b.Get("/schemas/acme/orders/t"); err != nil || !bytes.Equal(n.Value, []byte{0, 0xff, 1}) || n.Version != 1 {
		t.Errorf("Get schema = %+v, %v; want bytes 00ff01 version 1", n, err)
	}
	if _, err := b.Get("/nope"); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "/nope") {
		t.Errorf("Get /nope: %v; want ErrNotFound naming the path", err)
	}

	cases := []struct {
		prefix, start string
		want          []string
	}{
		{"/managed-ledgers/acme/ord", "", []string{
			"/managed-ledgers/acme/orders", "/managed-ledgers/acme/orders/persistent/o1", "/managed-ledgers/acme/ordinal/persistent/x"}},
		{"/managed-ledgers/acme/orders/", "", []string{"/managed-ledgers/acme/orders/persistent/o1"}},
		{"/managed-ledgers/", "/managed-ledgers/acme/ordinal", []string{
			"/managed-ledgers/acme/ordinal/persistent/x", "/managed-ledgers/acme/other/persistent/y"}},
		{"", "", []string{ // every Pulsar path, not "foo"
			"/managed-ledgers/acme/orders", "/managed-ledgers/acme/orders/persistent/o1",
			"/managed-ledgers/acme/ordinal/persistent/x", "/managed-ledgers/acme/other/persistent/y", "/schemas/acme/orders/t"}},
		{"/zzz", "", nil},
	}
	for _, tc := range cases {
		if got := walkPaths(t, b, tc.prefix, tc.start); !slices.Equal(got, tc.want) {
			t.Errorf("walk %q from %q = %q, want %q", tc.prefix, tc.start, got, tc.want)
		}
	}

	nodes, err := b.GetNodes([]string{"/schemas/acme/orders/t", "/absent", "/managed-ledgers/acme/orders"})
	if err != nil {
		t.Fatal(err)
	}
	if nodes[0].Version != 1 || nodes[1].Version != 0 || nodes[1].Value != nil || nodes[1].Path != "/absent" ||
		nodes[2].Version != 1 || len(nodes[2].Value) != 0 {
		t.Errorf("GetNodes = %+v", nodes)
	}
}

// TestEtcdWalkWindows: a walk asks each page of a window of the range, so the
// keys etcd counts for it grow with the keys walked, not with their square
// (one range paged by its limit: about n²/2 pageKeys). Dense and sparse
// stretches, walked whole and from starts inside them, come out complete and
// in order.
func TestEtcdWalkWindows(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	var all []string // under /w/, sorted
	put := func(prefix string, n int) {
		testutil.EtcdPutMany(t, c, prefix, n, func(int) string { return "v" })
		for i := range n {
			all = append(all, fmt.Sprintf("%s%06d", prefix, i))
		}
	}
	put("/w/a", 300)
	put("/w/ns/persistent/topic-", 10_000)
	put("/w/z\xff", 300)
	testutil.EtcdPutMany(t, c, "/x", 5, func(int) string { return "v" }) // past the walk's end
	b := testutil.MustOpenMetadata(t, "etcd://"+strings.TrimPrefix(srv.Endpoint, "http://"), store.Options{})
	// Pages of 100, and of the default 1,000.
	for _, pageKeys := range []int{100, 1000} {
		etcdstore.SetPageKeysForTest(b, int64(pageKeys))
		keys0, pages0 := etcdstore.CountedForTest(b)
		if got := walkPaths(t, b, "/w/", ""); !slices.Equal(got, all) {
			t.Fatalf("walk of /w/: %d keys, want %d", len(got), len(all))
		}
		keys, pages := etcdstore.CountedForTest(b)
		keys, pages = keys-keys0, pages-pages0
		t.Logf("a walk of %d keys in pages of %d: %d pages, etcd counted %d keys", len(all), pageKeys, pages, keys)
		if keys > int64(6*len(all)) {
			t.Errorf("a walk of %d keys in pages of %d had etcd count %d keys, want at most %d", len(all), pageKeys, keys, 6*len(all))
		}
		// Two pages a page of keys, and an empty page per 3 bits of each of the
		// two gaps between the stretches (under 210 bits each).
		if most := 2*len(all)/pageKeys + 2*70; pages > int64(most) {
			t.Errorf("a walk of %d keys in pages of %d read %d pages, want at most %d", len(all), pageKeys, pages, most)
		}
	}
	etcdstore.SetPageKeysForTest(b, 100)
	for _, start := range []string{"/w/ns/persistent/topic-004999x", "/w/b", "/w/z\xff000299"} {
		i, _ := slices.BinarySearch(all, start)
		if got := walkPaths(t, b, "/w/", start); !slices.Equal(got, all[i:]) {
			t.Errorf("walk of /w/ from %q: %d keys, want %d", start, len(got), len(all)-i)
		}
	}
}

// A walk over several pages reads every page at the first page's revision: writes
// during the walk are not seen.
func TestEtcdLiveWalkPagesSnapshot(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	const n = 2500 // pages of 64, 256, 1000, 1000 and 180
	testutil.EtcdPutMany(t, c, "/p/k", n, func(i int) string { return fmt.Sprint("v", i) })
	b := testutil.MustOpenMetadata(t, "etcd://"+strings.TrimPrefix(srv.Endpoint, "http://"), store.Options{Remote: store.RemoteOptions{}})
	var got []string
	wrote := false
	err := b.Walk(context.Background(), "/p/", func(nd store.Node) error {
		if want := "v" + strings.TrimLeft(strings.TrimPrefix(nd.Path, "/p/k"), "0"); string(nd.Value) != want && nd.Path != "/p/k000000" {
			return fmt.Errorf("%s = %q, want %q", nd.Path, nd.Value, want)
		}
		got = append(got, nd.Path)
		if !wrote {
			wrote = true
			testutil.EtcdPut(t, c, "/p/k002000", "changed", "/p/k001500x", "new")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || !slices.IsSorted(got) {
		t.Fatalf("walk saw %d keys (sorted %v), want %d in order", len(got), slices.IsSorted(got), n)
	}
	// After the walk, a new walk sees the writes.
	if p := walkPaths(t, b, "/p/k001500", ""); !slices.Equal(p, []string{"/p/k001500", "/p/k001500x"}) {
		t.Errorf("second walk = %q", p)
	}

	// The next page is read ahead while fn runs: an error from fn, or a cancel,
	// still ends the walk right there, with fn's error or the context's.
	stop := errors.New("stop")
	seen := 0
	err = b.Walk(context.Background(), "/p/", func(store.Node) error {
		if seen++; seen == 1500 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 1500 {
		t.Errorf("walk stopped by fn at node 1500: %v after %d nodes; want fn's error after 1500", err, seen)
	}
	ctx, cancel := context.WithCancel(context.Background())
	seen = 0
	err = b.Walk(ctx, "/p/", func(store.Node) error {
		if seen++; seen == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || seen != 64 {
		t.Errorf("walk cancelled in page 1: %v after %d nodes; want context.Canceled at the end of the page (64)", err, seen)
	}
}

func TestEtcdLiveCompareAndSet(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	testutil.EtcdPut(t, c, "/a", "a1", "/b", "b1", "/b", "b2", "/c", "c1")
	b := testutil.MustOpenMetadata(t, "etcd:"+srv.Endpoint, store.Options{Remote: store.RemoteOptions{}})
	ctx := context.Background()
	state := func() map[string]string {
		resp, err := c.Get(ctx, "/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range resp.Kvs {
			m[string(kv.Key)] = fmt.Sprintf("%s@%d", kv.Value, kv.Version)
		}
		return m
	}
	before := state()

	// Stale: /a expected 2 (is 1), /new must not exist (it does not: fine), /c expected 1 (ok).
	_, err := b.CompareAndSetNodes([]store.NodeWrite{
		{Path: "/a", Expect: 2, Value: []byte("x")},
		{Path: "/new", Expect: 0, Value: []byte("n")},
		{Path: "/b", Expect: 1, Delete: true},
		{Path: "/c", Expect: 1, Value: []byte("c2")},
	})
	if !errors.Is(err, store.ErrVersionMismatch) || !strings.Contains(err.Error(), `"/a"`) || !strings.Contains(err.Error(), `"/b"`) ||
		strings.Contains(err.Error(), `node "/c"`) || strings.Contains(err.Error(), `node "/new"`) {
		t.Errorf("stale batch: %v; want a mismatch naming /a and /b only", err)
	}
	if after := state(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("stale batch wrote: %v, was %v", after, before)
	}

	vs, err := b.CompareAndSetNodes([]store.NodeWrite{
		{Path: "/a", Expect: 1, Value: []byte("a2")},
		{Path: "/new", Expect: 0, Value: []byte{}},
		{Path: "/b", Expect: 2, Delete: true},
	})
	if err != nil || !slices.Equal(vs, []uint64{2, 1, 0}) {
		t.Fatalf("batch = %v, %v; want versions [2 1 0]", vs, err)
	}
	if got := state(); got["/a"] != "a2@2" || got["/new"] != "@1" || got["/b"] != "" || got["/c"] != "c1@1" {
		t.Errorf("after batch: %v", got)
	}
	// Create of an existing node is a mismatch.
	if _, err := b.CompareAndSet("/a", 0, []byte("z")); !errors.Is(err, store.ErrVersionMismatch) {
		t.Errorf("create existing: %v", err)
	}
	if v, err := b.CompareAndSet("/a", 2, []byte("a3")); err != nil || v != 3 {
		t.Errorf("CompareAndSet = %d, %v", v, err)
	}
	if err := b.CompareAndDelete("/c", 5); !errors.Is(err, store.ErrVersionMismatch) {
		t.Errorf("stale delete: %v", err)
	}
	if err := b.CompareAndDelete("/c", 1); err != nil {
		t.Errorf("delete: %v", err)
	}
	if n, err := b.Get("/a"); err != nil || n.Version != 3 || string(n.Value) != "a3" {
		t.Errorf("Get /a = %+v, %v", n, err)
	}

	// Too big, refused before sending: nothing written.
	var many []store.NodeWrite
	for i := range 129 {
		many = append(many, store.NodeWrite{Path: fmt.Sprintf("/many/%d", i), Value: []byte("v")})
	}
	if _, err := b.CompareAndSetNodes(many); !errors.Is(err, store.ErrBatchTooBig) {
		t.Errorf("129 ops: %v; want ErrBatchTooBig", err)
	}
	if _, err := b.CompareAndSetNodes(many[:128]); err != nil {
		t.Errorf("128 ops: %v", err)
	}
	big := []store.NodeWrite{{Path: "/big1", Value: make([]byte, 800<<10)}, {Path: "/big2", Value: make([]byte, 800<<10)}}
	if _, err := b.CompareAndSetNodes(big); !errors.Is(err, store.ErrBatchTooBig) {
		t.Errorf("1.6 MB batch: %v; want ErrBatchTooBig", err)
	}
	if _, err := b.CompareAndSetNodes(big[:1]); err != nil {
		t.Errorf("800 KB batch: %v", err)
	}
	// A server with a lower limit refuses what our default lets through: still ErrBatchTooBig.
	b2 := testutil.MustOpenMetadata(t, "etcd:"+srv.Endpoint+"?max-txn-ops=2", store.Options{Remote: store.RemoteOptions{}})
	if _, err := b2.CompareAndSetNodes(many[:3]); !errors.Is(err, store.ErrBatchTooBig) {
		t.Errorf("3 ops over max-txn-ops=2: %v", err)
	}
}

func TestEtcdLiveRateLimit(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	testutil.EtcdPutMany(t, c, "/r/", 50, func(int) string { return "v" })
	b := testutil.MustOpenMetadata(t, "etcd:"+srv.Endpoint, store.Options{Remote: store.RemoteOptions{Rate: 20}})
	start := time.Now()
	for range 11 {
		if _, err := b.Get("/r/000001"); err != nil {
			t.Fatal(err)
		}
	}
	// 11 requests at 20/s with a burst of 1: at least 10 waits of 50 ms.
	if d := time.Since(start); d < 450*time.Millisecond {
		t.Errorf("11 reads at 20/s took %v; want >= 450ms", d)
	}
}

func TestEtcdUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = testutil.OpenMetadata(t, "etcd://"+addr, store.Options{Remote: store.RemoteOptions{Timeout: time.Second}})
	d := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Errorf("open of a dead endpoint: %v; want an error naming %s and the timeout", err, addr)
	}
	if d > 3*time.Second {
		t.Errorf("open of a dead endpoint took %v; want about the 1s timeout", d)
	}
}

func TestEtcdAuth(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	ctx := context.Background()
	testutil.EtcdPut(t, c, "/k", "v")
	if _, err := c.UserAdd(ctx, "root", "rootpw"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, url string
		remote    store.RemoteOptions
		wantErr   string
	}{
		{"wrong password", "etcd:" + srv.Endpoint, store.RemoteOptions{EtcdUser: "root", EtcdPassword: "nope"}, `authentication for user "root" failed`},
		{"wrong password in URL", "etcd:" + srv.Endpoint + "?user=root&password=nope", store.RemoteOptions{}, `authentication for user "root" failed`},
		{"no credentials", "etcd:" + srv.Endpoint, store.RemoteOptions{}, "authentication"},
		{"right password", "etcd:" + srv.Endpoint + "?user=root&password=rootpw", store.RemoteOptions{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := testutil.OpenMetadata(t, tc.url, store.Options{Remote: tc.remote})
			if tc.wantErr != "" {
				if err == nil {
					b.Close()
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "nope") {
					t.Errorf("open: %v; want an error with %q that does not show the password", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if n, err := b.Get("/k"); err != nil || string(n.Value) != "v" {
				t.Errorf("Get = %+v, %v", n, err)
			}
			if u := b.Source().URL; strings.Contains(u, "rootpw") || !strings.Contains(u, "REDACTED") {
				t.Errorf("Source().URL = %q; want the password redacted", u)
			}
		})
	}
}

func TestEtcdTLSFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		remote  store.RemoteOptions
		query   string
		wantErr string
	}{
		{"missing CA file", store.RemoteOptions{EtcdCACert: filepath.Join(dir, "none.pem")}, "", "none.pem"},
		{"CA file without PEM", store.RemoteOptions{}, "?cacert=" + bad, "no PEM certificate"},
		{"cert without key", store.RemoteOptions{EtcdCert: bad}, "", "go together"},
		{"bad key pair", store.RemoteOptions{EtcdCert: bad, EtcdKey: bad}, "", "bad.pem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testutil.OpenMetadata(t, "etcd:https://127.0.0.1:1"+tc.query, store.Options{Remote: tc.remote})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("open: %v; want %q", err, tc.wantErr)
			}
		})
	}
}

// GetNodes returns what a plain client reads, whether it reads the paths as a range
// (ascending, few keys between them) or as single Gets (unsorted, absent keys,
// too many keys between them), and in chunks of max-txn-ops.
func TestEtcdGetNodesSpans(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	const topics = 300
	ml := func(i int) string { return fmt.Sprintf("/managed-ledgers/t/ns/persistent/topic-%06d", i) }
	var ops []clientv3.Op
	for i := 0; i < topics; i++ {
		ops = append(ops, clientv3.OpPut(ml(i), fmt.Sprint("info-", i)))
		// Cursors sort between two topics' keys: one each, ten for topics 200-209.
		cursors := 1
		if i >= 200 && i < 210 {
			cursors = 10
		}
		for k := 0; k < cursors; k++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s/sub-%d", ml(i), k), "cursor"))
		}
		if len(ops) >= 100 {
			if _, err := c.Txn(context.Background()).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	if _, err := c.Txn(context.Background()).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < topics; i += 7 { // version 2 for some
		if _, err := c.Put(context.Background(), ml(i), fmt.Sprint("info2-", i)); err != nil {
			t.Fatal(err)
		}
	}
	url := "etcd://" + strings.TrimPrefix(srv.Endpoint, "http://")

	seq := func(lo, hi int) []string {
		var ps []string
		for i := lo; i < hi; i++ {
			ps = append(ps, ml(i))
		}
		return ps
	}
	withAbsent := seq(0, 50)
	withAbsent = append(withAbsent[:20], append([]string{ml(19) + "a", ml(19) + "b"}, withAbsent[20:]...)...)
	unsorted := seq(0, 40)
	unsorted[3], unsorted[30] = unsorted[30], unsorted[3]
	cases := []struct {
		name  string
		paths []string
		span  bool
	}{
		{"ascending, a cursor between", seq(0, 100), true},
		{"ascending, ten cursors between", seq(195, 215), false},
		{"ascending with absent keys", withAbsent, true},
		{"unsorted", unsorted, false},
		{"too few for a span", seq(0, 5), false},
		{"three chunks", seq(0, topics), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := testutil.MustOpenMetadata(t, url, store.Options{Remote: store.RemoteOptions{}})
			if got := etcdstore.EtcdReadsAsSpan(b, tc.paths[:min(len(tc.paths), 128)]); got != tc.span {
				t.Errorf("read as a span: %v, want %v", got, tc.span)
			}
			nodes, err := b.GetNodes(tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range tc.paths {
				r, err := c.Get(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				var want store.Node
				want.Path = p
				if len(r.Kvs) == 1 {
					want.Value, want.Version = r.Kvs[0].Value, uint64(r.Kvs[0].Version)
				}
				if nodes[i].Path != want.Path || nodes[i].Version != want.Version || !bytes.Equal(nodes[i].Value, want.Value) {
					t.Fatalf("node %d: %q v%d %q, want %q v%d %q", i, nodes[i].Path, nodes[i].Version, nodes[i].Value,
						want.Path, want.Version, want.Value)
				}
			}
		})
	}
	// A span that met too many keys turns spans off for the store.
	b := testutil.MustOpenMetadata(t, url, store.Options{Remote: store.RemoteOptions{}})
	if !etcdstore.EtcdReadsAsSpan(b, seq(0, 100)) || etcdstore.EtcdReadsAsSpan(b, seq(195, 215)) || etcdstore.EtcdReadsAsSpan(b, seq(0, 100)) {
		t.Error("spans stay on after a span read met more keys than it may read")
	}
}

// CompareAndSetNodesReadBack returns, from its own Txn, each node as the write
// left it: the same as a read after it. It gives up the read-back (nil nodes,
// writes applied) where the range would hold too many other keys or the Txn has
// no op to spare, and a refused Txn writes and returns nothing.
func TestEtcdCompareAndSetReadsBack(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	ml := func(i int) string { return fmt.Sprintf("/managed-ledgers/t/ns/persistent/topic-%06d", i) }
	cursor := func(i, k int) string { return fmt.Sprintf("%s/sub-%d", ml(i), k) }
	for i := range 400 {
		cursors := 1
		if i >= 300 && i < 310 {
			cursors = 10
		}
		kvs := []string{ml(i), fmt.Sprint("info-", i)}
		for k := range cursors {
			kvs = append(kvs, cursor(i, k), "cursor")
		}
		testutil.EtcdPut(t, c, kvs...)
	}
	b := testutil.MustOpenMetadata(t, "etcd:"+srv.Endpoint, store.Options{Remote: store.RemoteOptions{}})
	rb, ok := b.(store.ReadBackWriter)
	if !ok {
		t.Fatal("the etcd backend does not read back its writes")
	}
	// check compares nodes with a read after the write.
	check := func(writes []store.NodeWrite, nodes []store.Node) {
		t.Helper()
		paths := make([]string, len(writes))
		for i, w := range writes {
			paths[i] = w.Path
		}
		after, err := b.GetNodes(paths)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range nodes {
			if n.Path != after[i].Path || n.Version != after[i].Version || !bytes.Equal(n.Value, after[i].Value) {
				t.Errorf("read back %q v%d %q; read after: %q v%d %q", n.Path, n.Version, n.Value, after[i].Path, after[i].Version, after[i].Value)
			}
		}
	}
	// Puts, a create and a delete, out of order, with cursors between.
	var writes []store.NodeWrite
	for i := 99; i >= 0; i-- {
		writes = append(writes, store.NodeWrite{Path: ml(i), Expect: 1, Value: []byte(fmt.Sprint("new-", i))})
	}
	writes[40] = store.NodeWrite{Path: cursor(50, 0), Expect: 1, Delete: true}
	writes = append(writes, store.NodeWrite{Path: ml(5) + "-created", Value: []byte("made")})
	vs, nodes, err := rb.CompareAndSetNodesReadBack(writes)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != len(writes) {
		t.Fatalf("read back %d nodes for %d writes", len(nodes), len(writes))
	}
	check(writes, nodes)
	for i, w := range writes {
		want := store.Node{Path: w.Path, Version: vs[i], Value: w.Value}
		if w.Delete {
			want.Value = nil
		}
		if n := nodes[i]; n.Path != want.Path || n.Version != want.Version || !bytes.Equal(n.Value, want.Value) {
			t.Errorf("write %d: read back %q v%d %q, want %q v%d %q", i, n.Path, n.Version, n.Value, want.Path, want.Version, want.Value)
		}
	}

	// Refused: nothing written, nothing read back.
	stale := []store.NodeWrite{{Path: ml(200), Expect: 1, Value: []byte("x")}, {Path: ml(201), Expect: 7, Value: []byte("y")}}
	if _, nodes, err := rb.CompareAndSetNodesReadBack(stale); !errors.Is(err, store.ErrVersionMismatch) || nodes != nil {
		t.Errorf("stale batch: nodes %v, %v; want a mismatch", nodes, err)
	}
	if n, _ := b.Get(ml(200)); string(n.Value) != "info-200" {
		t.Errorf("a refused batch wrote %q", n.Value)
	}

	// As many writes as etcd takes ops: no op left for the read, the writes applied.
	var full []store.NodeWrite
	for i := 100; i < 228; i++ {
		full = append(full, store.NodeWrite{Path: ml(i), Expect: 1, Value: []byte("full")})
	}
	if _, nodes, err := rb.CompareAndSetNodesReadBack(full); err != nil || nodes != nil {
		t.Errorf("128 writes: nodes %d, %v; want none read back, no error", len(nodes), err)
	}
	if n, _ := b.Get(ml(227)); string(n.Value) != "full" {
		t.Errorf("128 writes: %q holds %q", ml(227), n.Value)
	}

	// Ten cursors a topic between the writes: the range would hold too many keys,
	// so none is read back, and later batches do not try again.
	var crowded []store.NodeWrite
	for i := 300; i < 310; i++ {
		crowded = append(crowded, store.NodeWrite{Path: ml(i), Expect: 1, Value: []byte("crowded")})
	}
	if _, nodes, err := rb.CompareAndSetNodesReadBack(crowded); err != nil || nodes != nil {
		t.Errorf("crowded batch: nodes %d, %v; want none read back", len(nodes), err)
	}
	if n, _ := b.Get(ml(309)); string(n.Value) != "crowded" {
		t.Errorf("crowded batch: %q holds %q", ml(309), n.Value)
	}
	sparse := []store.NodeWrite{{Path: ml(350), Expect: 1, Value: []byte("s")}, {Path: ml(351), Expect: 1, Value: []byte("s")}}
	if _, nodes, err := rb.CompareAndSetNodesReadBack(sparse); err != nil || nodes != nil {
		t.Errorf("after a crowded batch: nodes %d, %v; want read-backs off", len(nodes), err)
	}
}
