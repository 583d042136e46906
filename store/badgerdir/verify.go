package badgerdir

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Table verification runs in a child process: the running binary re-executed with
// VerifyChildEnv set. Badger's table reader ends the process on some damage
// (log.Fatalf in y.Check and y.AssertTrue, panics in goroutines it starts), which no
// recover can catch; in a child, such a crash is a result about one table.
// Every binary that links this package (ledgermedic and test binaries) serves the
// child role from the init below, so no main function needs a hook.
const VerifyChildEnv = "LEDGERMEDIC_VERIFY_CHILD"

func init() {
	if os.Getenv(VerifyChildEnv) == "1" {
		os.Exit(verifyChildMain(os.Stdin, os.Stdout))
	}
}

// tableCheck asks the child to verify one table file.
type tableCheck struct {
	ID   uint64 `json:"id"`
	Path string `json:"path"`
	// Compressions to try, in order: the MANIFEST's for a listed table; for a table
	// the MANIFEST does not list, the store's usual one first, then the others.
	Compressions []uint32 `json:"compressions"`
}

// tableResult is what the child found, one JSON line per stage.
type tableResult struct {
	ID    uint64 `json:"id"`
	Stage string `json:"stage"` // "start", "opened" (key range known), "done"
	// Problem is "" when the table verified.
	Problem     string `json:"problem,omitempty"`
	Smallest    []byte `json:"smallest,omitempty"` // user keys (no Badger version suffix)
	Biggest     []byte `json:"biggest,omitempty"`
	Keys        uint32 `json:"keys,omitempty"`
	Compression uint32 `json:"compression"`
	RangeKnown  bool   `json:"range_known,omitempty"`
}

// minTableSize: a Badger table ends with a 4-byte checksum length, a checksum and a
// 4-byte index length; anything shorter cannot be one (and must not reach Badger,
// whose reader slices without bounds checks).
const minTableSize = 16

// verifyChildHook, when set (by tests, from a package variable's initializer,
// which runs before the child role starts), sees each check before the child
// verifies it: it can end the child the way Badger does on some damage.
var verifyChildHook func(tableCheck)

// verifyChildRuns counts child processes started (tests assert that a cache hit
// starts none).
var verifyChildRuns atomic.Int64

// verifyTables verifies each table in child processes, one per CPU, fed from one
// queue, largest tables first, so uneven table sizes still keep every CPU busy
// (the work is CPU-bound: block decompression and checksums). It returns a result
// per table id. A child that dies marks the table it was verifying as damaged and
// a new child goes on with the rest.
func verifyTables(checks []tableCheck) (map[uint64]tableResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("verify tables: cannot find the running binary to verify in a child process: %w", err)
	}
	queue := make(chan tableCheck, len(checks))
	for _, c := range bySizeDesc(checks) {
		queue <- c
	}
	close(queue)
	n := min(runtime.GOMAXPROCS(0), len(checks))
	results := map[uint64]tableResult{}
	var mu sync.Mutex
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = verifyWorker(exe, queue, func(r tableResult) {
				mu.Lock()
				results[r.ID] = r
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}

// bySizeDesc orders checks largest file first; a file that cannot be stat'ed
// sorts last (the child reports why).
func bySizeDesc(checks []tableCheck) []tableCheck {
	size := make(map[uint64]int64, len(checks))
	for _, c := range checks {
		if fi, err := os.Stat(c.Path); err == nil {
			size[c.ID] = fi.Size()
		}
	}
	out := slices.Clone(checks)
	slices.SortStableFunc(out, func(a, b tableCheck) int { return cmp.Compare(size[b.ID], size[a.ID]) })
	return out
}

// verifyWorker takes checks from queue and hands them to a child process,
// starting a new child whenever the last one died, until the queue is empty.
func verifyWorker(exe string, queue <-chan tableCheck, done func(tableResult)) error {
	w := &verifyFeed{queue: queue}
	for w.more() {
		ch, err := startVerifyChild(exe)
		if err != nil {
			return err
		}
		if err := ch.run(w, done); err != nil {
			return err
		}
	}
	return nil
}

// verifyFeed is one worker's supply of checks: those a dead child left
// unverified first, then the shared queue.
type verifyFeed struct {
	queue  <-chan tableCheck
	retry  []tableCheck
	closed bool
}

func (f *verifyFeed) more() bool { return len(f.retry) > 0 || !f.closed }

func (f *verifyFeed) next() (tableCheck, bool) {
	if len(f.retry) > 0 {
		c := f.retry[0]
		f.retry = f.retry[1:]
		return c, true
	}
	if f.closed {
		return tableCheck{}, false
	}
	c, ok := <-f.queue
	f.closed = !ok
	return c, ok
}

// verifyAhead is how many checks a child is sent before it finishes the current
// one: it never waits for the parent between tables (on a busy machine each
// round trip can cost a scheduler slice).
const verifyAhead = 4

// verifyChild is one running child: checks go in as JSON lines on its stdin,
// results come back as JSON lines on its stdout.
type verifyChild struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
}

