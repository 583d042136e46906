package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// zkTree reads every node under the root through the plain ZooKeeper client (not
// our backend), skipping ZooKeeper's own /zookeeper subtree.
func zkTree(t *testing.T, addr string) map[string][]byte {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := map[string][]byte{}
	var walk func(p string)
	walk = func(p string) {
		kids, _, err := conn.Children(p)
		if err != nil {
			t.Fatalf("children of %s: %v", p, err)
		}
		for _, k := range kids {
			c := strings.TrimSuffix(p, "/") + "/" + k
			if c == "/zookeeper" {
				continue
			}
			data, _, err := conn.Get(c)
			if err != nil {
				t.Fatalf("get %s: %v", c, err)
			}
			out[c] = data
			walk(c)
		}
	}
	walk("/")
	return out
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// withoutEmptyParents drops nodes with no data that only exist as parents
// (ZooKeeper needs them; the data dir's flat key space does not have them).
func withoutEmptyParents(tree map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for p, v := range tree {
		if len(v) > 0 {
			out[p] = v
			continue
		}
		parent := false
		for q := range tree {
			if strings.HasPrefix(q, p+"/") {
				parent = true
				break
			}
		}
		if !parent {
			out[p] = v
		}
	}
	return out
}

func diffTrees(want, got map[string][]byte) []string {
	var d []string
	for p, v := range want {
		if w, ok := got[p]; !ok {
			d = append(d, "missing "+p)
		} else if !bytes.Equal(v, w) {
			d = append(d, "differs "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			d = append(d, "extra "+p)
		}
	}
	sort.Strings(d)
	return d
}

func mustBin(t *testing.T, want int, args ...string) string {
	t.Helper()
	stdout, stderr, code := runBin(t, args...)
	if code != want && (want >= 0 || code > 1) {
		t.Fatalf("ledgermedic %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout
}

func srvrZxid(t *testing.T, addr string) int64 {
	t.Helper()
	out, err := testutil.FourLetter(addr, "srvr")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Zxid: 0x([0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no zxid in srvr output %q", out)
	}
	z, _ := strconv.ParseInt(m[1], 16, 64)
	return z
}

type findingsDoc struct {
	Findings []struct {
		Kind     string `json:"kind"`
		Severity string `json:"severity"`
		Location string `json:"location"`
	} `json:"findings"`
}

func findingSet(t *testing.T, out string) []string {
	t.Helper()
	var doc findingsDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var s []string
	for _, f := range doc.Findings {
		s = append(s, f.Severity+" "+f.Kind+" "+f.Location)
	}
	sort.Strings(s)
	return s
}

// liveStore is a real server the end-to-end tests run against, with its own
// client to read back what ledgermedic wrote.
type liveStore struct {
	url     string
	tree    func(t *testing.T) map[string][]byte // every node, read with the server's own client
	point   func(t *testing.T) int64             // the server's current zxid or revision
	stop    func()
	kill    func()
	restart func()
	offline string // the offline URL of the files the stopped server left
	atFlag  string // the option that picks a point in time offline
	set     func(t *testing.T, path string, value []byte)
	addr    string // host:port, as the tool's messages name the server
	dataDir string // the server's own data, which a stopped server leaves as it is
}

func startZooKeeper(t *testing.T) *liveStore {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	return &liveStore{
		url:     "zk://" + srv.Addr,
		tree:    func(t *testing.T) map[string][]byte { return zkTree(t, srv.Addr) },
		point:   func(t *testing.T) int64 { return srvrZxid(t, srv.Addr) },
		stop:    srv.Stop,
		kill:    srv.Kill,
		restart: srv.Restart,
		offline: "zk-data:" + srv.DataDir,
		atFlag:  "zxid",
		addr:    srv.Addr,
		dataDir: srv.DataDir,
		set: func(t *testing.T, path string, value []byte) {
			conn, _, err := zk.Connect([]string{srv.Addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Set(path, value, -1); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func startEtcd(t *testing.T) *liveStore {
	srv := testutil.StartEtcd(t)
	cli := func(t *testing.T) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	get := func(t *testing.T) *clientv3.GetResponse {
		c := cli(t)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := c.Get(ctx, "/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	return &liveStore{
		url: "etcd://" + strings.TrimPrefix(srv.Endpoint, "http://"),
		tree: func(t *testing.T) map[string][]byte {
			out := map[string][]byte{}
			for _, kv := range get(t).Kvs {
				out[string(kv.Key)] = kv.Value
			}
			return out
		},
		point:   func(t *testing.T) int64 { return get(t).Header.Revision },
		stop:    srv.Stop,
		kill:    srv.Kill,
		restart: srv.Restart,
		offline: "etcd-db:" + srv.DataDir,
		atFlag:  "revision",
		addr:    strings.TrimPrefix(srv.Endpoint, "http://"),
		dataDir: srv.DataDir,
		set: func(t *testing.T, path string, value []byte) {
			c := cli(t)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.Put(ctx, path, string(value)); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func TestZooKeeperEndToEnd(t *testing.T) { liveEndToEnd(t, startZooKeeper(t)) }
func TestEtcdEndToEnd(t *testing.T)      { liveEndToEnd(t, startEtcd(t)) }

// liveEndToEnd is issues 11 and 12's story on a real server, through the CLI: a
// fixture with lost schema ledgers loaded into the server, check, schema repair
// and back-fill against it, the same answers as on the data dir, undo byte for
// byte, and the offline reader of the files the server wrote agreeing with it.
// liveScenario captures the schemas of a healthy cluster, then generates the same
// cluster with lost schema ledgers twice: once loaded into the live store (dir
// holds its ledgers and journal), once as a plain data dir, the reference.
func liveScenario(t *testing.T, srv *liveStore) (capFile, dir, ref string) {
	t.Helper()
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: 4})
	capFile = filepath.Join(t.TempDir(), "schemas.jsonl")
	mustBin(t, 0, "-d", healthy, "schema", "capture", "--out", capFile)
	dir = filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "--metadata", srv.url, "fixtures", "generate", "--out", dir, "--seed", "4", "--lose-schema-ledgers", "2")
	ref = filepath.Join(t.TempDir(), "ref")
	mustBin(t, 0, "fixtures", "generate", "--out", ref, "--seed", "4", "--lose-schema-ledgers", "2")
	return capFile, dir, ref
}

func liveEndToEnd(t *testing.T, srv *liveStore) {
	liveURL := srv.url
	capFile, dir, ref := liveScenario(t, srv)
	m, err := fixtures.LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	loaded := srv.tree(t)
	if d := diffTrees(testutil.Dump(t, ref).Nodes, withoutEmptyParents(loaded)); len(d) > 0 {
		t.Fatalf("ZooKeeper does not hold the fixture's nodes: %v", d[:min(len(d), 10)])
	}

	live := []string{"-d", dir, "--metadata", liveURL, "--json"}
	// check finds the same on ZooKeeper as on the data dir.
	zkFindings := findingSet(t, mustBin(t, 1, append(live, "check")...))
	refFindings := findingSet(t, mustBin(t, 1, "-d", ref, "--json", "check"))
	if strings.Join(zkFindings, "\n") != strings.Join(refFindings, "\n") {
		t.Fatalf("check on ZooKeeper:\n%s\ncheck on the data dir:\n%s", strings.Join(zkFindings, "\n"), strings.Join(refFindings, "\n"))
	}
	lost := 0
	for _, f := range zkFindings {
		if strings.Contains(f, "schema") && strings.HasPrefix(f, "error") {
			lost++
		}
	}
	if lost == 0 {
		t.Fatalf("check on ZooKeeper found no lost schema version:\n%s", strings.Join(zkFindings, "\n"))
	}
	beforeRepair := srv.tree(t)
	zxidBeforeRepair := srv.point(t)

	// Repair against ZooKeeper and against the reference: the same nodes result.
	var rep struct {
		RunID    string `json:"run_id"`
		Restored int    `json:"restored"`
	}
	repOut, repErr, repCode := runBin(t, append(live, "schema", "repair", "--from", capFile, "--apply")...)
	if err := json.Unmarshal([]byte(repOut), &rep); err != nil || rep.Restored == 0 || repCode != 0 {
		t.Fatalf("repair: exit %d, output %+v, %v\n%s", repCode, rep, err, repErr)
	}
	// Brokers read the restored ledgers from bookies, which ledgermedic does not write.
	if !strings.Contains(repErr, "WARNING: ") || !strings.Contains(repErr, "does not write to bookies") {
		t.Errorf("a repair against the live store does not warn that the new entries are not on bookies:\n%s", repErr)
	}
	mustBin(t, 0, "-d", ref, "schema", "repair", "--from", capFile, "--apply")
	afterRepair := srv.tree(t)
	refNodes := testutil.Dump(t, ref).Nodes
	for p, v := range refNodes {
		if strings.HasPrefix(p, "/schemas/") && !bytes.Equal(afterRepair[p], v) {
			t.Errorf("locator %s in ZooKeeper differs from the data-dir repair", p)
		}
	}
	afterFindings := findingSet(t, mustBin(t, -1, append(live, "check")...))
	refAfter := findingSet(t, mustBin(t, -1, "-d", ref, "--json", "check"))
	if strings.Join(afterFindings, "\n") != strings.Join(refAfter, "\n") {
		t.Fatalf("check after repair, ZooKeeper:\n%s\ndata dir:\n%s", strings.Join(afterFindings, "\n"), strings.Join(refAfter, "\n"))
	}
	for _, f := range afterFindings {
		if strings.HasPrefix(f, "error") {
			t.Errorf("after repair, check still reports %s", f)
		}
	}

	// Back-fill against ZooKeeper writes the manifest's values.
	var bf struct {
		Runs []string `json:"runs"`
	}
	out := mustBin(t, -1, append(live, "index", "backfill", "--apply", "--batch", "2")...)
	if err := json.Unmarshal([]byte(out), &bf); err != nil || len(bf.Runs) == 0 {
		t.Fatalf("backfill output: %v\n%s", err, out)
	}
	mustBin(t, -1, "-d", ref, "index", "backfill", "--apply")
	afterBackfill := srv.tree(t)
	refNodes = testutil.Dump(t, ref).Nodes
	refAfterBackfill := findingSet(t, mustBin(t, -1, "-d", ref, "--json", "check"))
	for _, ml := range m.ManagedLedgers {
		if !bytes.Equal(afterBackfill[ml.Path], refNodes[ml.Path]) {
			t.Errorf("managed ledger %s in ZooKeeper differs from the data-dir back-fill", ml.Path)
		}
	}

	// The offline reader of the server's files, now and before the repair.
	zxidNow := srv.point(t)
	srv.stop()
	offline := []string{"-d", dir, "--metadata", srv.offline, "--json"}
	if got := findingSet(t, mustBin(t, -1, append(offline, "check")...)); strings.Join(got, "\n") != strings.Join(refAfterBackfill, "\n") {
		t.Fatalf("check on the offline dataDir:\n%s\non the data dir:\n%s", strings.Join(got, "\n"), strings.Join(refAfterBackfill, "\n"))
	}
	if d := diffTrees(withoutEmptyParents(afterBackfill), withoutEmptyParents(offlineTree(t, srv, 0))); len(d) > 0 {
		t.Fatalf("the offline reader at %s %d differs from the live server: %v", srv.atFlag, zxidNow, d[:min(len(d), 10)])
	}
	if d := diffTrees(withoutEmptyParents(beforeRepair), withoutEmptyParents(offlineTree(t, srv, zxidBeforeRepair))); len(d) > 0 {
		t.Fatalf("--at-%s %d (before the repair) differs from the tree then: %v", srv.atFlag, zxidBeforeRepair, d[:min(len(d), 10)])
	}
	srv.restart()

	// Undo every run, newest first: every node the fixture loaded is back, byte for byte.
	var journal struct {
		Runs []struct {
			RunID string `json:"run"`
			State string `json:"state"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(mustBin(t, 0, append(live, "journal", "list")...)), &journal); err != nil {
		t.Fatal(err)
	}
	for i := len(journal.Runs) - 1; i >= 0; i-- {
		if journal.Runs[i].State == "committed" {
			mustBin(t, 0, append(live, "journal", "undo", "--apply", journal.Runs[i].RunID)...)
		}
	}
	if d := diffTrees(withoutEmptyParents(loaded), withoutEmptyParents(srv.tree(t))); len(d) > 0 {
		t.Fatalf("after undoing every run, ZooKeeper differs from what was loaded: %v", d[:min(len(d), 10)])
	}
	// Undo against the data dir's own store is refused: the runs wrote ZooKeeper.
	if _, stderr, code := runBin(t, "-d", dir, "journal", "undo", "--apply", journal.Runs[0].RunID); code != 2 || !strings.Contains(stderr, "--metadata") {
		t.Fatalf("undo of a ZooKeeper run on the data dir: exit %d\n%s", code, stderr)
	}
}

// offlineTree reads the files the stopped server left (at a zxid or revision; 0:
// the newest) through the offline backend.
func offlineTree(t *testing.T, srv *liveStore, at int64) map[string][]byte {
	t.Helper()
	u, err := store.ParseMetadataURL(srv.offline)
	if err != nil {
		t.Fatal(err)
	}
	var r store.RemoteOptions
	if srv.atFlag == "zxid" {
		r.AtZxid = at
	} else {
		r.Revision = at
	}
	mb, err := datadir.OpenMetadata(u, store.Options{ReadOnly: true, Remote: r})
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()
	if src := mb.Source(); at != 0 && src.Zxid != at && src.Revision != at {
		t.Fatalf("the view at %s %d reflects %+v", srv.atFlag, at, src)
	}
	tree := map[string][]byte{}
	err = mb.Walk(context.Background(), "", func(n store.Node) error {
		if n.Path != "/" && n.Path != "/zookeeper" && !strings.HasPrefix(n.Path, "/zookeeper/") {
			tree[n.Path] = bytes.Clone(n.Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// TestZooKeeperImportPushAndShards and TestEtcdImportPushAndShards: a forensic
// copy repaired offline and pushed ends where a live repair ends; a node changed
// after the import makes push refuse and write nothing; two --shard processes
// split a back-fill exactly, and a third, overlapping one loses no write and
// reports its conflicts.
func TestZooKeeperImportPushAndShards(t *testing.T) { livePushAndShards(t, startZooKeeper(t)) }
func TestEtcdImportPushAndShards(t *testing.T)      { livePushAndShards(t, startEtcd(t)) }

func livePushAndShards(t *testing.T, srv *liveStore) {
	liveURL := srv.url
	capFile, dir, ref := liveScenario(t, srv)
	mustBin(t, 0, "-d", ref, "schema", "repair", "--from", capFile, "--apply")

	// Import (metadata from ZooKeeper, entries from the cluster's ledger store), repair the copy.
	cp := filepath.Join(t.TempDir(), "copy")
	mustBin(t, 0, "-d", dir, "--metadata", liveURL, "import", "--copy-ledgers", "--out", cp)
	var rep struct {
		RunID      string  `json:"run_id"`
		NotOnBooks []int64 `json:"ledgers_not_on_bookies"`
	}
	if err := json.Unmarshal([]byte(mustBin(t, 0, "-d", cp, "--json", "schema", "repair", "--from", capFile, "--apply")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.NotOnBooks) == 0 {
		t.Fatal("the repair of the copy does not list the new ledgers whose entries only the copy holds")
	}
	// A node the run changed is changed on the server after the import: push refuses, writes nothing.
	var locator string
	liveNodes, refNodes := srv.tree(t), testutil.Dump(t, ref).Nodes
	for p, v := range refNodes {
		if strings.HasPrefix(p, "/schemas/") && !bytes.Equal(liveNodes[p], v) {
			locator = p
			break
		}
	}
	if locator == "" {
		t.Fatal("no locator differs between the broken server and the repaired reference")
	}
	orig := liveNodes[locator]
	srv.set(t, locator, append(bytes.Clone(orig), 0))
	before := srv.tree(t)
	stdout, stderr, code := runBin(t, "-d", cp, "--metadata", liveURL, "journal", "push", "--apply", rep.RunID)
	if code != 1 || !strings.Contains(stderr, locator) {
		t.Fatalf("push over a changed node: exit %d, want 1 naming %s\n%s\n%s", code, locator, stdout, stderr)
	}
	if d := diffTrees(before, srv.tree(t)); len(d) > 0 {
		t.Fatalf("a refused push wrote: %v", d)
	}
	// Put it back; now the push goes through and ends where the live repair ends.
	srv.set(t, locator, orig)
	restored := srv.tree(t)
	mustBin(t, 0, "-d", cp, "--metadata", liveURL, "journal", "push", rep.RunID) // dry run
	if d := diffTrees(restored, srv.tree(t)); len(d) != 0 {
		t.Fatalf("a dry-run push wrote: %v", d)
	}
	stdout, stderr, code = runBin(t, "-d", cp, "--metadata", liveURL, "journal", "push", "--apply", rep.RunID)
	if code != 0 {
		t.Fatalf("push: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The live store now points brokers at ledgers no bookie holds: the push says so.
	for _, id := range rep.NotOnBooks {
		if !strings.Contains(stderr, "WARNING: ") || !strings.Contains(stderr, strconv.FormatInt(id, 10)) {
			t.Errorf("push does not warn that ledger %d's entries are not on any bookie:\n%s", id, stderr)
		}
	}
	pushed := withoutEmptyParents(srv.tree(t))
	for p, v := range refNodes {
		// Locators equal byte for byte; a restored ledger's metadata node exists
		// (its creation time is the repair's own).
		_, ok := pushed[p]
		if strings.HasPrefix(p, "/schemas/") && !bytes.Equal(pushed[p], v) || strings.HasPrefix(p, "/ledgers/") && !ok {
			t.Errorf("after push, %s differs from a repair of the same data", p)
		}
	}

	// Shards: two processes split the back-fill, a third overlaps both.
	copies := make([]string, 3)
	for i := range copies {
		copies[i] = filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d", i))
		testutil.CopyDir(t, dir, copies[i])
		os.RemoveAll(filepath.Join(copies[i], "journal"))
	}
	type result struct {
		out, errOut string
		code        int
	}
	results := make([]result, 3)
	var wg sync.WaitGroup
	for i, shard := range []string{"0/2", "1/2", ""} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"-d", copies[i], "--metadata", liveURL, "--json", "index", "backfill", "--apply", "--batch", "1"}
			if shard != "" {
				args = append(args, "--shard", shard)
			} else {
				// Slow reads keep its plans open while the shards write the same nodes.
				args = append(args, "--rate", "20")
			}
			o, e, c := runBin(t, args...)
			results[i] = result{o, e, c}
		}()
	}
	wg.Wait()
	refOut := mustBin(t, -1, "-d", ref, "--json", "index", "backfill", "--apply")
	final := srv.tree(t)
	refNodes = testutil.Dump(t, ref).Nodes
	m, _ := fixtures.LoadManifest(dir)
	for _, ml := range m.ManagedLedgers {
		if !bytes.Equal(final[ml.Path], refNodes[ml.Path]) {
			t.Errorf("after the shards, %s differs from one back-fill", ml.Path)
		}
	}
	// No value written twice, none lost: the three wrote exactly what one run writes,
	// and every batch that lost a race was refused whole and reported.
	var refRun struct {
		Summary []struct {
			Written int `json:"written"`
		} `json:"summary"`
		Findings []struct {
			Kind string `json:"kind"`
		} `json:"findings"`
	}
	sum, refused := 0, 0
	for i, r := range results {
		if r.code != 0 && r.code != 1 {
			t.Fatalf("process %d: exit %d\n%s\n%s", i, r.code, r.out, r.errOut)
		}
		var doc = refRun
		if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, r.out)
		}
		if len(doc.Summary) != 1 {
			t.Fatalf("process %d: no summary\n%s", i, r.out)
		}
		sum += doc.Summary[0].Written
		for _, f := range doc.Findings {
			if f.Kind == "index-batch-refused" {
				refused++
			}
		}
		if r.code == 1 && refused == 0 && i == 2 {
			t.Logf("process %d exit 1 without refusals:\n%s", i, r.out)
		}
	}
	if err := json.Unmarshal([]byte(refOut), &refRun); err != nil {
		t.Fatal(err)
	}
	if len(refRun.Summary) != 1 || sum != refRun.Summary[0].Written || sum == 0 {
		t.Fatalf("the three processes wrote %d ledger values; one back-fill writes %+v", sum, refRun.Summary)
	}
	t.Logf("shards: %d values written by three processes, %d batch conflicts caught and reported", sum, refused)
	// Re-running any shard now writes nothing: every value is there.
	var again = refRun
	out := mustBin(t, -1, "-d", copies[0], "--metadata", liveURL, "--json", "index", "backfill", "--apply", "--shard", "0/2")
	if err := json.Unmarshal([]byte(out), &again); err != nil || len(again.Summary) != 1 || again.Summary[0].Written != 0 {
		t.Fatalf("a re-run wrote %+v (%v)\n%s", again.Summary, err, out)
	}
}

func TestZooKeeperKilledMidApply(t *testing.T) { liveKilledMidApply(t, startZooKeeper(t)) }
func TestEtcdKilledMidApply(t *testing.T)      { liveKilledMidApply(t, startEtcd(t)) }

// liveKilledMidApply kills the server (SIGKILL) while a back-fill writes to it,
// restarts it and runs the back-fill again: the cluster ends exactly as one
// uninterrupted back-fill leaves it, and no run is left half-applied.
func liveKilledMidApply(t *testing.T, srv *liveStore) {
	dir := filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "--metadata", srv.url, "fixtures", "generate", "--out", dir, "--seed", "6", "--topics", "6")
	ref := filepath.Join(t.TempDir(), "ref")
	mustBin(t, 0, "fixtures", "generate", "--out", ref, "--seed", "6", "--topics", "6")
	mustBin(t, -1, "-d", ref, "index", "backfill", "--apply")
	want := testutil.Dump(t, ref).Nodes

	args := []string{"-d", dir, "--metadata", srv.url, "--timeout", "3s", "--json", "index", "backfill", "--apply", "--batch", "1", "--rate", "15"}
	done := make(chan result3, 1)
	go func() {
		o, e, c := runBin(t, args...)
		done <- result3{o, e, c}
	}()
	// Kill once the first batches are in: the run in flight is cut mid-way.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		written := 0
		tree := srv.tree(t)
		for p, v := range want {
			if strings.HasPrefix(p, "/managed-ledgers/") && bytes.Equal(tree[p], v) {
				written++
			}
		}
		if written >= 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.kill()
	r := <-done
	if r.code == 0 {
		t.Fatalf("the back-fill finished although its server was killed:\n%s", r.out)
	}
	if strings.Contains(r.errOut, "panic:") || strings.Contains(r.errOut, "goroutine ") {
		t.Fatalf("a panic reached the user:\n%s", r.errOut)
	}
	srv.restart()
	left := 0
	mid := srv.tree(t)
	for p, v := range want {
		if strings.HasPrefix(p, "/managed-ledgers/") && !bytes.Equal(mid[p], v) {
			left++
		}
	}
	if left == 0 {
		t.Fatal("the kill came after the back-fill had written everything: it tested nothing")
	}
	t.Logf("killed with %d managed ledgers still to write; exit %d: %s", left, r.code, strings.TrimSpace(r.errOut))
	mustBin(t, -1, args[:len(args)-2]...) // the same command, without the throttle
	got := withoutEmptyParents(srv.tree(t))
	for p, v := range want {
		if strings.HasPrefix(p, "/managed-ledgers/") && !bytes.Equal(got[p], v) {
			t.Errorf("%s: after kill, restart and re-run, differs from one uninterrupted back-fill", p)
		}
	}
	var journal struct {
		Runs []struct {
			RunID string `json:"run"`
			State string `json:"state"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(mustBin(t, 0, "-d", dir, "--metadata", srv.url, "--json", "journal", "list")), &journal); err != nil {
		t.Fatal(err)
	}
	for _, run := range journal.Runs {
		if run.State != "committed" && run.State != "rolled-back" && run.State != "refused" {
			t.Errorf("run %s is %s after recovery", run.RunID, run.State)
		}
	}
}

type result3 struct {
	out, errOut string
	code        int
}

// TestLiveStoreBadInput: what an SRE mistypes or meets in an incident gets a
// clear message and the documented exit code, never a panic or a hang.
func TestLiveStoreBadInput(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 2})
	notData := t.TempDir()
	if err := os.WriteFile(filepath.Join(notData, "snapshot.1"), []byte("not a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreignDB := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(foreignDB, bytes.Repeat([]byte{7}, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"unreachable ZooKeeper", []string{"--metadata", "zk://127.0.0.1:1", "--timeout", "2s", "check"}, 3, "127.0.0.1:1"},
		{"unreachable etcd", []string{"--metadata", "etcd://127.0.0.1:1", "--timeout", "2s", "check"}, 3, "127.0.0.1:1"},
		{"dataDir of another program", []string{"--metadata", "zk-data:" + notData, "check"}, 3, notData},
		{"missing dataDir", []string{"--metadata", "zk-data:" + filepath.Join(notData, "nope"), "check"}, 3, "nope"},
		{"db of another program", []string{"--metadata", "etcd-db:" + foreignDB, "check"}, 3, foreignDB},
		{"etcd has no time per revision", []string{"--metadata", "etcd-db:" + foreignDB, "--at-time", "2026-01-01T00:00:00Z", "check"}, 2, "revision"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, code := runBin(t, append([]string{"-d", dir}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.says) {
				t.Fatalf("exit %d, want %d with a message naming %q\nstdout:\n%s\nstderr:\n%s", code, c.code, c.says, stdout, stderr)
			}
			if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("a panic reached the user:\n%s", stderr)
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Fatalf("took %v: a dead store must fail within its timeout", el)
			}
		})
	}
	// On a running server: a chroot that does not exist is bad input (TestZooKeeperChroot).
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	stdout, stderr, code := runBin(t, "-d", dir, "--metadata", "zk://"+srv.Addr+"/no/such/chroot", "check")
	if code != 2 || !strings.Contains(stderr, "/no/such/chroot") {
		t.Fatalf("missing chroot: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
