package zk_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
	zkstore "github.com/ledgermedic/ledgermedic/store/zk"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestZKMultiReadWalkAndGetNodes: the walk and GetNodes read through the multiRead
// session (far fewer requests than nodes) and return what the server holds, byte
// for byte and version for version, under a chroot too.
func TestZKMultiReadWalkAndGetNodes(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	var all []string
	for i := range 300 {
		p := fmt.Sprintf("/root/ml/t%03d", i)
		zkCreateAll(t, raw, p, bytes.Repeat([]byte{byte(i)}, i*7))
		all = append(all, p)
	}
	zkCreateAll(t, raw, "/root/ml/t-1", nil) // sorts between /root/ml/t and its children
	for _, tc := range []struct{ url, chroot string }{{"zk://" + srv.Addr, ""}, {"zk://" + srv.Addr + "/root", "/root"}} {
		t.Run(tc.url, func(t *testing.T) {
			s := testutil.MustOpenMetadata(t, tc.url, store.Options{})
			if active, _, _ := zkstore.ZKReadStatsForTest(s); !active {
				t.Fatalf("no multiRead session: %v", s.Source().Notes)
			}
			want := zkTree(t, raw, "/root")
			prefix := strings.TrimPrefix("/root/ml/", tc.chroot)
			got := zkWalkAll(t, s, prefix, "")
			if len(got) != 301 {
				t.Fatalf("walk: %d nodes, want 301", len(got))
			}
			if !slices.IsSortedFunc(got, func(a, b store.Node) int { return strings.Compare(a.Path, b.Path) }) {
				t.Errorf("walk out of order: %v", paths(got))
			}
			for _, n := range got {
				if v, ok := want[tc.chroot+n.Path]; !ok || v != string(n.Value) {
					t.Errorf("walk %s: %d bytes, server has %d (%v)", n.Path, len(n.Value), len(v), ok)
				}
			}
			_, reads, _ := zkstore.ZKReadStatsForTest(s)
			if reads == 0 || reads > 40 {
				t.Errorf("walk of 301 nodes took %d multiReads", reads)
			}
			// GetNodes: present and absent nodes, in the order asked.
			ask := []string{tc.chroot + "/root/ml/t005", "/nope", tc.chroot + "/root/ml/t299", tc.chroot + "/root/ml/t-1"}
			for i := range ask {
				ask[i] = strings.TrimPrefix(ask[i], tc.chroot)
			}
			for i := range 250 {
				ask = append(ask, strings.TrimPrefix(all[i], tc.chroot))
			}
			nb := s.(store.NodeBatcher)
			nodes, err := nb.GetNodes(ask)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range nodes {
				if n.Path != ask[i] {
					t.Fatalf("node %d is %q, asked %q", i, n.Path, ask[i])
				}
				data, st, err := raw.Get(tc.chroot + n.Path)
				switch {
				case errors.Is(err, zk.ErrNoNode):
					if n.Version != 0 || len(n.Value) != 0 {
						t.Errorf("%s: absent, got version %d", n.Path, n.Version)
					}
				case err != nil:
					t.Fatal(err)
				case !bytes.Equal(data, n.Value) || n.Version != uint64(st.Version)+1:
					t.Errorf("%s: version %d, %d bytes; server %d, %d bytes", n.Path, n.Version, len(n.Value), st.Version+1, len(data))
				}
			}
			if _, after, _ := zkstore.ZKReadStatsForTest(s); after-reads < 2 || after-reads > 6 {
				t.Errorf("GetNodes of %d nodes took %d multiReads", len(ask), after-reads)
			}
		})
	}
}

