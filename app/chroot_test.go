package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// chrootCase is one command and what it must answer: its exit code and the
// phrases stderr must hold.
type chrootCase struct {
	name string
	args []string
	code int
	says []string
}

func runChrootCases(t *testing.T, cases []chrootCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runBin(t, c.args...)
			if code != c.code {
				t.Fatalf("ledgermedic %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, stdout, stderr)
			}
			for _, s := range c.says {
				if !strings.Contains(stderr, s) {
					t.Fatalf("ledgermedic %s: stderr does not say %q\nstderr:\n%s", strings.Join(c.args, " "), s, stderr)
				}
			}
			if strings.Contains(stdout+stderr, "entries-without-node") {
				t.Fatalf("a wrong chroot was read as a cluster:\n%s", stdout)
			}
		})
	}
}

// zkCreatePath creates p and its parents on the server at addr (a chroot to load a fixture into).
func zkCreatePath(t *testing.T, addr, p string) {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cur := ""
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatalf("create %s: %v", cur, err)
		}
	}
}

// storedLedger is a topic ledger of the fixture at dir whose entries are stored.
func storedLedger(t *testing.T, dir string) int64 {
	t.Helper()
	m, err := fixtures.LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ml := range m.ManagedLedgers {
		for _, l := range ml.Ledgers {
			if l.Entries > 0 && l.Lost == "" && !l.Offloaded {
				return l.ID
			}
		}
	}
	t.Fatal("the fixture has no stored ledger")
	return 0
}

// TestZooKeeperChroot: a cluster loaded under a chroot of a real ZooKeeper. A
// forgotten, wrong or missing chroot is exit 2 naming the chroot that holds the
// cluster, on the live server and on the dataDir it wrote, instead of a cluster
// with no managed ledgers whose entries all lack a node; the right chroot works,
// and commands that name nodes or ledgers need none.
func TestZooKeeperChroot(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	zkCreatePath(t, srv.Addr, "/pulsar")
	zkCreatePath(t, srv.Addr, "/clusters/east")
	zkCreatePath(t, srv.Addr, "/other/thing")
	dir := filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "--metadata", "zk://"+srv.Addr+"/pulsar", "fixtures", "generate", "--out", dir, "--seed", "3")
	east := filepath.Join(t.TempDir(), "east")
	mustBin(t, 0, "--metadata", "zk:"+srv.Addr+"/clusters/east", "fixtures", "generate", "--out", east, "--seed", "5")
	root := "zk://" + srv.Addr
	live := func(args ...string) []string { return append([]string{"-d", dir}, args...) }
	runChrootCases(t, []chrootCase{
		{"forgotten chroot", live("--metadata", root, "check"), 2, []string{
			"no Pulsar metadata at its root", "/pulsar/managed-ledgers exists: did you mean " + root + "/pulsar?",
			"/clusters/east/managed-ledgers exists: did you mean " + root + "/clusters/east?"}},
		{"forgotten chroot, Pulsar's URL form", live("--metadata", "zk:"+srv.Addr, "inspect", "topics"), 2, []string{
			"did you mean " + root + "/pulsar?"}},
		{"wrong chroot", live("--metadata", root+"/other", "check"), 2, []string{
			"did you mean " + root + "/pulsar?", "did you mean " + root + "/clusters/east?"}},
		{"chroot one level short", live("--metadata", root+"/clusters", "index", "backfill"), 2, []string{
			"did you mean " + root + "/clusters/east?"}},
		{"missing chroot", live("--metadata", root+"/pulsr", "check"), 2, []string{
			"chroot /pulsr does not exist", "did you mean " + root + "/pulsar?"}},
		{"missing chroot, inspect node", live("--metadata", root+"/pulsr", "inspect", "node", "/managed-ledgers"), 2, []string{
			"did you mean " + root + "/pulsar?"}},
		{"import from the forgotten chroot", []string{"-d", dir, "--metadata", root, "import", "--out", filepath.Join(t.TempDir(), "copy")}, 2, []string{
			"did you mean " + root + "/pulsar?"}},
		{"writing command", live("--metadata", root, "index", "backfill", "--apply"), 2, []string{"did you mean " + root + "/pulsar?"}},
	})
	// The right chroot reads the cluster; a node named by its path, and entries by
	// ledger, need no chroot.
	mustBin(t, 0, live("--metadata", root+"/pulsar", "inspect", "topics")...)
	mustBin(t, 0, "-d", east, "--metadata", root+"/clusters/east", "inspect", "topics")
	mustBin(t, 0, live("--metadata", root, "inspect", "node", "/pulsar/managed-ledgers")...)
	mustBin(t, 0, live("--metadata", root, "inspect", "entries", "--ledger", fmt.Sprint(storedLedger(t, dir)))...)
	copyDir := filepath.Join(t.TempDir(), "copy")
	mustBin(t, 0, "-d", dir, "--metadata", root+"/pulsar", "import", "--out", copyDir)
	mustBin(t, -1, "-d", copyDir, "inspect", "topics")

	// The files the server wrote, read offline: the chroot is ?chroot=.
	srv.Stop()
	files := "zk-data:" + srv.DataDir
	runChrootCases(t, []chrootCase{
		{"zk-data without chroot", live("--metadata", files, "check"), 2, []string{
			"no Pulsar metadata at its root", "/pulsar/managed-ledgers exists: did you mean " + files + "?chroot=/pulsar?"}},
		{"zk-data, wrong chroot", live("--metadata", files+"?chroot=/other", "inspect", "schemas"), 2, []string{
			"did you mean " + files + "?chroot=/clusters/east?"}},
		{"zk-data, missing chroot", live("--metadata", files+"?chroot=/pulsr", "check"), 2, []string{
			"chroot /pulsr does not exist", "did you mean " + files + "?chroot=/pulsar?"}},
	})
	mustBin(t, 0, live("--metadata", files+"?chroot=/pulsar", "inspect", "topics")...)
}

