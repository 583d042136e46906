package zk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
	zkstore "github.com/ledgermedic/ledgermedic/store/zk"
	"github.com/ledgermedic/ledgermedic/testutil"
)

var openACL = zk.WorldACL(zk.PermAll)

func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// zkCreateAll creates path and its missing ancestors (empty, persistent) with raw.
func zkCreateAll(t testing.TB, c *zk.Conn, path string, value []byte) {
	t.Helper()
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			if _, err := c.Create(path[:i], []byte{}, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatalf("create %s: %v", path[:i], err)
			}
		}
	}
	if _, err := c.Create(path, value, 0, openACL); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// zkTree reads every node under root with raw (root excluded, /zookeeper skipped),
// as path -> value.
func zkTree(t testing.TB, c *zk.Conn, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var visit func(p string)
	visit = func(p string) {
		kids, _, err := c.Children(p)
		if err != nil {
			t.Fatalf("children %s: %v", p, err)
		}
		for _, k := range kids {
			cp := joinPath(p, k)
			if cp == "/zookeeper" {
				continue
			}
			v, _, err := c.Get(cp)
			if err != nil {
				t.Fatalf("get %s: %v", cp, err)
			}
			out[cp] = string(v)
			visit(cp)
		}
	}
	visit(root)
	return out
}

func zkWalkAll(t testing.TB, s store.MetadataStore, prefix, start string) []store.Node {
	t.Helper()
	var got []store.Node
	err := s.(store.MetadataBackend).WalkFrom(context.Background(), prefix, start, func(n store.Node) error {
		got = append(got, store.Node{Path: n.Path, Value: append([]byte(nil), n.Value...), Version: n.Version})
		return nil
	})
	if err != nil {
		t.Fatalf("walk %q from %q: %v", prefix, start, err)
	}
	return got
}

func paths(nodes []store.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Path
	}
	return out
}

