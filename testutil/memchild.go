package testutil

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// MemoryFlat measures what opening a metadata store and reading all of it
// takes in memory, each open in a child process of the test binary (a fresh
// heap, its own peak), for tests that hold an offline reader's memory flat.
type MemoryFlat struct {
	// Test is the test that runs Check; the children run it again.
	Test string
	// Env prefixes the environment variables that steer the children
	// (ENV_URL, ENV_MODE) and that name stores to measure instead (ENV_URLS,
	// comma-separated: docs/benchmarks.md's figures at 100k and 1M topics).
	Env string
	// Setup runs in the child before the open: mode "spill" reads the store
	// onto disk, "memory" holds it, "" leaves the backend's own choice.
	Setup func(mode string)
}

// Check is the whole test: in a child, it opens, reads and reports; with
// ENV_URLS set, it measures those stores and logs their figures; else it
// measures a store of n nodes and one of 4n, which write makes in a new dir and
// names by URL: read onto disk, the bigger must peak at most 1.25 times the
// smaller; held in memory, it must grow by half at least (else the measure
// could not tell).
func (m MemoryFlat) Check(t *testing.T, n int, write func(dir string, nodes int) string) {
	if raw := os.Getenv(m.Env + "_URL"); raw != "" {
		m.child(t, raw, os.Getenv(m.Env+"_MODE"))
		return
	}
	if urls := os.Getenv(m.Env + "_URLS"); urls != "" {
		for _, raw := range strings.Split(urls, ",") {
			peak, line := m.run(t, raw, "")
			t.Logf("%s: peak RSS %d MB: %s", raw, peak>>20, line)
		}
		return
	}
	s, b := write(t.TempDir(), n), write(t.TempDir(), 4*n)
	peaks := map[string][2]int64{}
	for _, mode := range []string{"spill", "memory"} {
		sp, sline := m.run(t, s, mode)
		bp, bline := m.run(t, b, mode)
		t.Logf("%s: N: peak RSS %d MB (%s); 4N: %d MB (%s)", mode, sp>>20, sline, bp>>20, bline)
		peaks[mode] = [2]int64{sp, bp}
	}
	if s, b := peaks["spill"][0], peaks["spill"][1]; b > s+s/4 {
		t.Errorf("read onto disk: %d MB for 4N nodes, %d MB for N: want at most 1.25x", b>>20, s>>20)
	}
	if s, b := peaks["memory"][0], peaks["memory"][1]; b < s+s/2 {
		t.Errorf("held in memory: %d MB for 4N nodes, %d MB for N: the measure does not see the growth", b>>20, s>>20)
	}
}

// run opens raw in a child and returns the peak RSS it reported and its line.
func (m MemoryFlat) run(t *testing.T, raw, mode string) (int64, string) {
	t.Helper()
	out, mib := rusage.RunChild(t, m.Test, m.Env+"_URL="+raw, m.Env+"_MODE="+mode)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "walked ") {
			return int64(mib * (1 << 20)), l
		}
	}
	t.Fatalf("child on %s said nothing of its walk:\n%s", raw, out)
	return 0, ""
}

// child opens raw, walks every node, then reads every 1000th node again with
// Get, and prints what it did and its peak RSS.
func (m MemoryFlat) child(t *testing.T, raw, mode string) {
	m.Setup(mode)
	start := time.Now()
	mb := MustOpenMetadata(t, raw, store.Options{ReadOnly: true})
	opened := time.Since(start)
	nodes, size := 0, 0
	var sample []string
	err := mb.Walk(context.Background(), "", func(n store.Node) error {
		if nodes%1000 == 0 {
			sample = append(sample, n.Path)
		}
		nodes, size = nodes+1, size+len(n.Value)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sample {
		if _, err := mb.Get(p); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("walked %d nodes (%d MB of values) in %v (open %v), then %d Gets\n",
		nodes, size>>20, time.Since(start).Round(time.Millisecond), opened.Round(time.Millisecond), len(sample))
	rusage.PrintPeak(t)
}
