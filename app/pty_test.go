//go:build linux

package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"
	"golang.org/x/sys/unix"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// openPTY opens a pseudo-terminal pair of the given width (posix_openpt,
// grantpt, unlockpt by hand: /dev/ptmx and two ioctls).
func openPTY(t *testing.T, cols int) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pts %d: %v", n, err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: uint16(cols)}); err != nil {
		t.Fatalf("set window size: %v", err)
	}
	return m, s
}

// runInPTY runs the binary with stdout and stderr on a terminal cols wide and
// returns everything it wrote, with the exit code.
func runInPTY(t *testing.T, cols int, env []string, args ...string) (string, int) {
	t.Helper()
	master, slave := openPTY(t, cols)
	defer master.Close()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "LEDGERMEDIC_DATA_DIR="), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, master) // ends with EIO when the child has exited
		done <- err
	}()
	werr := cmd.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%v: output did not end", args)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	return out.String(), code
}

func TestOutputFitsA100ColumnTerminal(t *testing.T) {
	if binary == "" {
		t.Fatal("the ledgermedic binary did not build")
	}
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 1234, LoseTopicLedger: true, LoseSchemaLedgers: 1,
		CorruptCRC: true, OrphanLedger: true, LoseEntriesOnly: true})
	capture := filepath.Join(t.TempDir(), "cap.jsonl")
	captureOf(t, 1234, capture)
	ledger := int64(-1)
	for _, l := range m.ManagedLedgers[0].Ledgers {
		if l.Lost == "" && !l.Offloaded && ledger < 0 {
			ledger = l.ID
		}
	}
	commands := [][]string{
		{"check"},
		{"inspect", "topics"},
		{"inspect", "ledgers", "--topic", "persistent://acme/orders/orders"},
		{"inspect", "schemas"},
		{"inspect", "node", m.ManagedLedgers[0].Path},
		{"inspect", "entries", "--ledger", itoa(ledger)},
		{"inspect", "schema-usage"},
		{"schema", "repair", "--from", capture},
		{"index", "backfill"},
		{"journal", "list"},
	}
	const cols = 100
	for _, args := range commands {
		out, code := runInPTY(t, cols, []string{"COLUMNS=100", "NO_COLOR=1"}, append([]string{"-d", dir}, args...)...)
		if code > 1 {
			t.Errorf("%v: exit %d\n%s", args, code, out)
			continue
		}
		if strings.Contains(out, "\x1b[") {
			t.Errorf("%v: escape sequences under NO_COLOR", args)
		}
		lines := 0
		for _, line := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
			lines++
			// A suggested command is never cut: it has a line of its own, whole.
			cmd := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "hint:"))
			if w := runewidth.StringWidth(line); w > cols && !strings.HasPrefix(cmd, "ledgermedic ") {
				t.Errorf("%v: a line is %d columns wide at %d:\n%s", args, w, cols, line)
				break
			}
		}
		if lines < 2 {
			t.Errorf("%v: printed %d lines:\n%s", args, lines, out)
		}
		// -o wide prints every cell whole, whatever the terminal.
		if args[0] == "check" {
			wide, _ := runInPTY(t, cols, nil, append([]string{"-d", dir, "-o", "wide"}, args...)...)
			widest := 0
			for _, line := range strings.Split(wide, "\n") {
				widest = max(widest, runewidth.StringWidth(strings.TrimRight(line, "\r")))
			}
			if widest <= cols {
				t.Errorf("check -o wide: widest line %d, want the whole cells (wider than %d)", widest, cols)
			}
		}
	}
}
