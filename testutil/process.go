package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// serverProcess is a server a test runs as a child process: started, waited for,
// signalled and restarted by its PID only. ZKServer and EtcdServer embed it.
type serverProcess struct {
	name     string // "zookeeper", "etcd": log file names and messages
	LogFile  string // the server's stdout and stderr (shown when a start fails)
	timeout  time.Duration
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	logCount int
}

// launch starts argv with its output in a new log file under logDir and polls
// ready until it answers true, the process exits, or the start timeout passes.
func (p *serverProcess) launch(logDir string, argv []string, ready func() bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return errors.New("already running")
	}
	p.logCount++
	p.LogFile = filepath.Join(logDir, fmt.Sprintf("%s-%d.log", p.name, p.logCount))
	logf, err := os.Create(p.LogFile)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, so a test binary killed by a signal does not leave it
	// sharing our terminal's group; we still stop it by its PID only.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	deadline := time.Now().Add(p.timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			p.cmd = nil
			return fmt.Errorf("server exited during start; log %s:\n%s", p.LogFile, tail(p.LogFile))
		default:
		}
		if ready() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.signalLocked(syscall.SIGKILL)
	return fmt.Errorf("not ready after %v; log %s:\n%s", p.timeout, p.LogFile, tail(p.LogFile))
}

// Stop ends the server with SIGTERM (a clean shutdown that keeps the data) and
// waits for it; after 10 s it sends SIGKILL. A stopped server is a no-op.
func (p *serverProcess) Stop() { p.stop(syscall.SIGTERM) }

// Kill ends the server with SIGKILL, as a crash would.
func (p *serverProcess) Kill() { p.stop(syscall.SIGKILL) }

func (p *serverProcess) stop(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signalLocked(sig)
}

func (p *serverProcess) signalLocked(sig syscall.Signal) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
}

// Running reports whether the server process is alive (started and not stopped).
func (p *serverProcess) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// PID is the server's process id, 0 when stopped.
func (p *serverProcess) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// LogTail is the end of the server's current log, for a failing test's message.
func (p *serverProcess) LogTail() string { return tail(p.LogFile) }

// tail returns the end of a log file, for failure messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
