package zk_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
	zkstore "github.com/ledgermedic/ledgermedic/store/zk"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// A three-server ensemble on loopback whose server 1 hears the leader late: its
// link to the other servers' quorum ports goes through a proxy that holds every
// byte from them for lag. Writes commit with the two others, so server 1 serves
// reads a lag behind them, as a slow follower does: the case a read session on
// another server than the write session must sync for.

type zkLagEnsemble struct {
	addrs [3]string // client addresses; [0] is the lagging server
	modes [3]string
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// delayProxy listens on a free port and forwards to target, delivering what
// target sends lag late (in order); what is sent to target goes at once.
func delayProxy(t *testing.T, target string, lag time.Duration) string {
	t.Helper()
	addr, _ := testProxy(t, target, func(_ int, c, s net.Conn) bool {
		go func() { _, _ = copyConn(s, c) }()
		go delayCopy(c, s, lag)
		return true
	})
	return addr
}

func delayCopy(dst, src net.Conn, lag time.Duration) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	q := make(chan chunk, 1<<14)
	go func() {
		defer dst.Close()
		for c := range q {
			time.Sleep(time.Until(c.at.Add(lag)))
			if _, err := dst.Write(c.b); err != nil {
				return
			}
		}
	}()
	defer close(q)
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{time.Now(), bytes.Clone(buf[:n])}
		}
		if err != nil {
			return
		}
	}
}

func startLagEnsemble(t *testing.T, lag time.Duration) *zkLagEnsemble {
	t.Helper()
	testutil.SkipWithoutZooKeeper(t)
	var client, quorum, election [3]string
	for i := range 3 {
		client[i], quorum[i], election[i] = freeAddr(t), freeAddr(t), freeAddr(t)
	}
	// Server 1 reaches the others' quorum ports through the delay.
	var lagged [3]string
	for i := 1; i < 3; i++ {
		lagged[i] = delayProxy(t, quorum[i], lag)
	}
	e := &zkLagEnsemble{addrs: client}
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	base := t.TempDir()
	for i := range 3 {
		dir := filepath.Join(base, fmt.Sprint(i+1))
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data", "myid"), []byte(fmt.Sprint(i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(client[i])
		lines := []string{
			"tickTime=500", "initLimit=40", "syncLimit=20",
			"dataDir=" + filepath.Join(dir, "data"),
			"clientPort=" + port, "clientPortAddress=127.0.0.1",
			"admin.enableServer=false", "4lw.commands.whitelist=srvr,ruok", "preAllocSize=64",
		}
		for j := range 3 {
			q := quorum[j]
			if i == 0 && j != 0 {
				q = lagged[j]
			}
			lines = append(lines, fmt.Sprintf("server.%d=%s:%s", j+1, q, strings.Split(election[j], ":")[1]))
		}
		cfg := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("java", "-Xmx128m", "-Dzookeeper.log.dir="+dir,
			"-cp", testutil.ZKConfDir+":"+testutil.ZKJar, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := range 3 {
		for {
			out, err := testutil.FourLetter(client[i], "srvr")
			if err == nil && strings.Contains(out, "Mode: ") {
				mode := out[strings.Index(out, "Mode: ")+6:]
				e.modes[i] = strings.TrimSpace(strings.SplitN(mode, "\n", 2)[0])
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ensemble server %d did not serve within 60 s: %v %q", i+1, err, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if e.modes[0] != "follower" {
		t.Fatalf("server 1 is %s, want a follower (modes %v)", e.modes[0], e.modes)
	}
	return e
}

// TestZKVerifyReadsNotStale: the store writes through a session on a current
// server and reads back through its multiRead session on the lagging follower.
// A plain read on that follower right after each write still sees the old value
// (the control: the setup does produce stale reads); GetNodes and the walk must
// see the new one, as they sync first.
func TestZKVerifyReadsNotStale(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server ensemble")
	}
	const lag = 400 * time.Millisecond
	e := startLagEnsemble(t, lag)
	writeHost := e.addrs[1]
	s := testutil.MustOpenMetadata(t, "zk://"+writeHost, store.Options{})
	zkstore.ZKReadHostsForTest(s, []string{e.addrs[0]})
	if active, _, _ := zkstore.ZKReadStatsForTest(s); !active {
		t.Fatalf("no read session on the lagging follower: %v", s.Source().Notes)
	}
	lagging := testutil.ZKClient(t, e.addrs[0])
	if _, err := s.CompareAndSet("/v", 0, []byte("0")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * lag)
	version, stale := uint64(1), 0
	for i := 1; i <= 4; i++ {
		want := []byte(fmt.Sprint(i))
		v, err := s.CompareAndSet("/v", version, want)
		if err != nil {
			t.Fatal(err)
		}
		version = v
		if old, _, err := lagging.Get("/v"); err == nil && !bytes.Equal(old, want) {
			stale++
		}
		var got store.Node
		if i%2 == 1 {
			nodes, err := s.(store.NodeBatcher).GetNodes([]string{"/v"})
			if err != nil {
				t.Fatal(err)
			}
			got = nodes[0]
		} else {
			nodes := zkWalkAll(t, s, "/v", "")
			if len(nodes) != 1 {
				t.Fatalf("walk: %d nodes", len(nodes))
			}
			got = nodes[0]
		}
		if !bytes.Equal(got.Value, want) || got.Version != version {
			t.Errorf("write %d: read back %q at version %d, wrote %q at %d", i, got.Value, got.Version, want, version)
		}
	}
	if stale == 0 {
		t.Fatal("the control read on the lagging follower was never stale: the test proves nothing")
	}
	if _, _, err := lagging.Get("/v"); err != nil && err != zk.ErrNoNode {
		t.Error(err)
	}
}
