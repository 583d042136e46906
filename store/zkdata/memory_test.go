//go:build !race

package zkdata_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/formats/zkdisk"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/zkdata"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// The memory test runs each open in a child process of this test binary, which
// these variables steer: the dataDir to open, and "spill" or "memory".
const (
	memChildDir  = "LEDGERMEDIC_ZKDATA_MEM_CHILD"
	memChildMode = "LEDGERMEDIC_ZKDATA_MEM_MODE"
	// memDirEnv names dataDirs (comma-separated) to measure instead of the
	// generated ones, as docs/benchmarks.md does at 100k and 1M topics.
	memDirEnv = "LEDGERMEDIC_ZKDATA_MEMDIRS"
)

// TestOpenWalkMemoryFlat: open + walk + Get of a dataDir of 4N nodes peaks at
// about the memory of one of N, when read onto disk (with a small sort budget,
// so that both sizes sort through runs on disk, as large dataDirs do). The same
// two dataDirs held in memory do grow, which shows the measure can tell.
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
	const n = 40_000
	small, big := filepath.Join(t.TempDir(), "small"), filepath.Join(t.TempDir(), "big")
	writeMemDataDir(t, small, n)
	writeMemDataDir(t, big, 4*n)
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

// memChild opens dir, walks every node, then reads every 1000th node again
// with Get, and prints what it did.
func memChild(t *testing.T, dir, mode string) {
	switch mode {
	case "spill":
		zkdata.SetSpillAbove(-1)
		zkdata.SetSortBudget(4 << 20)
	case "memory":
		zkdata.SetSpillAbove(1 << 62)
	}
	start := time.Now()
	u, err := store.ParseMetadataURL("zk-data:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := zkdata.Open(u, store.Options{ReadOnly: true})
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

// writeMemDataDir writes a dataDir of about nodes Pulsar-like nodes: a snapshot
// of most of them, and a log that changes and adds some.
func writeMemDataDir(t *testing.T, dataDir string, nodes int) {
	t.Helper()
	dir := filepath.Join(dataDir, "version-2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "snapshot.10"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sw, err := zkdisk.NewSnapshotWriter(f, nil, map[int64][]zkdisk.ACL{1: zkdisk.OpenACL})
	if err != nil {
		t.Fatal(err)
	}
	value := func(i, size int) []byte {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i + j)
		}
		return b
	}
	put := func(p string, data []byte) {
		if err := sw.WriteNode(zkdisk.SnapNode{Path: p, Data: data, ACLRef: 1, Stat: zkdisk.Stat{Czxid: 1, Mzxid: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/", "/managed-ledgers", "/managed-ledgers/public", "/managed-ledgers/public/default", "/managed-ledgers/public/default/persistent", "/ledgers", "/ledgers/00"} {
		put(p, nil)
	}
	topics := nodes / 4
	for i := range topics {
		put(fmt.Sprintf("/managed-ledgers/public/default/persistent/topic-%07d", (i*7919)%topics), value(i, 120+i%180))
	}
	for hi := range (3*topics + 9999) / 10000 {
		d := fmt.Sprintf("/ledgers/00/%04d", hi)
		put(d, nil)
		for lo := range min(10000, 3*topics-hi*10000) {
			put(fmt.Sprintf("%s/L%04d", d, lo), value(lo, 60+lo%120))
		}
	}
	if err := sw.Finish(nil, nil); err != nil {
		t.Fatal(err)
	}
	log := zkdisk.AppendLogHeader(nil)
	for i := range nodes / 100 {
		z := int64(0x11 + i)
		h := zkdisk.TxnHeader{ClientID: 0x100, Zxid: z, Time: 1.7e12, Type: zkdisk.OpSetData}
		var rec zkdisk.Record = &zkdisk.SetDataTxn{Type: zkdisk.OpSetData, Path: fmt.Sprintf("/managed-ledgers/public/default/persistent/topic-%07d", i), Data: value(i, 200), Version: 1}
		if i%2 == 1 {
			h.Type = zkdisk.OpCreate
			rec = &zkdisk.CreateTxn{Type: zkdisk.OpCreate, Path: "/managed-ledgers/public/default/persistent/new-" + strconv.Itoa(i), Data: value(i, 150), ParentCVersion: -1}
		}
		log = zkdisk.AppendLogRecord(log, zkdisk.EncodeTxn(h, rec, nil))
	}
	if err := os.WriteFile(filepath.Join(dir, "log.11"), log, 0o644); err != nil {
		t.Fatal(err)
	}
}
