package testutil

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

// The real BookKeeper 4.17.4 bookie and Java client (../shared/bookkeeper/README.md):
// the `bk` script runs either. LEDGERMEDIC_BK names another copy of the script.
const bkEnv = "LEDGERMEDIC_BK"

// BKScript returns the path of the bk script: $LEDGERMEDIC_BK, else
// <repo root>/../shared/bookkeeper/bk; "" when neither exists.
func BKScript() string {
	if p := os.Getenv(bkEnv); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	// this file is <repo>/testutil/bookkeeper.go
	p := filepath.Join(filepath.Dir(file), "..", "..", "shared", "bookkeeper", "bk")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	p, _ = filepath.Abs(p)
	return p
}

// BookKeeperAvailable reports whether the bk script, java and ZooKeeper are there.
func BookKeeperAvailable() bool {
	return BKScript() != "" && ZooKeeperAvailable()
}

// SkipWithoutBookKeeper skips the test when the bk script, java or ZooKeeper is
// missing, except when CI=true: CI installs them, so there their absence is a failure.
func SkipWithoutBookKeeper(t testing.TB) {
	t.Helper()
	if BookKeeperAvailable() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("BookKeeper is required in CI: need java, %s and the bk script (%s or ../shared/bookkeeper/bk)", ZKJar, bkEnv)
	}
	t.Skipf("BookKeeper not available (need java, %s and the bk script: %s or ../shared/bookkeeper/bk)", ZKJar, bkEnv)
}

// BKCluster is a ZooKeeper and the bookies registered in it, all started by a test.
type BKCluster struct {
	ZK      *ZKServer
	Root    string // the ledgers root, /ledgers
	Bookies []*Bookie
	script  string
	t       testing.TB
}

// Bookie is one bookie server a test started (bk bookie).
type Bookie struct {
	ID   string // bookie id: 127.0.0.1:port
	Port int
	Dir  string
	serverProcess

	c       *BKCluster
	storage string
}

// BKOptions tune StartBookKeeper.
type BKOptions struct {
	Bookies int // 0: 3
	// Storage per bookie, cycled: "sorted" or "interleaved" (nil: all sorted).
	Storage []string
}

// StartBookKeeper starts a ZooKeeper, formats /ledgers in it (bk init-cluster)
// and starts the bookies on free loopback ports in temp dirs, returning when
// `bk tool bookies` lists every one as writable. Everything is stopped by PID at
// t.Cleanup.
func StartBookKeeper(t testing.TB, opts BKOptions) *BKCluster {
	t.Helper()
	SkipWithoutBookKeeper(t)
	zk := StartZooKeeper(t, ZKOptions{SnapCount: -1})
	c := &BKCluster{ZK: zk, Root: "/ledgers", script: BKScript(), t: t}
	if _, err := c.Tool("init-cluster"); err != nil {
		t.Fatalf("bk init-cluster: %v", err)
	}
	n := opts.Bookies
	if n == 0 {
		n = 3
	}
	base := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		port, err := freePort()
		if err != nil {
			t.Fatalf("bookie: free port: %v", err)
		}
		storage := "sorted"
		if len(opts.Storage) > 0 {
			storage = opts.Storage[i%len(opts.Storage)]
		}
		b := &Bookie{ID: fmt.Sprintf("127.0.0.1:%d", port), Port: port, Dir: filepath.Join(base, fmt.Sprintf("b%d", i+1)),
			serverProcess: serverProcess{name: "bookie", timeout: 60 * time.Second}, c: c, storage: storage}
		c.Bookies = append(c.Bookies, b)
		t.Cleanup(b.Stop)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.start()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("bookie %s: %v", c.Bookies[i].ID, err)
		}
	}
	if err := c.WaitBookies(n, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

func (b *Bookie) start() error {
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return err
	}
	argv := []string{b.c.script, "bookie", "--zk", b.c.ZK.Addr, "--port", fmt.Sprint(b.Port), "--dir", b.Dir,
		"--storage", b.storage}
	// The bookie logs "Started component bookie-server" even when it could not
	// register and shut its server down, so ready also needs its registration.
	return b.launch(b.Dir, argv, func() bool {
		s, _ := os.ReadFile(b.LogFile)
		if !bytes.Contains(s, []byte("Started component bookie-server")) {
			return false
		}
		ok, _ := b.registered()
		return ok
	})
}

