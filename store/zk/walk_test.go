package zk_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
	zkstore "github.com/ledgermedic/ledgermedic/store/zk"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func TestZKWalkOrderAndPrefixes(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	for _, p := range zkTricky {
		zkCreateAll(t, raw, p, []byte("v"+p))
	}
	all := withAncestors(zkTricky)
	for _, conc := range []int{1, 16} {
		s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{Remote: store.RemoteOptions{Concurrency: conc}})
		for _, tc := range []struct{ prefix, start string }{
			{"", ""}, {"/", ""}, {"/t", ""}, {"/t/", ""}, {"/t-", ""}, {"/t/x", ""},
			{"/managed-ledgers/acme/ord", ""}, {"/managed-ledgers/acme/orders/persistent/orders", ""},
			{"/nope/x", ""}, {"/t/x/y/z", ""}, {"t", ""},
			{"", "/t-1"}, {"/t", "/t/x"}, {"/t", "/t/x\x00"}, {"/managed-ledgers/", "/managed-ledgers/acme/orders/persistent/orders-partition-0"},
			{"", "/zz"},
		} {
			got := zkWalkAll(t, s, tc.prefix, tc.start)
			want := wantPaths(all, tc.prefix, tc.start)
			if !slices.Equal(paths(got), want) {
				t.Errorf("conc %d walk %q from %q:\n got %q\nwant %q", conc, tc.prefix, tc.start, paths(got), want)
			}
			for _, n := range got {
				v, st, err := raw.Get(n.Path)
				if err != nil || string(v) != string(n.Value) || n.Version != uint64(st.Version)+1 {
					t.Errorf("walk node %s = %q v%d; raw %q %+v %v", n.Path, n.Value, n.Version, v, st, err)
				}
			}
		}
	}
	// ZooKeeper's own subtree only when asked for.
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{})
	if got := paths(zkWalkAll(t, s, "/zookeeper", "")); len(got) == 0 || got[0] != "/zookeeper" || !slices.Contains(got, "/zookeeper/quota") {
		t.Errorf("walk /zookeeper = %q", got)
	}
	if got := paths(zkWalkAll(t, s, "/z", "")); len(got) != 0 {
		t.Errorf("walk /z = %q, want nothing (the system subtree is not asked for)", got)
	}
}

// zkReceived is how many requests the server has received (its srvr command).
func zkReceived(t testing.TB, addr string) int {
	t.Helper()
	out, err := testutil.FourLetter(addr, "srvr")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Received: "); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil {
				t.Fatalf("srvr line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("srvr gave no Received line: %q", out)
	return 0
}

// A whole-tree walk whose first subtree is deep (listed level by level, as
// BookKeeper's /ledgers is) while a later flat one fills the walk's window
// (read ahead as /managed-ledgers is): the rest of the deep subtree must still
// go a batch a request. It went one node a request (48k nodes: 21 s instead of
// 0.6 s, about 9,700 requests); here 5,000 leaves took over 5,000.
func TestZKWalkDeepSubtreeBehindAFullWindow(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	all := []string{"/a"}
	for d := range 100 {
		dir := fmt.Sprintf("/a/d%02d", d)
		all = append(all, dir)
		for l := range 50 {
			all = append(all, fmt.Sprintf("%s/L%04d", dir, l))
		}
	}
	all = append(all, "/b")
	for i := range 3000 {
		all = append(all, fmt.Sprintf("/b/n%05d", i))
	}
	zkCreateMany(t, raw, all, []byte("v"))
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{})
	before := zkReceived(t, srv.Addr)
	got := paths(zkWalkAll(t, s, "", ""))
	requests := zkReceived(t, srv.Addr) - before - 1 // not our srvr
	if want := wantPaths(all, "", ""); !slices.Equal(got, want) {
		t.Fatalf("walk: %d paths, want %d", len(got), len(want))
	}
	// 8,102 nodes, 202 of them listed: 72-232 requests in batches of up to 128
	// reads (how full each goes depends on when the reads come back).
	t.Logf("walk of %d nodes: %d requests", len(got), requests)
	if requests > 400 {
		t.Errorf("walk of %d nodes sent %d requests, want at most 400 (batches, not a node a request)", len(got), requests)
	}
	// Without multiRead (a proxy cuts the read session) a read is a request of
	// its own, and past a full window the head goes with up to the concurrency
	// of them: the same nodes, in the same order.
	fb := testutil.MustOpenMetadata(t, "zk://"+firstOnlyProxy(t, srv.Addr), store.Options{})
	if active, _, _ := zkstore.ZKReadStatsForTest(fb); active {
		t.Fatal("a read session through a proxy that cuts it")
	}
	if got := paths(zkWalkAll(t, fb, "", "")); !slices.Equal(got, wantPaths(all, "", "")) {
		t.Errorf("walk without multiRead: %d paths, want %d", len(got), len(all))
	}
}