// TestZKMultiReadSyncAfterWrite: GetNodes after a write syncs the read session
// first (a SetData's zxid is known, a create's is not); a read with nothing
// written since needs no sync; and it reads what was written.
func TestZKMultiReadSyncAfterWrite(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	zkCreateAll(t, raw, "/w/a", []byte("0"))
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{})
	nb := s.(store.NodeBatcher)
	syncs := func() int64 { _, _, n := zkstore.ZKReadStatsForTest(s); return n }
	for i, w := range []store.NodeWrite{
		{Path: "/w/a", Expect: 1, Value: []byte("1")},
		{Path: "/w/new/b", Expect: 0, Value: []byte("b")}, // a create (with a parent): zxid unknown
		{Path: "/w/a", Expect: 2, Value: []byte("2")},
	} {
		before := syncs()
		if _, err := s.CompareAndSetNodes([]store.NodeWrite{w}); err != nil {
			t.Fatal(err)
		}
		nodes, err := nb.GetNodes([]string{w.Path})
		if err != nil {
			t.Fatal(err)
		}
		if string(nodes[0].Value) != string(w.Value) {
			t.Errorf("write %d: read back %q, wrote %q", i, nodes[0].Value, w.Value)
		}
		if got := syncs() - before; got < 1 {
			t.Errorf("write %d: GetNodes after it sent %d syncs", i, got)
		}
		before = syncs()
		if _, err := nb.GetNodes([]string{w.Path}); err != nil {
			t.Fatal(err)
		}
		if got := syncs() - before; got != 0 {
			t.Errorf("write %d: a second GetNodes with nothing written sent %d syncs", i, got)
		}
	}
}

// TestZKMultiReadDigest: the read session authenticates as the write session does:
// with the digest it reads a node only that user may read; without, the error
// names the node.
func TestZKMultiReadDigest(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	if err := raw.AddAuth("digest", []byte("ops:s3cret")); err != nil {
		t.Fatal(err)
	}
	zkCreateAll(t, raw, "/d", nil)
	if _, err := raw.Create("/d/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "ops", "s3cret")); err != nil {
		t.Fatal(err)
	}
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr+"?digest=ops:s3cret", store.Options{})
	if active, _, _ := zkstore.ZKReadStatsForTest(s); !active {
		t.Fatalf("no multiRead session with digest auth: %v", s.Source().Notes)
	}
	nodes, err := s.(store.NodeBatcher).GetNodes([]string{"/d/secret", "/d"})
	if err != nil || string(nodes[0].Value) != "s" {
		t.Fatalf("with the digest: %+v, %v", nodes, err)
	}
	if got := zkWalkAll(t, s, "/d/", ""); len(got) != 1 || string(got[0].Value) != "s" {
		t.Errorf("walk with the digest: %+v", got)
	}
	anon := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{})
	_, err = anon.(store.NodeBatcher).GetNodes([]string{"/d", "/d/secret"})
	if !errors.Is(err, zk.ErrNoAuth) || !strings.Contains(err.Error(), `"/d/secret"`) || strings.Contains(err.Error(), `"/d"`) {
		t.Errorf("without the digest: %v", err)
	}
	bad, err := testutil.OpenMetadata(t, "zk://"+srv.Addr+"?digest=ops:wrong", store.Options{})
	if err == nil {
		defer bad.Close()
		if active, _, _ := zkstore.ZKReadStatsForTest(bad); active {
			// A wrong password authenticates nobody; reads are refused, not served.
			if _, err := bad.(store.NodeBatcher).GetNodes([]string{"/d/secret"}); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("wrong digest: %v", err)
			}
		}
	}
}

// firstOnlyProxy forwards the first connection to target and cuts every later one
// at once: the go-zookeeper session connects, the read session cannot.
func firstOnlyProxy(t *testing.T, target string) string {
	t.Helper()
	addr, _ := testProxy(t, target, func(n int, c, s net.Conn) bool {
		if n > 0 {
			return false
		}
		go func() { _, _ = copyConn(c, s) }()
		go func() { _, _ = copyConn(s, c) }()
		return true
	})
	return addr
}

func copyConn(dst, src net.Conn) (int64, error) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