// registered reports whether the bookie's ephemeral registration node exists
// (BookKeeper's ZKRegistrationManager: <root>/available/<id>).
func (b *Bookie) registered() (bool, error) {
	mu, err := store.ParseMetadataURL("zk://" + b.c.ZK.Addr)
	if err != nil {
		return false, err
	}
	ms, err := datadir.OpenMetadata(mu, store.Options{ReadOnly: true})
	if err != nil {
		return false, err
	}
	defer ms.Close()
	_, err = ms.Get(b.c.Root + "/available/" + b.ID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Restart starts a stopped bookie again on the same dir and port (its cookie
// holds both) and waits until it serves. After a Kill it first waits for the
// old process's registration to expire with its ZooKeeper session: a bookie
// started while it is there waits one session timeout for it, then gives up
// registering and stops serving (ZKRegistrationManager.checkRegNodeAndWaitExpired).
func (b *Bookie) Restart() {
	b.c.t.Helper()
	b.Stop()
	if err := b.waitUnregistered(30 * time.Second); err != nil {
		b.c.t.Fatalf("bookie %s restart: %v", b.ID, err)
	}
	if err := b.start(); err != nil {
		b.c.t.Fatalf("bookie %s restart: %v", b.ID, err)
	}
}

func (b *Bookie) waitUnregistered(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := b.registered()
		if err == nil && !ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("registration %s/available/%s still there after %v (%v)", b.c.Root, b.ID, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WaitBookies waits until `bk tool bookies` lists at least n writable bookies.
func (c *BKCluster) WaitBookies(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		out, err := c.Tool("bookies")
		if err == nil && len(out) > 0 {
			var v struct {
				Writable []string `json:"writable"`
			}
			if json.Unmarshal(out[0], &v) == nil && len(v.Writable) >= n {
				return nil
			}
		}
		last = fmt.Sprint(err, " ", outString(out))
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("bookies not registered after %v: %s", timeout, last)
}

// Tool runs `bk tool CMD --zk ZK ARGS...` and returns its JSON lines. A non-zero
// exit is an error carrying the tool's {"error"} line and stderr.
func (c *BKCluster) Tool(cmd string, args ...string) ([]json.RawMessage, error) {
	return c.ToolInput(nil, cmd, args...)
}

// ToolInput is Tool with stdin.
func (c *BKCluster) ToolInput(stdin io.Reader, cmd string, args ...string) ([]json.RawMessage, error) {
	argv := append([]string{"tool", cmd, "--zk", c.ZK.Addr}, args...)
	x := exec.Command(c.script, argv...)
	x.Stdin = stdin
	var stdout, stderr bytes.Buffer
	x.Stdout, x.Stderr = &stdout, &stderr
	err := x.Run()
	lines := jsonLines(stdout.Bytes())
	if err != nil {
		return lines, fmt.Errorf("bk tool %s: %w: %s %s", cmd, err, outString(lines), lastLines(stderr.String(), 5))
	}
	return lines, nil
}

func jsonLines(b []byte) []json.RawMessage {
	var out []json.RawMessage
	for _, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] == '{' {
			out = append(out, json.RawMessage(bytes.Clone(l)))
		}
	}
	return out
}

func outString(lines []json.RawMessage) string {
	var s []string
	for _, l := range lines {
		s = append(s, string(l))
	}
	return strings.Join(s, " ")
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// BKWrite is what `bk tool write` wrote.
type BKWrite struct {
	LedgerID    int64      `json:"ledger_id"`
	Entries     int64      `json:"entries"`
	LastEntryID int64      `json:"last_entry_id"`
	Closed      bool       `json:"closed"`
	Ensemble    []string   `json:"ensemble"`
	Open        bool       `json:"open"`
	Payloads    [][]byte   `json:"-"`
	Spec        BKWriteArg `json:"-"`
}

// BKWriteArg are the settings of a ledger `bk tool write` creates.
type BKWriteArg struct {
	Ensemble, WriteQuorum, AckQuorum int    // 0: 1/1/1
	Digest                           string // CRC32, CRC32C, MAC, DUMMY ("": CRC32C)
	Password                         string
	Meta                             map[string]string
	NoClose                          bool
}

func (a BKWriteArg) args() []string {
	e, w, q, d := max(a.Ensemble, 1), max(a.WriteQuorum, 1), max(a.AckQuorum, 1), a.Digest
	if d == "" {
		d = "CRC32C"
	}
	args := []string{"--ensemble", fmt.Sprint(e), "--write-quorum", fmt.Sprint(w), "--ack-quorum", fmt.Sprint(q),
		"--digest", d, "--password", a.Password}
	for k, v := range a.Meta {
		args = append(args, "--meta", k+"="+v)
	}
	if a.NoClose {
		args = append(args, "--no-close")
	}
	return args
}

// WriteLedger writes a ledger of the given entries with the real Java client
// (bk tool write). Entries after the last empty one go through --entries-file
// (the tool reads it after the --entry-hex values, and skips blank lines), so a
// 1 MiB entry does not meet exec's argument limit.
func (c *BKCluster) WriteLedger(a BKWriteArg, entries [][]byte) BKWrite {
	c.t.Helper()
	args := a.args()
	k := 0
	for i, e := range entries {
		if len(e) == 0 {
			k = i + 1
		}
	}
	for _, e := range entries[:k] {
		if len(e) > 32<<10 {
			c.t.Fatalf("bk tool write: an entry of %d bytes before an empty one does not fit the command line", len(e))
		}
		args = append(args, "--entry-hex", hex.EncodeToString(e))
	}
	if k < len(entries) {
		f, err := os.CreateTemp(c.t.TempDir(), "entries-*.hex")
		if err != nil {
			c.t.Fatal(err)
		}
		for _, e := range entries[k:] {
			fmt.Fprintln(f, hex.EncodeToString(e))
		}
		if err := f.Close(); err != nil {
			c.t.Fatal(err)
		}
		args = append(args, "--entries-file", f.Name())
	}
	lines, err := c.Tool("write", args...)
	if err != nil {
		c.t.Fatalf("bk tool write: %v", err)
	}
	var w BKWrite
	if len(lines) == 0 || json.Unmarshal(lines[len(lines)-1], &w) != nil {
		c.t.Fatalf("bk tool write: no result: %s", outString(lines))
	}
	w.Payloads, w.Spec = entries, a
	return w
}

// BKRead is what `bk tool read` returned.
type BKRead struct {
	Entries  [][]byte
	LAC      int64           `json:"last_add_confirmed"`
	Recovery bool            `json:"recovery_open"`
	Metadata json.RawMessage `json:"metadata"`
}

// ReadLedger reads a ledger with the Java client; noRecovery opens it read-only
// (no fencing), else with recovery as a broker does.
func (c *BKCluster) ReadLedger(ledgerID int64, password string, noRecovery bool) (BKRead, error) {
	args := []string{"--ledger", fmt.Sprint(ledgerID), "--password", password}
	if noRecovery {
		args = append(args, "--no-recovery")
	}
	lines, err := c.Tool("read", args...)
	if err != nil {
		return BKRead{}, err
	}
	var r BKRead
	for _, l := range lines {
		var e struct {
			EntryID *int64 `json:"entry_id"`
			Payload string `json:"payload_hex"`
		}
		if err := json.Unmarshal(l, &e); err != nil {
			return BKRead{}, err
		}
		if e.EntryID != nil {
			b, err := hex.DecodeString(e.Payload)
			if err != nil {
				return BKRead{}, err
			}
			r.Entries = append(r.Entries, b)
			continue
		}
		if err := json.Unmarshal(l, &r); err != nil {
			return BKRead{}, err
		}
	}
	return r, nil
}

// BKLedger is one line of `bk tool list`.
type BKLedger struct {
	LedgerID int64             `json:"ledger_id"`
	State    string            `json:"state"`
	Custom   map[string]string `json:"custom_metadata"`
}

// ListLedgers lists the cluster's ledgers with the Java client.
func (c *BKCluster) ListLedgers() []BKLedger {
	c.t.Helper()
	lines, err := c.Tool("list")
	if err != nil {
		c.t.Fatalf("bk tool list: %v", err)
	}
	var out []BKLedger
	for _, l := range lines {
		var v BKLedger
		if err := json.Unmarshal(l, &v); err != nil {
			c.t.Fatalf("bk tool list: %s: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

// HeldWriter is a `bk tool write --hold`: a Java writer that keeps its ledger open
// and adds one entry per Add.
type HeldWriter struct {
	LedgerID int64
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Scanner
	stderr   bytes.Buffer
	t        testing.TB
}

// HoldWriter starts a writer that adds entries and keeps its ledger open. It is
// ended (stdin closed, then killed by PID) at t.Cleanup.
func (c *BKCluster) HoldWriter(a BKWriteArg, first [][]byte) *HeldWriter {
	c.t.Helper()
	args := append([]string{"tool", "write", "--zk", c.ZK.Addr}, a.args()...)
	for _, e := range first {
		args = append(args, "--entry-hex", hex.EncodeToString(e))
	}
	args = append(args, "--hold")
	h := &HeldWriter{cmd: exec.Command(c.script, args...), t: c.t}
	h.cmd.Stderr = &h.stderr
	var err error
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		c.t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	h.out = bufio.NewScanner(stdout)
	if err := h.cmd.Start(); err != nil {
		c.t.Fatalf("bk tool write --hold: %v", err)
	}
	c.t.Cleanup(h.Close)
	var v struct {
		LedgerID int64 `json:"ledger_id"`
		Open     bool  `json:"open"`
	}
	if err := h.next(&v); err != nil || !v.Open {
		c.t.Fatalf("bk tool write --hold: %v (open %v) %s", err, v.Open, lastLines(h.stderr.String(), 5))
	}
	h.LedgerID = v.LedgerID
	return h
}

func (h *HeldWriter) next(v any) error {
	for h.out.Scan() {
		l := bytes.TrimSpace(h.out.Bytes())
		if len(l) > 0 && l[0] == '{' {
			return json.Unmarshal(l, v)
		}
	}
	if err := h.out.Err(); err != nil {
		return err
	}
	return io.EOF
}

// Add adds one entry through the held writer and returns its entry id, or the
// tool's error (for example the ledger was fenced).
func (h *HeldWriter) Add(payload []byte) (int64, error) {
	if _, err := fmt.Fprintln(h.in, hex.EncodeToString(payload)); err != nil {
		return 0, err
	}
	var v struct {
		EntryID *int64 `json:"entry_id"`
		Error   string `json:"error"`
		Fenced  bool   `json:"fenced"`
	}
	if err := h.next(&v); err != nil {
		return 0, fmt.Errorf("held writer: %w %s", err, lastLines(h.stderr.String(), 5))
	}
	if v.EntryID == nil {
		return 0, fmt.Errorf("held writer: add failed: %s (fenced %v)", v.Error, v.Fenced)
	}
	return *v.EntryID, nil
}

// Close ends the writer: stdin closed (the tool closes the ledger unless
// --no-close), then killed by PID if it has not exited within 20 s.
func (h *HeldWriter) Close() {
	if h.cmd == nil || h.cmd.Process == nil {
		return
	}
	_ = h.in.Close()
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
	}
	h.cmd = nil
}

// Listen is a loopback listener on a free port (for fake servers in tests).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Bookie returns the cluster's bookie with the id, or nil.
func (c *BKCluster) Bookie(id string) *Bookie {
	for _, b := range c.Bookies {
		if b.ID == id {
			return b
		}
	}
	return nil
}

// FlipInEntryLog stops the bookie by PID (SIGTERM: its storage is flushed to
// its entry logs), flips one bit in the middle of payload wherever it lies in
// the bookie's entry logs (DIR/ledgers/current/*.log, never the journal), and
// restarts it on the same dir and port. The bookie serves the changed bytes;
// their digest no longer verifies.
func (b *Bookie) FlipInEntryLog(payload []byte) {
	t := b.c.t
	t.Helper()
	b.Stop()
	logs, _ := filepath.Glob(filepath.Join(b.Dir, "ledgers", "current", "*.log"))
	flipped := false
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(data, payload)
		if i < 0 {
			continue
		}
		data[i+len(payload)/2] ^= 0x01
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		flipped = true
	}
	if !flipped {
		t.Fatalf("bookie %s: the payload is in none of its entry logs %v", b.ID, logs)
	}
	b.Restart()
}