// wantPaths is every path of all that starts with prefix and is >= start, sorted.
func wantPaths(all []string, prefix, start string) []string {
	var out []string
	for _, p := range all {
		if strings.HasPrefix(p, prefix) && p >= start {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// zkTricky are names whose byte order differs from a depth-first order ('-' and
// '.' sort before '/').
var zkTricky = []string{
	"/t", "/t/x", "/t/x/y", "/t-1", "/t-1/z", "/t.a", "/ta", "/t/x-2",
	"/managed-ledgers/acme/orders/persistent/orders",
	"/managed-ledgers/acme/orders/persistent/orders-partition-0",
	"/managed-ledgers/acme/orders/persistent/orders-partition-1",
	"/managed-ledgers/acme/ord",
	"/managed-ledgers/acme/orders-2/persistent/x",
	"/schemas/acme/orders/orders",
}

// withAncestors adds every ancestor of the paths (but not "/").
func withAncestors(ps []string) []string {
	set := map[string]bool{}
	for _, p := range ps {
		for i := 1; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				set[p[:i]] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func TestZKVersionsAndCAS(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{})

	if _, err := s.Get("/a"); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), `"/a"`) {
		t.Fatalf("get absent = %v", err)
	}
	v, err := s.CompareAndSet("/a", 0, []byte("a1"))
	if err != nil || v != 1 {
		t.Fatalf("create = %d, %v", v, err)
	}
	if v, err = s.CompareAndSet("/a", 1, []byte("a2")); err != nil || v != 2 {
		t.Fatalf("set = %d, %v", v, err)
	}
	if n, err := s.Get("/a"); err != nil || n.Version != 2 || string(n.Value) != "a2" {
		t.Fatalf("get = %+v, %v", n, err)
	}
	// Create of an existing node, and a stale set, are version mismatches.
	if _, err := s.CompareAndSet("/a", 0, []byte("x")); !errors.Is(err, store.ErrVersionMismatch) {
		t.Errorf("create existing = %v", err)
	}
	if _, err := s.CompareAndSet("/a", 1, []byte("x")); !errors.Is(err, store.ErrVersionMismatch) {
		t.Errorf("stale set = %v", err)
	}
	if _, err := s.CompareAndSet("/gone", 3, []byte("x")); !errors.Is(err, store.ErrVersionMismatch) {
		t.Errorf("set of an absent node = %v", err)
	}

	for _, p := range []string{"/b", "/c", "/d"} {
		if _, err := s.CompareAndSet(p, 0, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	before := zkTree(t, raw, "/")
	// A batch with two stale versions and a create under missing parents: refused
	// as a whole, naming each stale node, writing nothing (not even the parents).
	_, err = s.CompareAndSetNodes([]store.NodeWrite{
		{Path: "/a", Expect: 2, Value: []byte("ok")},
		{Path: "/new/deep/node", Value: []byte("n")},
		{Path: "/b", Expect: 5, Value: []byte("stale")},
		{Path: "/c", Expect: 1, Delete: true},
		{Path: "/d", Value: []byte("exists")},
	})
	if !errors.Is(err, store.ErrVersionMismatch) {
		t.Fatalf("stale batch = %v", err)
	}
	for _, p := range []string{`"/b"`, `"/d"`} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not name %s: %v", p, err)
		}
	}
	for _, p := range []string{`"/a"`, `"/c"`, `"/new/deep/node"`} {
		if strings.Contains(err.Error(), "node "+p) {
			t.Errorf("error names %s, which is not stale: %v", p, err)
		}
	}
	if after := zkTree(t, raw, "/"); !equalMaps(before, after) {
		t.Errorf("a refused batch changed the tree:\nbefore %v\nafter  %v", before, after)
	}

	// The same batch with right versions: all applied, parents created as
	// containers, new versions returned.
	vs, err := s.CompareAndSetNodes([]store.NodeWrite{
		{Path: "/a", Expect: 2, Value: []byte("ok")},
		{Path: "/new/deep/node", Value: []byte("n")},
		{Path: "/b", Expect: 1, Value: []byte("b2")},
		{Path: "/c", Expect: 1, Delete: true},
	})
	if err != nil || !slices.Equal(vs, []uint64{3, 1, 2, 0}) {
		t.Fatalf("batch = %v, %v", vs, err)
	}
	for p, want := range map[string]string{"/a": "ok", "/new/deep/node": "n", "/b": "b2", "/new": "", "/new/deep": ""} {
		if v, _, err := raw.Get(p); err != nil || string(v) != want {
			t.Errorf("raw %s = %q, %v; want %q", p, v, err, want)
		}
	}
	if ok, _, _ := raw.Exists("/c"); ok {
		t.Error("/c not deleted")
	}
	nodes, err := s.GetNodes([]string{"/a", "/c", "/new/deep/node"})
	if err != nil || nodes[0].Version != 3 || nodes[1].Version != 0 || nodes[1].Value != nil || string(nodes[2].Value) != "n" {
		t.Errorf("GetNodes = %+v, %v", nodes, err)
	}
	// Delete with a stale version, then the right one.
	if err := s.CompareAndDelete("/b", 1); !errors.Is(err, store.ErrVersionMismatch) {
		t.Errorf("stale delete = %v", err)
	}
	if err := s.CompareAndDelete("/b", 2); err != nil {
		t.Errorf("delete = %v", err)
	}
	// A node with children cannot be deleted; the error says why.
	if err := s.CompareAndDelete("/new", 1); err == nil || errors.Is(err, store.ErrVersionMismatch) || !strings.Contains(err.Error(), "children") {
		t.Errorf("delete of a parent = %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestZKBatchTooBig(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	// The test server runs with ZooKeeper's default jute.maxbuffer.
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr+"?jute-maxbuffer=0xfffff", store.Options{})
	big := make([]byte, 400_000)
	var writes []store.NodeWrite
	for i := range 3 {
		writes = append(writes, store.NodeWrite{Path: fmt.Sprintf("/big/%d", i), Value: big})
	}
	if _, err := s.CompareAndSetNodes(writes); !errors.Is(err, store.ErrBatchTooBig) {
		t.Fatalf("1.2 MB batch = %v", err)
	}
	if ok, _, _ := raw.Exists("/big"); ok {
		t.Error("a too-big batch wrote")
	}
	// Two of them fit in one request (and the server takes it).
	vs, err := s.CompareAndSetNodes(writes[:2])
	if err != nil || !slices.Equal(vs, []uint64{1, 1}) {
		t.Fatalf("800 kB batch = %v, %v", vs, err)
	}
	if v, _, err := raw.Get("/big/1"); err != nil || len(v) != len(big) {
		t.Errorf("raw /big/1: %d bytes, %v", len(v), err)
	}
}

func TestZKReadOnly(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	zkCreateAll(t, raw, "/a", []byte("a"))
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{ReadOnly: true})
	if !s.Source().ReadOnly {
		t.Error("source not read-only")
	}
	for name, err := range map[string]error{
		"set":    func() error { _, err := s.CompareAndSet("/a", 1, []byte("x")); return err }(),
		"create": func() error { _, err := s.CompareAndSet("/b", 0, []byte("x")); return err }(),
		"delete": s.CompareAndDelete("/a", 1),
		"batch": func() error {
			_, err := s.CompareAndSetNodes([]store.NodeWrite{{Path: "/a", Expect: 1, Value: []byte("x")}})
			return err
		}(),
	} {
		if !errors.Is(err, store.ErrReadOnly) || !strings.Contains(err.Error(), `"/`) {
			t.Errorf("%s on a read-only open = %v", name, err)
		}
	}
	if v, st, err := raw.Get("/a"); err != nil || string(v) != "a" || st.Version != 0 {
		t.Errorf("raw /a = %q %+v %v", v, st, err)
	}
	if ok, _, _ := raw.Exists("/b"); ok {
		t.Error("read-only open created /b")
	}
}

func TestZKDigestAuth(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	if err := raw.AddAuth("digest", []byte("ops:s3cret")); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create("/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "ops", "s3cret")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		opts      store.RemoteOptions
		ok        bool
	}{
		{"url digest", "zk://" + srv.Addr + "?digest=ops:s3cret", store.RemoteOptions{}, true},
		{"flag digest", "zk://" + srv.Addr, store.RemoteOptions{ZKDigest: "ops:s3cret"}, true},
		{"wrong password", "zk://" + srv.Addr + "?digest=ops:wrong", store.RemoteOptions{}, false},
		{"no digest", "zk://" + srv.Addr, store.RemoteOptions{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testutil.MustOpenMetadata(t, tc.url, store.Options{Remote: tc.opts})
			if strings.Contains(s.Source().URL, "s3cret") || strings.Contains(s.Source().URL, "wrong") {
				t.Errorf("source URL shows the password: %s", s.Source().URL)
			}
			n, err := s.Get("/secret")
			if tc.ok {
				if err != nil || !strings.HasPrefix(string(n.Value), "s") {
					t.Errorf("get = %+v, %v", n, err)
				}
				if _, err := s.CompareAndSet("/secret", n.Version, []byte("s2")); err != nil {
					t.Errorf("set = %v", err)
				}
				return
			}
			if !errors.Is(err, zk.ErrNoAuth) || !strings.Contains(err.Error(), "not authorized") || !strings.Contains(err.Error(), `"/secret"`) {
				t.Errorf("get without the right digest = %v", err)
			}
			if _, err := s.CompareAndSet("/secret", 1, []byte("x")); err == nil || !strings.Contains(err.Error(), "not authorized") {
				t.Errorf("set without the right digest = %v", err)
			}
		})
	}
	if _, err := testutil.OpenMetadata(t, "zk://"+srv.Addr+"?digest=nocolon", store.Options{}); !errors.Is(err, store.ErrBadURL) {
		t.Errorf("digest without a colon = %v", err)
	}
}

func TestZKUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = testutil.OpenMetadata(t, "zk://"+addr, store.Options{Remote: store.RemoteOptions{Timeout: 1500 * time.Millisecond}})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "no server answered") {
		t.Errorf("unreachable = %v", err)
	}
	if took > 4*time.Second {
		t.Errorf("unreachable took %v with a 1.5 s timeout", took)
	}
	if _, err := testutil.OpenMetadata(t, "zk://"+addr+"?session-timeout=soon", store.Options{}); !errors.Is(err, store.ErrBadURL) {
		t.Errorf("bad session-timeout = %v", err)
	}
}