// TestZKMultiReadFallback: when the read session cannot be opened, the walk and
// GetNodes read through go-zookeeper, and the store says so once.
func TestZKMultiReadFallback(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	for i := range 30 {
		zkCreateAll(t, raw, fmt.Sprintf("/f/%02d", i), []byte{byte(i)})
	}
	s := testutil.MustOpenMetadata(t, "zk://"+firstOnlyProxy(t, srv.Addr), store.Options{})
	if active, _, _ := zkstore.ZKReadStatsForTest(s); active {
		t.Fatal("a read session through a proxy that cuts it")
	}
	ver := uint64(1)
	for range 3 {
		if got := zkWalkAll(t, s, "/f/", ""); len(got) != 30 || got[29].Value[0] != 29 {
			t.Fatalf("walk without multiRead: %d nodes", len(got))
		}
		v, err := s.CompareAndSet("/f/00", ver, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := s.(store.NodeBatcher).GetNodes([]string{"/f/00", "/f/01", "/f/none"})
		if err != nil || string(nodes[0].Value) != "x" || nodes[0].Version != v || nodes[2].Version != 0 {
			t.Fatalf("GetNodes without multiRead: %+v, %v", nodes, err)
		}
		if ver, err = s.CompareAndSet("/f/00", v, []byte{0}); err != nil {
			t.Fatal(err)
		}
	}
	wantOneMultiReadNote(t, s, "one request per node")
}

// wantOneMultiReadNote: the store's notes say once, in a note holding says, that
// it reads without multiRead.
func wantOneMultiReadNote(t *testing.T, s store.MetadataBackend, says string) {
	t.Helper()
	var notes []string
	for _, n := range s.Source().Notes {
		if strings.Contains(n, "multiRead") {
			notes = append(notes, n)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], says) {
		t.Errorf("notes about reading without multiRead (want one saying %q): %q", says, s.Source().Notes)
	}
}

// TestZKMultiReadRateCap: a batched read still counts each node against the rate
// cap: 40 nodes in one GetNodes at 40 reads/s take most of a second.
func TestZKMultiReadRateCap(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	var ps []string
	for i := range 40 {
		p := fmt.Sprintf("/rc/%02d", i)
		zkCreateAll(t, raw, p, []byte("x"))
		ps = append(ps, p)
	}
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{Remote: store.RemoteOptions{Rate: 40}})
	if active, _, _ := zkstore.ZKReadStatsForTest(s); !active {
		t.Fatal("no multiRead session")
	}
	start := time.Now()
	nodes, err := s.(store.NodeBatcher).GetNodes(ps)
	if err != nil || len(nodes) != 40 {
		t.Fatalf("GetNodes: %d nodes, %v", len(nodes), err)
	}
	if took := time.Since(start); took < 800*time.Millisecond {
		t.Errorf("40 nodes at 40 reads/s took %v", took)
	}
	if _, reads, _ := zkstore.ZKReadStatsForTest(s); reads > 3 {
		t.Errorf("40 nodes took %d multiReads", reads)
	}
}

// refuseMultiReadProxy forwards to target but closes a connection as soon as the
// client sends a multiRead (op 22), as a server before 3.6 ends the session; it
// counts the connections made.
func refuseMultiReadProxy(t *testing.T, target string) (addr string, conns func() int) {
	t.Helper()
	return testProxy(t, target, func(_ int, c, s net.Conn) bool {
		go func() { _, _ = copyConn(c, s) }()
		go func() {
			defer c.Close()
			defer s.Close()
			for first := true; ; first = false {
				hdr := make([]byte, 4)
				if _, err := io.ReadFull(c, hdr); err != nil {
					return
				}
				pkt := make([]byte, binary.BigEndian.Uint32(hdr))
				if _, err := io.ReadFull(c, pkt); err != nil {
					return
				}
				if !first && len(pkt) >= 8 && int32(binary.BigEndian.Uint32(pkt[4:8])) == 22 {
					return
				}
				if _, err := s.Write(append(hdr, pkt...)); err != nil {
					return
				}
			}
		}()
		return true
	})
}

// TestZKMultiReadRefused: a server that ends the session on a multiRead (before
// 3.6) gets no second try: reads go through go-zookeeper, the store says so once.
func TestZKMultiReadRefused(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	zkCreateAll(t, raw, "/old/a", []byte("a"))
	addr, conns := refuseMultiReadProxy(t, srv.Addr)
	s := testutil.MustOpenMetadata(t, "zk://"+addr, store.Options{})
	if active, _, _ := zkstore.ZKReadStatsForTest(s); active {
		t.Fatal("a multiRead session on a server that refuses multiRead")
	}
	time.Sleep(2500 * time.Millisecond) // past the retry delay
	for range 2 {
		if got := zkWalkAll(t, s, "/old/", ""); len(got) != 1 || string(got[0].Value) != "a" {
			t.Fatalf("walk: %+v", got)
		}
		if nodes, err := s.(store.NodeBatcher).GetNodes([]string{"/old/a"}); err != nil || string(nodes[0].Value) != "a" {
			t.Fatalf("GetNodes: %+v, %v", nodes, err)
		}
	}
	if n := conns(); n != 4 {
		t.Errorf("%d connections, want 4 (go-zookeeper's, the srvr probe, one read session, the check that the server still accepts connections)", n)
	}
	wantOneMultiReadNote(t, s, "UNIMPLEMENTED")
}

