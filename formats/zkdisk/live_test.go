package zkdisk_test

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	. "github.com/ledgermedic/ledgermedic/formats/zkdisk"
	"github.com/ledgermedic/ledgermedic/testutil"
)

var updateSamples = flag.Bool("update-zk-samples", false, "regenerate testdata/zookeeper/sample with the real ZooKeeper server")

const sampleDir = "../../testdata/zookeeper/sample"

// Expected is what the live server showed just before it was stopped: every node
// read with Get, found by Children recursion from "/".
type Expected struct {
	Server string                  `json:"server"`
	Zxid   string                  `json:"zxid"` // srvr's "Zxid:" line (hex)
	Nodes  map[string]ExpectedNode `json:"nodes"`
	// Points are earlier states of one node, for --at-zxid / --at-time.
	Points []ExpectedPoint `json:"points"`
}

type ExpectedNode struct {
	DataHex        string `json:"data_hex"`
	Version        int32  `json:"version"`
	EphemeralOwner string `json:"ephemeral_owner,omitempty"` // hex, "" = 0
}

type ExpectedPoint struct {
	Path    string `json:"path"`
	Zxid    int64  `json:"zxid"`
	TimeMs  int64  `json:"time_ms"`
	DataHex string `json:"data_hex"`
	Version int32  `json:"version"`
}

func connect(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
}

