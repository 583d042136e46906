package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/testutil"
)

// A live metadata server that dies while a command reads or writes it is an I/O
// failure: exit 3 and a message naming the server, never a panic; and once the
// server is back on the same data, the next run ends as an uninterrupted one.
// Each command is killed at points spread over its uninterrupted run time;
// LEDGERMEDIC_KILL_POINTS sets how many (default 3; the full matrix is 10).

// The read rates stretch the reads over a second or more: ZooKeeper's are
// counted per node, etcd's per page of up to thousands of keys.
func TestZooKeeperDiesMidCommand(t *testing.T) { serverDiesMidCommand(t, startZooKeeper(t), "150") }
func TestEtcdDiesMidCommand(t *testing.T)      { serverDiesMidCommand(t, startEtcd(t), "4") }

func killPoints(t *testing.T) int {
	v := os.Getenv("LEDGERMEDIC_KILL_POINTS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("LEDGERMEDIC_KILL_POINTS=%q: want a positive number", v)
	}
	return n
}

// deathCommand is one command of the matrix. Reads are slowed by a rate cap, and
// back-fill writes one managed ledger per run, so that the kill points fall
// inside them.
type deathCommand struct {
	name  string
	args  []string
	write bool
	// ledgerNodesNew: the run creates ledger nodes, whose metadata holds their
	// creation time (ctime): their values differ from run to run, their paths not.
	ledgerNodesNew bool
}

// deathOutcome is what an uninterrupted run leaves: its exit code and its result
// (a read's output; for a write, the server's tree).
type deathOutcome struct {
	code   int
	result string
}

func serverDiesMidCommand(t *testing.T, srv *liveStore, readRate string) {
	points := killPoints(t)
	capFile, dir, _ := liveScenario(t, srv)
	live := []string{"-d", dir, "--metadata", srv.url, "--json", "--timeout", "3s"}
	commands := []deathCommand{
		{name: "check", args: append(live[:len(live):len(live)], "--read-rate", readRate, "check")},
		{name: "inspect topics", args: append(live[:len(live):len(live)], "--read-rate", readRate, "inspect", "topics")},
		{name: "index backfill", args: append(live[:len(live):len(live)], "index", "backfill", "--apply", "--batch", "1", "--rate", "15"), write: true},
		{name: "schema repair", args: append(live[:len(live):len(live)], "--read-rate", readRate, "schema", "repair", "--from", capFile, "--apply"), write: true, ledgerNodesNew: true},
	}
	restore := snapshotState(t, srv, dir)
	for _, c := range commands {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			start := time.Now()
			want := deathRun(t, srv, c, c.args)
			took := time.Since(start)
			if want.code > 1 {
				t.Fatalf("%s uninterrupted: exit %d", c.name, want.code)
			}
			if c.write {
				restore()
			}
			interrupted := 0
			for i := range points {
				// From the start (the server gone before the command connects)
				// to late in the run; a command that finished first is checked for
				// its result, and the first point always interrupts it.
				at := time.Duration(float64(took) * float64(i) / float64(points))
				if killDuring(t, srv, c, at, want) {
					interrupted++
				}
				if c.write {
					restore()
				}
			}
			t.Logf("%s (%v uninterrupted): %d of %d kill points interrupted it", c.name, took.Round(time.Millisecond), interrupted, points)
			if interrupted == 0 {
				t.Errorf("%s: no kill point came before it finished: the matrix tested nothing", c.name)
			}
		})
	}
}

// killDuring runs c, kills the server after at, checks how the command ended,
// restarts the server and checks that the next run ends as an uninterrupted one
// (want). It reports whether the kill came before the command finished.
func killDuring(t *testing.T, srv *liveStore, c deathCommand, at time.Duration, want deathOutcome) bool {
	t.Helper()
	cmd := exec.Command(binary, c.args...)
	cmd.Env = append(os.Environ(), "LEDGERMEDIC_DATA_DIR=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(at)
	srv.kill()
	code := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	stderr := errb.String()
	if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") {
		t.Fatalf("%s killed at %v: a panic reached the user (exit %d):\n%s", c.name, at, code, stderr)
	}
	interrupted := code != want.code
	switch {
	case code == 3:
		if !strings.Contains(stderr, srv.addr) {
			t.Errorf("%s killed at %v: exit 3, but the message does not name the server %s:\n%s", c.name, at, srv.addr, stderr)
		}
	case !interrupted:
		// It finished before the server went: its output is the uninterrupted one.
		if !c.write && deathResult(t, c, out.String()) != want.result {
			t.Errorf("%s killed at %v after it finished: exit %d, but its output differs from an uninterrupted run", c.name, at, code)
		}
	default:
		t.Errorf("%s killed at %v: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", c.name, at, code, out.String(), stderr)
	}
	t.Logf("%s killed at %v: exit %d: %s", c.name, at.Round(time.Millisecond), code, firstLine(stderr))
	srv.restart()
	// The next run, without the throttles: the same result. A write's next run
	// first recovers the interrupted one from the journal.
	got := deathRun(t, srv, c, unthrottled(c.args))
	if got.result != want.result || (!c.write && got.code != want.code) {
		t.Errorf("%s killed at %v, then run again: exit %d, want %d; the result differs from an uninterrupted run:\n%s",
			c.name, at, got.code, want.code, lineDiff(want.result, got.result))
	}
	if c.write {
		assertRunsSettled(t, c.args[:4:4]) // -d DIR --metadata URL
	}
	return interrupted
}

