package testutil

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ZooKeeper 3.8 from Debian (installed by .ci/run): the jar pulls in its dependencies
// through its manifest Class-Path, so these two entries are the whole class path.
const (
	ZKJar     = "/usr/share/java/zookeeper.jar"
	ZKConfDir = "/etc/zookeeper/conf"
)

// ZKOptions tune StartZooKeeper. Zero values are the defaults.
type ZKOptions struct {
	// DataDir reuses an existing dataDir (for example a copy of testdata); "" makes a
	// new temp dir.
	DataDir string
	// SnapCount is zoo.cfg snapCount (0: 20, so short tests still roll snapshots and
	// logs; negative: omit it and use ZooKeeper's default).
	SnapCount int
	// PreAllocKB is zoo.cfg preAllocSize in KB (0: 64, which keeps logs ~65 KB).
	PreAllocKB int
	// ExtraConfig lines are appended to zoo.cfg as given ("extendedTypesEnabled=true").
	ExtraConfig []string
	// StartTimeout bounds the wait for `srvr` to show a Mode: line (0: 30 s).
	StartTimeout time.Duration
	// JVMFlags are passed to java before the class path: system properties that
	// zoo.cfg cannot set ("-Djute.maxbuffer=10485760", as Pulsar runs it).
	JVMFlags []string
}

// ZKServer is one ZooKeeper server a test started. Stop, Kill and Restart may be
// called in any order and more than once; t.Cleanup stops it at the end of the test.
type ZKServer struct {
	Addr    string // 127.0.0.1:port, stable across Restart
	DataDir string // zoo.cfg dataDir; the files are under DataDir/version-2
	serverProcess

	t   testing.TB
	cfg string
	jvm []string
}

// ZooKeeperAvailable reports whether java and the ZooKeeper jar are installed.
func ZooKeeperAvailable() bool {
	if _, err := os.Stat(ZKJar); err != nil {
		return false
	}
	_, err := exec.LookPath("java")
	return err == nil
}

// SkipWithoutZooKeeper skips the test when java or the ZooKeeper jar is missing,
// except when CI=true: CI installs them, so there their absence is a failure.
func SkipWithoutZooKeeper(t testing.TB) {
	t.Helper()
	if ZooKeeperAvailable() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("ZooKeeper is required in CI: need java on PATH and %s (apt-get install zookeeper)", ZKJar)
	}
	t.Skipf("ZooKeeper not installed (need java and %s)", ZKJar)
}

// StartZooKeeper starts a standalone ZooKeeper on a free 127.0.0.1 port and waits
// until it serves. It skips the test when ZooKeeper is not installed (fails under
// CI=true). The server is stopped (SIGTERM, then SIGKILL) by t.Cleanup.
func StartZooKeeper(t testing.TB, opts ZKOptions) *ZKServer {
	t.Helper()
	SkipWithoutZooKeeper(t)
	base := t.TempDir()
	dataDir := opts.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(base, "data")
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatalf("zookeeper dataDir: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("zookeeper: free port: %v", err)
	}
	s := &ZKServer{
		Addr:          fmt.Sprintf("127.0.0.1:%d", port),
		DataDir:       dataDir,
		serverProcess: serverProcess{name: "zookeeper", timeout: opts.StartTimeout},
		t:             t,
		cfg:           filepath.Join(base, "zoo.cfg"),
		jvm:           opts.JVMFlags,
	}
	if s.timeout == 0 {
		s.timeout = 30 * time.Second
	}
	if err := os.WriteFile(s.cfg, []byte(ZKConfig(dataDir, port, opts)), 0o644); err != nil {
		t.Fatalf("zookeeper: write zoo.cfg: %v", err)
	}
	t.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	return s
}

// ZKConfig is the zoo.cfg StartZooKeeper writes: loopback only, no
// admin server (it would bind 8080), small preallocation.
func ZKConfig(dataDir string, port int, opts ZKOptions) string {
	prealloc := opts.PreAllocKB
	if prealloc == 0 {
		prealloc = 64
	}
	lines := []string{
		"tickTime=2000",
		"dataDir=" + dataDir,
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr,ruok",
		fmt.Sprintf("preAllocSize=%d", prealloc),
	}
	switch {
	case opts.SnapCount == 0:
		lines = append(lines, "snapCount=20")
	case opts.SnapCount > 0:
		lines = append(lines, fmt.Sprintf("snapCount=%d", opts.SnapCount))
	}
	lines = append(lines, opts.ExtraConfig...)
	return strings.Join(lines, "\n") + "\n"
}

func (s *ZKServer) start() error {
	argv := append([]string{"java", "-Xmx128m", "-Dzookeeper.log.dir=" + filepath.Dir(s.cfg)}, s.jvm...)
	argv = append(argv, "-cp", ZKConfDir+":"+ZKJar, "org.apache.zookeeper.server.quorum.QuorumPeerMain", s.cfg)
	// ruok answers before the server serves: wait for srvr to report a mode.
	return s.launch(filepath.Dir(s.cfg), argv, func() bool {
		out, err := FourLetter(s.Addr, "srvr")
		return err == nil && strings.Contains(out, "Mode:")
	})
}

// Restart stops the server if it runs (SIGTERM) and starts it again on the same
// dataDir and port.
func (s *ZKServer) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("zookeeper restart: %v", err)
	}
}

// FourLetter sends a four-letter-word command (srvr, ruok) and returns the answer.
func FourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String(), sc.Err()
}

// freePort returns a loopback port nothing listens on, below the kernel's
// ephemeral range: a server restarted on its old port must find it free, and a
// port from that range can meanwhile be taken as the source port of any
// outgoing connection ("bind: address already in use").
func freePort() (int, error) {
	lo := ephemeralLow()
	for range 100 {
		port := portFloor + rand.IntN(lo-portFloor)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port in [%d, %d) after 100 tries", portFloor, lo)
}

// portFloor is the lowest port freePort hands out, above the registered
// ports most services listen on.
const portFloor = 10000

// ephemeralLow is the first port of the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), 32768 when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= portFloor+1000 {
		return 32768
	}
	return lo
}