// TestEtcdPrefix: Pulsar's etcd store has no chroot, so keys under a prefix of a
// real etcd (or of the db it wrote) are named, with why they cannot be read as the
// cluster; an etcd with no keys is no cluster either.
func TestEtcdPrefix(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 2})
	empty := testutil.StartEtcd(t)
	emptyURL := "etcd://" + strings.TrimPrefix(empty.Endpoint, "http://")
	srv := testutil.StartEtcd(t)
	url := "etcd://" + strings.TrimPrefix(srv.Endpoint, "http://")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, k := range []string{"/pulsar/managed-ledgers/acme/orders/persistent/orders", "/pulsar/schemas/acme/orders/orders", "/ledgers/00/0000/L0003"} {
		if _, err := cli.Put(ctx, k, "x"); err != nil {
			t.Fatal(err)
		}
	}
	cli.Close()
	runChrootCases(t, []chrootCase{
		{"etcd, keys under a prefix", []string{"-d", dir, "--metadata", url, "check"}, 2, []string{
			url + ": no Pulsar metadata at its root", "; /pulsar/", "exists under a prefix", "has no chroot"}},
		{"etcd with no keys", []string{"-d", dir, "--metadata", emptyURL, "inspect", "topics"}, 2, []string{
			emptyURL + ": no Pulsar metadata: the store holds no nodes at all"}},
	})
	mustBin(t, 0, "-d", dir, "--metadata", url, "inspect", "node", "/pulsar/schemas/acme/orders/orders")
	srv.Stop()
	empty.Stop()
	runChrootCases(t, []chrootCase{
		{"etcd-db, keys under a prefix", []string{"-d", dir, "--metadata", "etcd-db:" + srv.DataDir, "check"}, 2, []string{
			"; /pulsar/", "exists under a prefix"}},
		{"etcd-db with no keys", []string{"-d", dir, "--metadata", "etcd-db:" + empty.DataDir, "check"}, 2, []string{
			"the store holds no nodes at all"}},
	})
}

// TestDataDirWithoutPulsarMetadata: a data dir whose nodes sit under a chroot
// (copied without it) is exit 2 saying so; one with no metadata at all (ledgers
// only) is exit 2 for a command that reads the cluster, and serves commands
// that read entries by ledger.
func TestDataDirWithoutPulsarMetadata(t *testing.T) {
	b := testutil.NewDataDir(t)
	b.Node("/pulsar/managed-ledgers/acme/orders/persistent/orders", []byte{})
	b.Node("/pulsar/admin/clusters/east", []byte("{}"))
	prefixed := b.Close()
	b = testutil.NewDataDir(t)
	b.Entry(3, 0, []byte("entry"))
	ledgersOnly := b.Close()
	runChrootCases(t, []chrootCase{
		{"nodes under a chroot", []string{"-d", prefixed, "check"}, 2, []string{
			filepath.Join(prefixed, "metadata") + ": no Pulsar metadata at its root", "; /pulsar/admin exists",
			"import it again from the chroot (ledgermedic import --metadata zk://HOST:2181/pulsar"}},
		{"no metadata at all", []string{"-d", ledgersOnly, "check"}, 2, []string{
			"the store holds no nodes at all", "--metadata URL"}},
		{"no metadata at all, find by offset", []string{"-d", ledgersOnly, "index", "find", "--topic", "acme/orders/orders", "--offset", "1"}, 2, []string{
			"the store holds no nodes at all"}},
	})
	mustBin(t, 0, "-d", ledgersOnly, "inspect", "entries", "--ledger", "3")
	mustBin(t, 0, "-d", prefixed, "inspect", "node", "/pulsar/admin/clusters/east")
}
