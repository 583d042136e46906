package testutil

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EtcdBinary is Debian's etcd-server 3.4 (installed by .ci/run).
const EtcdBinary = "/usr/bin/etcd"

// EtcdOptions tune StartEtcdWith. Zero values are the defaults.
type EtcdOptions struct {
	// DataDir reuses an existing data dir; "" makes a new temp dir (removed at cleanup).
	DataDir string
	// ExtraArgs are appended to the etcd command line ("--max-txn-ops=16").
	ExtraArgs []string
	// StartTimeout bounds the wait for /health (0: 30 s).
	StartTimeout time.Duration
}

// EtcdServer is one single-member etcd a test started. Stop, Kill and Restart may
// be called in any order and more than once; t.Cleanup stops it at the end of the
// test. Each instance preallocates a 64,000,000-byte WAL segment (62.5 MB of disk);
// the temp data dir is removed at cleanup.
type EtcdServer struct {
	Endpoint string // http://127.0.0.1:port, stable across Restart
	DataDir  string // --data-dir; the bbolt file is DataDir/member/snap/db
	serverProcess

	t      testing.TB
	args   []string
	logDir string
}

// EtcdAvailable reports whether the etcd binary is installed.
func EtcdAvailable() bool {
	_, err := os.Stat(EtcdBinary)
	return err == nil
}

// SkipWithoutEtcd skips the test when etcd is missing, except under CI=true, where
// CI installs it and its absence is a failure.
func SkipWithoutEtcd(t testing.TB) {
	t.Helper()
	if EtcdAvailable() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("etcd is required in CI: need %s (apt-get install etcd-server etcd-client)", EtcdBinary)
	}
	t.Skipf("etcd not installed (need %s)", EtcdBinary)
}

// StartEtcd starts a single-member etcd on free 127.0.0.1 ports with a temp data dir.
func StartEtcd(t testing.TB) *EtcdServer { return StartEtcdWith(t, EtcdOptions{}) }

// StartEtcdWith starts etcd as StartEtcd does, tuned by opts, and waits until
// /health answers true.
func StartEtcdWith(t testing.TB, opts EtcdOptions) *EtcdServer {
	t.Helper()
	SkipWithoutEtcd(t)
	base := t.TempDir()
	dataDir := opts.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(base, "data")
	}
	client, peer, err := twoFreePorts()
	if err != nil {
		t.Fatalf("etcd: free ports: %v", err)
	}
	s := &EtcdServer{
		Endpoint:      fmt.Sprintf("http://127.0.0.1:%d", client),
		DataDir:       dataDir,
		serverProcess: serverProcess{name: "etcd", timeout: opts.StartTimeout},
		t:             t,
		args:          EtcdArgs(dataDir, client, peer, opts.ExtraArgs...),
		logDir:        filepath.Dir(dataDir),
	}
	if s.timeout == 0 {
		s.timeout = 30 * time.Second
	}
	t.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		t.Fatalf("etcd: %v", err)
	}
	return s
}

// EtcdArgs is the command line StartEtcd runs: loopback only.
func EtcdArgs(dataDir string, client, peer int, extra ...string) []string {
	c := fmt.Sprintf("http://127.0.0.1:%d", client)
	p := fmt.Sprintf("http://127.0.0.1:%d", peer)
	args := []string{
		"--name", "s1", "--data-dir", dataDir,
		"--listen-client-urls", c, "--advertise-client-urls", c,
		"--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
		"--initial-cluster", "s1=" + p, "--log-level", "error",
	}
	return append(args, extra...)
}

func (s *EtcdServer) start() error {
	hc := &http.Client{Timeout: time.Second}
	return s.launch(s.logDir, append([]string{EtcdBinary}, s.args...), func() bool { return healthy(hc, s.Endpoint) })
}

// healthy: etcd's /health answers {"health":"true"} once the member has a leader.
func healthy(hc *http.Client, endpoint string) bool {
	resp, err := hc.Get(endpoint + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 256)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode == http.StatusOK && strings.Contains(b.String(), `"true"`)
}

// Restart stops the server if it runs (SIGTERM) and starts it again on the same
// data dir and ports.
func (s *EtcdServer) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("etcd restart: %v", err)
	}
}

// DBFile is the bbolt file of the member.
func (s *EtcdServer) DBFile() string { return filepath.Join(s.DataDir, "member", "snap", "db") }

// twoFreePorts picks two distinct free loopback ports (freePort's range).
func twoFreePorts() (int, int, error) {
	a, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	for {
		b, err := freePort()
		if err != nil || b != a {
			return a, b, err
		}
	}
}