func TestZKSource(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	zkCreateAll(t, raw, "/a", nil)
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr+"?digest=u:p&session-timeout=6s", store.Options{})
	src := s.Source()
	if src.Kind != store.SchemeZK || src.ReadOnly || src.Zxid <= 0 || strings.Contains(src.URL, "u:p") || !strings.Contains(src.URL, srv.Addr) {
		t.Errorf("source = %+v", src)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

// TestZKRateCap: 20 reads at 40 reads/s take about half a second, whatever the
// concurrency.
func TestZKRateCap(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	for i := range 20 {
		zkCreateAll(t, raw, fmt.Sprintf("/r/%02d", i), []byte("x"))
	}
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{Remote: store.RemoteOptions{Rate: 40, Concurrency: 16}})
	start := time.Now()
	got := zkWalkAll(t, s, "/r/", "")
	if took := time.Since(start); len(got) != 20 || took < 350*time.Millisecond {
		t.Errorf("walk of %d nodes at 40/s took %v", len(got), took)
	}
}

// zkDropProxy forwards TCP to a ZooKeeper server and, once armed, cuts the
// connection right after forwarding a client packet of at least min bytes, before
// the answer comes back: the server got the write, the client never hears of it.
type zkDropProxy struct {
	addr   string
	target string
	mu     sync.Mutex
	armMin int // 0: not armed
	conns  []net.Conn
}

