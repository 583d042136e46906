package testutil

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The helper's promises: serving when it returns, data kept across Restart on the
// same port, Kill ends the process, Stop after Kill is harmless.
func TestStartZooKeeper(t *testing.T) {
	s := StartZooKeeper(t, ZKOptions{})
	conn, _, err := zk.Connect([]string{s.Addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/kept", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create on %s: %v", s.Addr, err)
	}
	conn.Close()
	addr := s.Addr
	s.Restart()
	if s.Addr != addr || !s.Running() {
		t.Fatalf("restart: addr %s -> %s, running %v", addr, s.Addr, s.Running())
	}
	conn, _, err = zk.Connect([]string{s.Addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := conn.Get("/kept")
	conn.Close()
	if err != nil || string(got) != "v1" {
		t.Fatalf("after restart: get /kept = %q, %v", got, err)
	}
	pid := s.PID()
	s.Kill()
	if s.Running() || s.PID() != 0 {
		t.Fatalf("after kill: running %v", s.Running())
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
		t.Fatalf("pid %d still alive after Kill", pid)
	}
	s.Stop()
	if out, err := FourLetter(s.Addr, "srvr"); err == nil && strings.Contains(out, "Mode:") {
		t.Fatalf("still serving after Kill: %s", out)
	}
	ents, err := os.ReadDir(filepath.Join(s.DataDir, "version-2"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("no files in %s/version-2: %v", s.DataDir, err)
	}
}

func TestZKConfig(t *testing.T) {
	cfg := ZKConfig("/d", 1234, ZKOptions{SnapCount: -1, ExtraConfig: []string{"extendedTypesEnabled=true"}})
	for _, want := range []string{"dataDir=/d\n", "clientPort=1234\n", "preAllocSize=64\n", "admin.enableServer=false\n", "extendedTypesEnabled=true\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "snapCount") {
		t.Errorf("SnapCount -1 must omit snapCount:\n%s", cfg)
	}
}

// freePort hands out ports below the ephemeral range that nothing listens on,
// including the ones it handed out before and that are now held.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if _, err := fmt.Sscan(string(b), &lo); err != nil {
			t.Fatalf("ip_local_port_range %q: %v", b, err)
		}
	}
	for range 50 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < portFloor || p >= lo {
			t.Fatalf("port %d outside [%d, %d)", p, portFloor, lo)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d not free: %v", p, err)
		}
		defer l.Close()
	}
}
