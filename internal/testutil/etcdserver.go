package testutil

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EtcdBinary is Debian's etcd-server 3.4 (STORES.md §3).
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
	LogFile  string // the server's stdout and stderr (shown when a start fails)

	t        testing.TB
	args     []string
	timeout  time.Duration
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	logCount int
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
		Endpoint: fmt.Sprintf("http://127.0.0.1:%d", client),
		DataDir:  dataDir,
		t:        t,
		args:     EtcdArgs(dataDir, client, peer, opts.ExtraArgs...),
		timeout:  opts.StartTimeout,
	}
	if s.timeout == 0 {
		s.timeout = 30 * time.Second
	}
	t.Cleanup(s.Stop)
	if err := s.start(filepath.Dir(dataDir)); err != nil {
		t.Fatalf("etcd: %v", err)
	}
	return s
}

// EtcdArgs is the command line StartEtcd runs (STORES.md §3): loopback only.
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

func (s *EtcdServer) start(logDir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	s.logCount++
	s.LogFile = filepath.Join(logDir, fmt.Sprintf("etcd-%d.log", s.logCount))
	logf, err := os.Create(s.LogFile)
	if err != nil {
		return err
	}
	cmd := exec.Command(EtcdBinary, s.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, so a killed test binary does not leave it in our terminal's
	// group; we still stop it by its PID only.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", EtcdBinary, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(s.timeout)
	hc := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("server exited during start; log %s:\n%s", s.LogFile, etcdLogTail(s.LogFile))
		default:
		}
		if healthy(hc, s.Endpoint) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.signalLocked(syscall.SIGKILL)
	return fmt.Errorf("not healthy on %s after %v; log %s:\n%s", s.Endpoint, s.timeout, s.LogFile, etcdLogTail(s.LogFile))
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

// Stop ends the server with SIGTERM (a clean shutdown that keeps the data) and
// waits for it; after 10 s it sends SIGKILL. A stopped server is a no-op.
func (s *EtcdServer) Stop() { s.stop(syscall.SIGTERM) }

// Kill ends the server with SIGKILL, as a crash would.
func (s *EtcdServer) Kill() { s.stop(syscall.SIGKILL) }

func (s *EtcdServer) stop(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalLocked(sig)
}

func (s *EtcdServer) signalLocked(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Restart stops the server if it runs (SIGTERM) and starts it again on the same
// data dir and ports.
func (s *EtcdServer) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(filepath.Dir(s.LogFile)); err != nil {
		s.t.Fatalf("etcd restart: %v", err)
	}
}

// Running reports whether the server process is alive (started and not stopped).
func (s *EtcdServer) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// PID is the server's process id, 0 when stopped.
func (s *EtcdServer) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// DBFile is the bbolt file of the member.
func (s *EtcdServer) DBFile() string { return filepath.Join(s.DataDir, "member", "snap", "db") }

// twoFreePorts picks two distinct free loopback ports, holding both listeners
// until both are chosen so they differ.
func twoFreePorts() (int, int, error) {
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer l1.Close()
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer l2.Close()
	return l1.Addr().(*net.TCPAddr).Port, l2.Addr().(*net.TCPAddr).Port, nil
}

// etcdLogTail returns the end of a log file, for failure messages.
func etcdLogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