func startDropProxy(t testing.TB, target string) *zkDropProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &zkDropProxy{addr: l.Addr().String(), target: target}
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *zkDropProxy) arm(min int) { p.mu.Lock(); p.armMin = min; p.mu.Unlock() }

func (p *zkDropProxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(c, s); c.Close() }()
	buf := make([]byte, 4)
	for {
		// ZooKeeper framing: a 4-byte big-endian length, then the packet.
		if _, err := io.ReadFull(c, buf); err != nil {
			break
		}
		n := int(buf[0])<<24 | int(buf[1])<<16 | int(buf[2])<<8 | int(buf[3])
		pkt := make([]byte, n)
		if _, err := io.ReadFull(c, pkt); err != nil {
			break
		}
		if _, err := s.Write(append(buf[:4:4], pkt...)); err != nil {
			break
		}
		p.mu.Lock()
		drop := p.armMin > 0 && n >= p.armMin
		if drop {
			p.armMin = 0
		}
		p.mu.Unlock()
		if drop {
			c.Close()                          // the answer never reaches the client
			time.Sleep(100 * time.Millisecond) // while the server reads it all
			break
		}
	}
	c.Close()
	s.Close()
}

// TestZKOutcomeUnknown: a connection cut after the multi reached the server gives
// zkstore.ErrOutcomeUnknown, and the nodes hold either every write or none.
func TestZKOutcomeUnknown(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	proxy := startDropProxy(t, srv.Addr)
	s := testutil.MustOpenMetadata(t, "zk://"+proxy.addr, store.Options{})
	for _, p := range []string{"/o/a", "/o/b"} {
		zkCreateAll(t, raw, p, []byte("before"))
	}
	value := make([]byte, 50_000)
	proxy.arm(100_000)
	_, err := s.CompareAndSetNodes([]store.NodeWrite{
		{Path: "/o/a", Expect: 1, Value: value},
		{Path: "/o/b", Expect: 1, Value: value},
	})
	if !errors.Is(err, zkstore.ErrOutcomeUnknown) || errors.Is(err, store.ErrVersionMismatch) {
		t.Fatalf("cut connection = %v", err)
	}
	// The multi may still be on its way to the server (the proxy forwards it after
	// cutting the client off): read until the server's answer stops changing, then
	// compare. A real mixture would persist.
	var a, b []byte
	var errA, errB error
	var stable int
	for deadline := time.Now().Add(5 * time.Second); stable < 3 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		a2, _, ea := raw.Get("/o/a")
		b2, _, eb := raw.Get("/o/b")
		if len(a2) == len(a) && len(b2) == len(b) {
			stable++
		} else {
			stable = 0
		}
		a, b, errA, errB = a2, b2, ea, eb
	}
	if errA != nil || errB != nil || len(a) != len(b) {
		t.Fatalf("a mixture after a cut multi: %d and %d bytes (%v %v)", len(a), len(b), errA, errB)
	}
	// The session reconnects: the store keeps working.
	if _, err := s.Get("/o/a"); err != nil {
		t.Errorf("get after the cut: %v", err)
	}
}