// deathRun runs args to the end and returns the outcome it left.
func deathRun(t *testing.T, srv *liveStore, c deathCommand, args []string) deathOutcome {
	t.Helper()
	stdout, stderr, code := runBin(t, args...)
	if code > 1 {
		t.Fatalf("ledgermedic %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	if c.write {
		tree := withoutEmptyParents(srv.tree(t))
		if c.ledgerNodesNew {
			for p := range tree {
				if strings.HasPrefix(p, "/ledgers/") {
					tree[p] = nil
				}
			}
		}
		return deathOutcome{code, treeDigest(tree)}
	}
	return deathOutcome{code, deathResult(t, c, stdout)}
}

// deathResult is the part of a read's output that must not change: check's
// findings, the other commands' whole output.
func deathResult(t *testing.T, c deathCommand, stdout string) string {
	if c.name == "check" {
		return strings.Join(findingSet(t, stdout), "\n")
	}
	return stdout
}

// unthrottled drops the rate caps and the one-ledger batches.
func unthrottled(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--read-rate", "--rate", "--batch":
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// assertRunsSettled: after recovery no run of the journal is half-applied.
func assertRunsSettled(t *testing.T, stores []string) {
	t.Helper()
	var journal struct {
		Runs []struct {
			RunID string `json:"run"`
			State string `json:"state"`
		} `json:"runs"`
	}
	out := mustBin(t, 0, append(stores, "--json", "journal", "list")...)
	if err := json.Unmarshal([]byte(out), &journal); err != nil {
		t.Fatal(err)
	}
	for _, run := range journal.Runs {
		if run.State != "committed" && run.State != "rolled-back" && run.State != "refused" {
			t.Errorf("run %s is %s after recovery", run.RunID, run.State)
		}
	}
}

// snapshotState keeps a copy of the server's data and of the data dir (its
// ledgers and journal) and returns what puts both back: the stopped server's
// files replaced, then the server started on them.
func snapshotState(t *testing.T, srv *liveStore, dir string) (restore func()) {
	t.Helper()
	keep := t.TempDir()
	srv.stop()
	testutil.CopyDir(t, srv.dataDir, filepath.Join(keep, "server"))
	testutil.CopyDir(t, dir, filepath.Join(keep, "dir"))
	srv.restart()
	return func() {
		t.Helper()
		srv.stop()
		for _, d := range [][2]string{{"server", srv.dataDir}, {"dir", dir}} {
			if err := os.RemoveAll(d[1]); err != nil {
				t.Fatal(err)
			}
			testutil.CopyDir(t, filepath.Join(keep, d[0]), d[1])
		}
		srv.restart()
	}
}

// treeDigest names every node with the hash of its value, in path order.
func treeDigest(tree map[string][]byte) string {
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		sum := sha256.Sum256(tree[p])
		fmt.Fprintf(&b, "%s %s\n", p, hex.EncodeToString(sum[:8]))
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// lineDiff lists the lines only one of want and got has (at most 20 each).
func lineDiff(want, got string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var b strings.Builder
	for _, side := range []struct {
		sign     string
		from, in map[string]int
	}{{"-", w, g}, {"+", g, w}} {
		n := 0
		for _, l := range strings.Split(map[string]string{"-": want, "+": got}[side.sign], "\n") {
			if side.from[l] > side.in[l] && n < 20 {
				fmt.Fprintf(&b, "%s %s\n", side.sign, l)
				n++
			}
		}
	}
	return b.String()
}
