package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

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

// verifyTables verifies each table in child processes, one per CPU, each taking
// every n-th table (the store's reading is CPU-bound: block decompression and
// checksums). It returns a result per table id. A child that dies marks the
// table it was verifying as damaged and a new child goes on with the rest.
func verifyTables(checks []tableCheck) (map[uint64]tableResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("verify tables: cannot find the running binary to verify in a child process: %w", err)
	}
	n := min(runtime.GOMAXPROCS(0), len(checks))
	results := map[uint64]tableResult{}
	var mu sync.Mutex
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		var share []tableCheck
		for i := w; i < len(checks); i += n {
			share = append(share, checks[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := verifyShare(exe, share)
			mu.Lock()
			defer mu.Unlock()
			errs[w] = err
			for id, r := range res {
				results[id] = r
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}

// verifyShare runs children over todo until every table has a result.
func verifyShare(exe string, todo []tableCheck) (map[uint64]tableResult, error) {
	results := map[uint64]tableResult{}
	for len(todo) > 0 {
		inflight, err := runVerifyChild(exe, todo, results)
		if err != nil {
			return nil, err
		}
		if inflight == nil {
			break
		}
		next := todo[:0:0]
		for _, c := range todo {
			if _, done := results[c.ID]; !done {
				next = append(next, c)
			}
		}
		todo = next
	}
	return results, nil
}

// runVerifyChild runs one child over checks, filling results. It returns the
// check the child was working on when it died, or nil when it finished.
func runVerifyChild(exe string, checks []tableCheck, results map[uint64]tableResult) (*tableCheck, error) {
	req, err := json.Marshal(checks)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), VerifyChildEnv+"=1")
	// A child outliving a killed parent would keep reading the store for nothing.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("verify tables: start %s: %w", exe, err)
	}
	var cur *tableResult
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r tableResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // not ours (a stray line); the stage protocol tells what is missing
		}
		switch r.Stage {
		case "start", "opened":
			cur = &r
		case "done":
			results[r.ID] = r
			cur = nil
		}
	}
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if cur == nil {
		if werr != nil && len(results) == 0 {
			return nil, fmt.Errorf("verify tables: child process failed before verifying anything: %v: %s", werr, lastLine(stderr.String()))
		}
		if werr != nil {
			// It died between tables: the rest are retried.
			for _, c := range checks {
				if _, ok := results[c.ID]; !ok {
					return &c, nil
				}
			}
		}
		return nil, nil
	}
	crashed := *cur
	crashed.Stage = "done"
	what := "reading its index"
	if cur.Stage == "opened" {
		what = "verifying its blocks"
	}
	crashed.Problem = fmt.Sprintf("Badger's table reader crashed while %s (%v): %s", what, werr, lastLine(stderr.String()))
	results[cur.ID] = crashed
	for _, c := range checks {
		if c.ID == cur.ID {
			return &c, nil
		}
	}
	return nil, fmt.Errorf("verify tables: child reported unknown table %d", cur.ID)
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

// verifyChildMain is the child: it reads the checks from in and writes a "start",
// an "opened" and a "done" line per table to out, flushing each, so the parent
// knows which table a crash belongs to.
func verifyChildMain(in io.Reader, out io.Writer) int {
	// A damaged table can make Badger allocate absurd sizes; die early instead of swapping.
	debug.SetMemoryLimit(2 << 30)
	var checks []tableCheck
	if err := json.NewDecoder(in).Decode(&checks); err != nil {
		fmt.Fprintln(os.Stderr, "verify child: bad request:", err)
		return 2
	}
	enc := json.NewEncoder(out)
	for _, c := range checks {
		_ = enc.Encode(tableResult{ID: c.ID, Stage: "start"})
		r := verifyTableFile(c, func(opened tableResult) { _ = enc.Encode(opened) })
		r.ID, r.Stage, r.Problem = c.ID, "done", oneLine(r.Problem)
		_ = enc.Encode(r)
	}
	return 0
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