func startVerifyChild(exe string) (*verifyChild, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), VerifyChildEnv+"=1")
	cmd.SysProcAttr = verifyChildAttr()
	ch := &verifyChild{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = ch.stderr
	var err error
	if ch.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("verify tables: start %s: %w", exe, err)
	}
	verifyChildRuns.Add(1)
	ch.out = bufio.NewScanner(out)
	ch.out.Buffer(make([]byte, 64<<10), 16<<20)
	return ch, nil
}

// run feeds the child checks from f, keeping verifyAhead in flight, and reports
// each result to done, until f is empty or the child dies. When it dies while
// verifying a table, that table's result says the reader crashed, and at which
// stage; the checks it had not started go back to f for the next child.
func (ch *verifyChild) run(f *verifyFeed, done func(tableResult)) error {
	var pending []tableCheck // sent, not done, in the order the child takes them
	var cur *tableResult     // the table the child said it is working on
	progress, alive := false, true
	fill := func() {
		for alive && len(pending) < verifyAhead {
			c, ok := f.next()
			if !ok {
				_ = ch.in.Close() // the child exits after the last one
				return
			}
			pending = append(pending, c)
			req, _ := json.Marshal(c)
			if _, err := ch.in.Write(append(req, '\n')); err != nil {
				alive = false // it died: the read below finds out how
			}
		}
	}
	fill()
	for len(pending) > 0 && ch.out.Scan() {
		var got tableResult
		if json.Unmarshal(ch.out.Bytes(), &got) != nil || got.ID != pending[0].ID {
			continue // not ours (a stray line); the stage protocol tells what is missing
		}
		if got.Stage != "done" {
			cur = &got
			continue
		}
		done(got)
		progress, cur, pending = true, nil, pending[1:]
		fill()
	}
	if len(pending) == 0 {
		_ = ch.wait() // every table has its result; how the child ended adds nothing
		return nil
	}
	werr := ch.wait()
	if cur == nil {
		if !progress {
			return fmt.Errorf("verify tables: child process failed before verifying anything: %v: %s", werr, lastLine(ch.stderr.String()))
		}
		// It died between tables: the next child takes them all.
		f.retry = append(pending, f.retry...)
		return nil
	}
	what := "reading its index"
	if cur.Stage == "opened" {
		what = "verifying its blocks"
	}
	crashed := *cur
	crashed.Stage = "done"
	crashed.Problem = fmt.Sprintf("Badger's table reader crashed while %s (%v): %s", what, werr, lastLine(ch.stderr.String()))
	done(crashed)
	f.retry = append(pending[1:], f.retry...)
	return nil
}

// wait reaps the child once its pipes are done with.
func (ch *verifyChild) wait() error {
	_ = ch.in.Close()
	return ch.cmd.Wait()
}

// lastLine is the last non-empty line of s (the fatal message of a crash), shortened.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "goroutine ") || strings.HasPrefix(l, "/") || strings.HasPrefix(l, "\t") {
			continue
		}
		if len(l) > 200 {
			l = l[:200] + "..."
		}
		return l
	}
	return "no message"
}