// TestZKWalkWideListing: the children of a node are queued as the walk reaches
// them, not all at once when they are listed: a namespace of a million topics
// is one listing. The walk holds at most its window of finished reads (1,024
// and a batch past it), the reads in flight (4 requests of up to 128) and one
// batch of children queued: 1,792, however many children the listing has.
func TestZKWalkWideListing(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	all := []string{"/ns", "/ns-x"}
	for i := range 6000 {
		all = append(all, fmt.Sprintf("/ns/topic-%05d", i))
	}
	for i := range 3 {
		all = append(all, fmt.Sprintf("/ns/topic-00042/c%d", i), fmt.Sprintf("/ns/topic-05999/c%d", i))
	}
	zkCreateMany(t, raw, all, []byte("v"))
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{})
	for _, prefix := range []string{"", "/ns/", "/ns/topic-0004"} {
		got, held, err := zkstore.WalkHeldForTest(s, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantPaths(all, prefix, ""); !slices.Equal(got, want) {
			t.Fatalf("walk %q: %d paths, want %d", prefix, len(got), len(want))
		}
		if held > 1792 {
			t.Errorf("walk %q of %d nodes held %d reads at once, want at most 1,792", prefix, len(got), held)
		}
	}
}

// TestZKWalkRandomTrees: the walk of random trees of names that share prefixes is
// the sorted list of their paths, for random prefixes and starts.
func TestZKWalkRandomTrees(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	s := testutil.MustOpenMetadata(t, "zk://"+srv.Addr, store.Options{Remote: store.RemoteOptions{Concurrency: 4}})
	names := []string{"a", "a-", "a.b", "a0", "ab", "b", " ", "a-b", "~"}
	rng := rand.New(rand.NewPCG(7, 11))
	var leaves []string
	for round := range 4 {
		root := fmt.Sprintf("/r%d", round)
		for range 40 {
			p := root
			for range 1 + rng.IntN(4) {
				p += "/" + names[rng.IntN(len(names))]
			}
			leaves = append(leaves, p)
		}
		for _, p := range withAncestors(leaves) {
			if _, err := raw.Create(p, []byte(p), 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
		all := withAncestors(leaves)
		for range 20 {
			pick := all[rng.IntN(len(all))]
			prefix := pick[:1+rng.IntN(len(pick))]
			start := ""
			if rng.IntN(2) == 0 {
				start = all[rng.IntN(len(all))]
			}
			got := paths(zkWalkAll(t, s, prefix, start))
			if want := wantPaths(all, prefix, start); !slices.Equal(got, want) {
				t.Fatalf("walk %q from %q:\n got %q\nwant %q", prefix, start, got, want)
			}
		}
	}
}

func TestZKChroot(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	zkCreateAll(t, raw, "/pulsar/managed-ledgers/a", []byte("a"))
	zkCreateAll(t, raw, "/pulsar-other/x", []byte("x"))
	s := testutil.MustOpenMetadata(t, "zk:"+srv.Addr+"/pulsar", store.Options{})
	if got, want := paths(zkWalkAll(t, s, "/", "")), []string{"/managed-ledgers", "/managed-ledgers/a"}; !slices.Equal(got, want) {
		t.Errorf("walk in chroot = %q, want %q", got, want)
	}
	n, err := s.Get("/managed-ledgers/a")
	if err != nil || string(n.Value) != "a" || n.Version != 1 {
		t.Fatalf("get = %+v, %v", n, err)
	}
	if _, err := s.CompareAndSet("/new/node", 0, []byte("n")); err != nil {
		t.Fatal(err)
	}
	if v, _, err := raw.Get("/pulsar/new/node"); err != nil || string(v) != "n" {
		t.Errorf("raw /pulsar/new/node = %q, %v", v, err)
	}
	if ok, _, _ := raw.Exists("/new"); ok {
		t.Error("a write through the chroot landed outside it")
	}

	_, err = testutil.OpenMetadata(t, "zk://"+srv.Addr+"/missing/root", store.Options{})
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "chroot /missing/root does not exist") {
		t.Errorf("missing chroot: %v", err)
	}
}