// pulsarWorkload writes Pulsar-like nodes: container parents, several updates,
// a successful and a stale multi, a delete, nil data, an ephemeral of a session
// that closes (gone) and one of a session still open at shutdown (kept). It
// returns the kept session's connection and points for --at-zxid.
func pulsarWorkload(t testing.TB, addr string) (*zk.Conn, []ExpectedPoint) {
	t.Helper()
	acl := zk.WorldACL(zk.PermAll)
	a := connect(t, addr)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	for _, p := range []string{"/managed-ledgers", "/managed-ledgers/public", "/managed-ledgers/public/default", "/managed-ledgers/public/default/persistent"} {
		_, err := a.CreateContainer(p, []byte{}, zk.FlagContainer, acl)
		must("create container "+p, err)
	}
	for _, p := range []string{"/ledgers", "/ledgers/00", "/ledgers/00/0000", "/schemas", "/loadbalance", "/loadbalance/brokers", "/admin"} {
		_, err := a.Create(p, nil, 0, acl)
		must("create "+p, err)
	}
	ml := "/managed-ledgers/public/default/persistent/t1"
	_, err := a.Create(ml, []byte("ml-v0"), 0, acl)
	must("create t1", err)
	for i := range 4 {
		_, err := a.Create(fmt.Sprintf("/ledgers/00/0000/L%04d", i+1), []byte(fmt.Sprintf("ledger-meta-%d\x00\x01\xff", i+1)), 0, acl)
		must("create ledger", err)
	}
	st, err := a.Set(ml, []byte("ml-v1"), 0)
	must("set t1", err)
	points := []ExpectedPoint{{Path: ml, Zxid: st.Mzxid, TimeMs: st.Mtime, DataHex: hex.EncodeToString([]byte("ml-v1")), Version: st.Version}}
	time.Sleep(30 * time.Millisecond) // so --at-time can tell this write from the next
	_, err = a.Multi(&zk.CheckVersionRequest{Path: "/ledgers/00/0000/L0001", Version: 0},
		&zk.SetDataRequest{Path: ml, Data: []byte("ml-v2"), Version: 1})
	must("multi ok", err)
	_, err = a.Multi(&zk.SetDataRequest{Path: "/ledgers/00/0000/L0001", Data: []byte("x"), Version: 0},
		&zk.SetDataRequest{Path: ml, Data: []byte("stale"), Version: 0})
	if err != zk.ErrBadVersion {
		t.Fatalf("stale multi: got %v, want ErrBadVersion", err)
	}
	must("delete L0004", a.Delete("/ledgers/00/0000/L0004", 0))
	_, err = a.Create("/schemas/public", nil, 0, acl)
	must("create schemas/public", err)
	_, err = a.Create("/schemas/public/default", []byte{}, 0, acl)
	must("create schemas/public/default", err)
	for i := range 25 { // enough txns to roll snapshots and logs (snapCount=20)
		p := fmt.Sprintf("/managed-ledgers/public/default/persistent/topic-%02d", i)
		_, err := a.Create(p, []byte(strings.Repeat("m", i)), 0, acl)
		must("create "+p, err)
		if i%3 == 0 {
			_, err = a.Set(p, []byte(fmt.Sprintf("updated-%d", i)), 0)
			must("set "+p, err)
		}
	}
	st, err = a.Set(ml, []byte("ml-v3"), 2)
	must("set t1 v3", err)
	_, err = a.Create("/loadbalance/brokers/gone-broker:8080", []byte("closed"), zk.FlagEphemeral, acl)
	must("ephemeral a", err)
	b := connect(t, addr)
	_, err = b.Create("/loadbalance/brokers/live-broker:8080", []byte(`{"pulsarServiceUrl":"pulsar://x:6650"}`), zk.FlagEphemeral, acl)
	must("ephemeral b", err)
	a.Close() // closeSession deletes gone-broker
	// Wait until the server has processed the close.
	for range 100 {
		if ok, _, _ := b.Exists("/loadbalance/brokers/gone-broker:8080"); !ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b, points
}

// readLive reads every node of the live server with Get, via Children recursion.
func readLive(t testing.TB, c *zk.Conn) map[string]ExpectedNode {
	t.Helper()
	out := map[string]ExpectedNode{}
	var walk func(p string)
	walk = func(p string) {
		data, st, err := c.Get(p)
		if err != nil {
			t.Fatalf("live get %s: %v", p, err)
		}
		n := ExpectedNode{DataHex: hex.EncodeToString(data), Version: st.Version}
		if st.EphemeralOwner != 0 {
			n.EphemeralOwner = strconv.FormatUint(uint64(st.EphemeralOwner), 16)
		}
		out[p] = n
		kids, _, err := c.Children(p)
		if err != nil {
			t.Fatalf("live children %s: %v", p, err)
		}
		slices.Sort(kids)
		for _, k := range kids {
			walk(strings.TrimSuffix(p, "/") + "/" + k)
		}
	}
	walk("/")
	return out
}

var zxidLine = regexp.MustCompile(`Zxid: 0x([0-9a-f]+)`)

// runLive starts a server, runs the workload, records what the live server
// shows, and stops it (SIGTERM). It returns the dataDir and the expectation.
func runLive(t testing.TB) (string, Expected) {
	t.Helper()
	s := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	b, points := pulsarWorkload(t, s.Addr)
	exp := Expected{Server: "Debian ZooKeeper 3.8.0", Nodes: readLive(t, b), Points: points}
	out, err := testutil.FourLetter(s.Addr, "srvr")
	if m := zxidLine.FindStringSubmatch(out); err == nil && m != nil {
		exp.Zxid = "0x" + m[1]
	}
	s.Stop()
	b.Close() // after the stop, so the session (and its ephemeral) outlives the server
	return s.DataDir, exp
}

// compareView checks the offline view against what the live server showed, for
// every node and byte.
func compareView(t *testing.T, v *View, exp Expected) {
	t.Helper()
	got := map[string]ExpectedNode{}
	_ = v.Tree.Walk("", "", func(n *Node) error {
		e := ExpectedNode{DataHex: hex.EncodeToString(n.Data), Version: n.Stat.Version}
		// The server shows ephemeralOwner 0 for containers and TTL nodes.
		if n.Kind() == Ephemeral {
			e.EphemeralOwner = strconv.FormatUint(uint64(n.Stat.EphemeralOwner), 16)
		}
		got[n.Path] = e
		return nil
	})
	for p, e := range exp.Nodes {
		if g, ok := got[p]; !ok {
			t.Errorf("node %s: live server has it, offline view does not", p)
		} else if g != e {
			t.Errorf("node %s: offline %+v, live %+v", p, g, e)
		}
	}
	for p := range got {
		if _, ok := exp.Nodes[p]; !ok {
			t.Errorf("node %s: offline view has it, live server did not", p)
		}
	}
	if want, err := strconv.ParseInt(strings.TrimPrefix(exp.Zxid, "0x"), 16, 64); err == nil && v.Zxid != want {
		t.Errorf("view zxid %#x, live server was at %s", v.Zxid, exp.Zxid)
	}
}

// TestLiveServerEqualsOfflineView: what a real ZooKeeper served just before it
// stopped equals the offline view of the files it left, node for node.
func TestLiveServerEqualsOfflineView(t *testing.T) {
	dataDir, exp := runLive(t)
	v, err := Load(filepath.Join(dataDir, "version-2"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.Nodes) < 40 {
		t.Fatalf("workload made only %d nodes", len(exp.Nodes))
	}
	compareView(t, v, exp)
	t.Logf("%d nodes, zxid %#x, %d txns replayed over %s; notes %q", len(exp.Nodes), v.Zxid, v.Applied, filepath.Base(v.Snapshot), v.Notes)
	if *updateSamples {
		writeSamples(t, dataDir, exp)
	}
}

// writeSamples copies the server's version-2 files and the expectation into
// testdata/zookeeper/sample (run testdata/zookeeper/generate.sh).
func writeSamples(t *testing.T, dataDir string, exp Expected) {
	dst := filepath.Join(sampleDir, "version-2")
	if err := os.RemoveAll(sampleDir); err != nil {
		t.Fatal(err)
	}
	testutil.CopyDir(t, filepath.Join(dataDir, "version-2"), dst)
	j, _ := json.MarshalIndent(exp, "", "  ")
	if err := os.WriteFile(filepath.Join(sampleDir, "expected.json"), append(j, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote the sample to %s", sampleDir)
}