// cutMultiReadProxy forwards to target both ways, but cuts the response to the
// first multiRead (op 22) that reads path short: its packet ends keep bytes
// into its body. A four-letter word (srvr) is passed through as it is.
func cutMultiReadProxy(t *testing.T, target, path string, keep int) string {
	t.Helper()
	var mu sync.Mutex
	asked := map[[2]int]bool{} // (connection, xid) of the multiReads of path
	cut := false
	addr, _ := testProxy(t, target, func(n int, c, s net.Conn) bool {
		hdr := make([]byte, 4)
		if _, err := io.ReadFull(c, hdr); err != nil {
			return false
		}
		if _, err := s.Write(hdr); err != nil {
			return false
		}
		if len(bytes.Trim(hdr, "abcdefghijklmnopqrstuvwxyz")) == 0 {
			go func() { _, _ = copyConn(c, s) }()
			go func() { _, _ = copyConn(s, c) }()
			return true
		}
		go func() { // client to server: note the multiReads of path
			defer s.Close()
			if _, err := io.CopyN(s, c, int64(binary.BigEndian.Uint32(hdr))); err != nil {
				return // the connect request
			}
			for {
				pkt, err := readProxyPacket(c)
				if err != nil {
					return
				}
				if len(pkt) >= 12 && int32(binary.BigEndian.Uint32(pkt[8:12])) == 22 && bytes.Contains(pkt, []byte(path)) {
					mu.Lock()
					asked[[2]int{n, int(int32(binary.BigEndian.Uint32(pkt[4:8])))}] = true
					mu.Unlock()
				}
				if _, err := s.Write(pkt); err != nil {
					return
				}
			}
		}()
		go func() { // server to client: cut that multiRead's response
			defer c.Close()
			for first := true; ; first = false {
				pkt, err := readProxyPacket(s)
				if err != nil {
					return
				}
				if !first && len(pkt) >= 8 {
					mu.Lock()
					hit := !cut && asked[[2]int{n, int(int32(binary.BigEndian.Uint32(pkt[4:8])))}]
					cut = cut || hit
					mu.Unlock()
					if hit { // the reply header is 16 bytes: xid, zxid, err
						pkt = pkt[:4+16+keep]
						binary.BigEndian.PutUint32(pkt, uint32(16+keep))
					}
				}
				if _, err := c.Write(pkt); err != nil {
					return
				}
			}
		}()
		return true
	})
	return addr
}

// readProxyPacket reads one length-prefixed packet, the prefix included.
func readProxyPacket(r io.Reader) ([]byte, error) {
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	pkt := make([]byte, 4+binary.BigEndian.Uint32(hdr))
	copy(pkt, hdr)
	_, err := io.ReadFull(r, pkt[4:])
	return pkt, err
}

// TestZKMalformedResponseNote pins what an SRE reads when a server's multiRead
// response is malformed: the read still returns the server's nodes (through
// go-zookeeper), and the store's one note names the node, the field and the
// byte offset in the response where it broke.
func TestZKMalformedResponseNote(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	zkCreateAll(t, raw, "/m/a", []byte("abc"))
	// The response body: a multi header (9 bytes), the data (4+3), then the
	// stat, whose czxid takes 8 bytes and whose mzxid is cut after 3.
	addr := cutMultiReadProxy(t, srv.Addr, "/m/a", 9+4+3+8+3)
	s := testutil.MustOpenMetadata(t, "zk://"+addr, store.Options{})
	if active, _, _ := zkstore.ZKReadStatsForTest(s); !active {
		t.Fatalf("no multiRead session: %q", s.Source().Notes)
	}
	nodes, err := s.(store.NodeBatcher).GetNodes([]string{"/m/a"})
	if err != nil || len(nodes) != 1 || string(nodes[0].Value) != "abc" {
		t.Fatalf("GetNodes past a malformed response: %+v, %v", nodes, err)
	}
	want := fmt.Sprintf("bulk reads use one request per node while there is no multiRead session on zookeeper %s "+
		"(multiRead session unavailable: multiRead of 1 nodes from \"/m/a\" on %s: "+
		"result 0 (/m/a): malformed ZooKeeper response: offset 24: stat mzxid: jute record ends early: need 8 bytes, 3 left)", addr, addr)
	if notes := s.Source().Notes; !slices.Contains(notes, want) {
		t.Errorf("notes %q\nwant one to read\n%s", notes, want)
	}
}
