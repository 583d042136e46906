//go:build !race

package etcddb_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/etcddb"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// The memory test runs each open in a child process of this test binary, which
// these variables steer: the db to open, and "spill" or "memory".
const (
	memChildDir  = "LEDGERMEDIC_ETCDDB_MEM_CHILD"
	memChildMode = "LEDGERMEDIC_ETCDDB_MEM_MODE"
	// memDirEnv names dbs (comma-separated) to measure instead of the
	// generated ones, as docs/benchmarks.md does at 100k and 1M topics.
	memDirEnv = "LEDGERMEDIC_ETCDDB_MEMDBS"
)

// TestOpenWalkMemoryFlat: open + walk + Get of a db of 4N keys peaks at about
// the memory of one of N, when read onto disk (with a small sort budget and
// the mmap's pages dropped every MB, so that both sizes sort through runs on
// disk and pass drops, as large dbs do). The same two dbs held
// in memory do grow (the mmap's pages stay resident), which shows the measure
// can tell.
// Not built with -race: the detector's instrumentation multiplies memory.
func TestOpenWalkMemoryFlat(t *testing.T) {
	if dir := os.Getenv(memChildDir); dir != "" {
		memChild(t, dir, os.Getenv(memChildMode))
		return
	}
	if dirs := os.Getenv(memDirEnv); dirs != "" {
		for _, d := range strings.Split(dirs, ",") {
			peak, out := runMemChild(t, d, "")
			t.Logf("%s: peak RSS %d MB: %s", d, peak>>20, out)
		}
		return
	}
	const n = 25_000
	small, big := filepath.Join(t.TempDir(), "small", "db"), filepath.Join(t.TempDir(), "big", "db")
	writeMemDB(t, small, n)
	writeMemDB(t, big, 4*n)
	peaks := map[string][2]int64{}
	for _, mode := range []string{"spill", "memory"} {
		s, sout := runMemChild(t, small, mode)
		b, bout := runMemChild(t, big, mode)
		t.Logf("%s: %d nodes: peak RSS %d MB (%s); %d nodes: %d MB (%s)", mode, n, s>>20, sout, 4*n, b>>20, bout)
		peaks[mode] = [2]int64{s, b}
	}
	if s, b := peaks["spill"][0], peaks["spill"][1]; b > s+s/4 {
		t.Errorf("read onto disk: %d MB for 4N nodes, %d MB for N: want at most 1.25x", b>>20, s>>20)
	}
	if s, b := peaks["memory"][0], peaks["memory"][1]; b < s+s/2 {
		t.Errorf("held in memory: %d MB for 4N nodes, %d MB for N: the measure does not see the growth", b>>20, s>>20)
	}
}

// runMemChild opens dir in a child process and returns the peak RSS it
// reported and what it printed of its walk.
func runMemChild(t *testing.T, dir, mode string) (int64, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenWalkMemoryFlat$")
	cmd.Env = append(os.Environ(), memChildDir+"="+dir, memChildMode+"="+mode)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child on %s: %v\n%s", dir, err, out)
	}
	line, peak := "", int64(0)
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "walked ") {
			line = l
			_, err = fmt.Sscanf(l[strings.LastIndex(l, "peak RSS "):], "peak RSS %d", &peak)
		}
	}
	if line == "" || err != nil || peak <= 0 {
		t.Fatalf("child on %s said nothing of its walk and peak (%v):\n%s", dir, err, out)
	}
	return peak, line
}

// memChild opens the db dir, walks every node, then reads every 1000th node again
// with Get, and prints what it did.
func memChild(t *testing.T, dir, mode string) {
	switch mode {
	case "spill":
		etcddb.SetSpillAbove(-1)
		etcddb.SetSortBudget(4 << 20)
		etcddb.SetDropEvery(1 << 20)
	case "memory":
		etcddb.SetSpillAbove(1 << 62)
	}
	start := time.Now()
	u, err := store.ParseMetadataURL("etcd-db:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := etcddb.Open(u, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()
	opened := time.Since(start)
	nodes, size := 0, 0
	var sample []string
	err = mb.Walk(context.Background(), "", func(n store.Node) error {
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
	fmt.Printf("walked %d nodes (%d MB of values) in %v (open %v), then %d Gets; peak RSS %d\n",
		nodes, size>>20, time.Since(start).Round(time.Millisecond), opened.Round(time.Millisecond), len(sample), rusage.PeakRSS())
}

// writeMemDB writes a db of about keys Pulsar-like keys in etcd's layout: each
// written once, a tenth rewritten, a fiftieth deleted.
func writeMemDB(t *testing.T, file string, keys int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	var revs []layoutRev
	for i := range keys {
		p := fmt.Sprintf("/managed-ledgers/public/default/persistent/topic-%07d", (i*7919)%keys)
		if i%4 != 0 {
			p = fmt.Sprintf("/ledgers/00/%04d/L%04d", i/10000, i%10000)
		}
		v := make([]byte, 60+i%200)
		for j := range v {
			v[j] = byte(i + j)
		}
		revs = append(revs, layoutRev{path: p, version: 1, value: v})
		if i%10 == 0 {
			revs = append(revs, layoutRev{path: p, version: 2, value: v[:len(v)/2]})
		}
		if i%50 == 0 {
			revs = append(revs, layoutRev{path: p, tomb: true})
		}
	}
	if err := writeEtcdLayout(file, revs); err != nil {
		t.Fatal(err)
	}
}