// oneLine joins a multi-line message (Badger's crash reports) into one short line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// verifyChildMain is the child: it reads checks, one JSON line each, from in and
// writes a "start", an "opened" and a "done" line per table to out, so the parent
// knows which table and stage a crash belongs to. It ends at the end of in.
func verifyChildMain(in io.Reader, out io.Writer) int {
	// Verification allocates a fresh buffer for every decompressed block and keeps
	// little alive: collecting less often saves about a sixth of the CPU (measured
	// in docs/reliability.md). Each table's soft memory limit (verifyMemoryLimit)
	// bounds the heap that pacing would let grow to five times the live one.
	debug.SetGCPercent(400)
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		var c tableCheck
		if err := dec.Decode(&c); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "verify child: bad request:", err)
			return 2
		}
		_ = enc.Encode(tableResult{ID: c.ID, Stage: "start"})
		if verifyChildHook != nil {
			verifyChildHook(c)
		}
		// The limit is the child's own, set here rather than in verifyTableFile,
		// which must not change the memory limit of a process that calls it.
		if fi, err := os.Stat(c.Path); err == nil {
			debug.SetMemoryLimit(verifyMemoryLimit(fi.Size()))
		}
		r := verifyTableFile(c, func(opened tableResult) { _ = enc.Encode(opened) })
		r.ID, r.Stage, r.Problem = c.ID, "done", oneLine(r.Problem)
		_ = enc.Encode(r)
	}
}

// verifyMemoryLimit is the child's soft Go memory limit while it verifies a table
// of size bytes. At GOGC 400 alone the heap reached 90-115 MB verifying the 4 MB
// tables of a 1M-ledger store, more than the back-fill that started the child;
// what a table's verification keeps alive (its index, a block) is a fraction of the
// table, so twice its size over a fixed 32 MB leaves the GC room to run rarely.
// The limit is soft: a table that needs more gets it (the GC then runs more
// often), and an allocation the machine cannot back still ends only the child.
func verifyMemoryLimit(size int64) int64 {
	return 32<<20 + 2*size
}

// verifyTableFile opens one table with each compression in turn until its blocks
// verify. opened is told the key range as soon as the index is read.
func verifyTableFile(c tableCheck, opened func(tableResult)) tableResult {
	fi, err := os.Stat(c.Path)
	if err != nil {
		return tableResult{Problem: err.Error()}
	}
	if fi.Size() < minTableSize {
		return tableResult{Problem: fmt.Sprintf("%d bytes long: too short to be a table", fi.Size())}
	}
	var first tableResult
	for i, comp := range c.Compressions {
		r := verifyTableAs(c, options.CompressionType(comp), opened)
		if r.Problem == "" {
			return r
		}
		if i == 0 {
			first = r
		}
	}
	return first
}

func verifyTableAs(c tableCheck, comp options.CompressionType, opened func(tableResult)) (r tableResult) {
	r.Compression = uint32(comp)
	defer func() {
		if p := recover(); p != nil {
			r.Problem = fmt.Sprintf("Badger's table reader panicked: %v", p)
		}
	}()
	mf, err := z.OpenMmapFile(c.Path, os.O_RDONLY, 0)
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	defer mf.Close(-1)
	t, err := table.OpenTable(mf, table.Options{
		ReadOnly: true, ChkMode: options.NoVerification, BlockSize: 4 << 10, Compression: comp,
	})
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	r.Smallest, r.Biggest = y.ParseKey(t.Smallest()), y.ParseKey(t.Biggest())
	r.Keys, r.RangeKnown = t.KeyCount(), true
	opened(tableResult{ID: c.ID, Stage: "opened", Smallest: r.Smallest, Biggest: r.Biggest, Keys: r.Keys, RangeKnown: true, Compression: r.Compression})
	if err := t.VerifyChecksum(); err != nil {
		r.Problem = err.Error()
		return r
	}
	if bytes.Compare(r.Smallest, r.Biggest) > 0 {
		r.Problem = "smallest key sorts after biggest key"
	}
	return r
}
