package zkdisk

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

var benchSnap struct {
	once  sync.Once
	dir   string
	nodes int
	err   error
}

// benchSnapshot synthesises, once per process, a snapshot of a Pulsar-like tree
// of about 200k nodes (managed-ledger and ledger nodes with 60–300 byte values),
// written as ZooKeeper 3.8 writes one (two seals and a digest).
func benchSnapshot(b *testing.B) (string, int) {
	benchSnap.once.Do(func() {
		dir, err := os.MkdirTemp("", "zkdisk-bench-")
		if err != nil {
			benchSnap.err = err
			return
		}
		benchSnap.dir = filepath.Join(dir, "version-2")
		benchSnap.err = writeBenchSnapshot(benchSnap.dir, &benchSnap.nodes)
	})
	if benchSnap.err != nil {
		b.Fatal(benchSnap.err)
	}
	return benchSnap.dir, benchSnap.nodes
}

func writeBenchSnapshot(dir string, count *int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "snapshot.30d40"))
	if err != nil {
		return err
	}
	defer f.Close()
	sw, err := NewSnapshotWriter(f, []Session{{ID: 0x100, TimeoutMs: 30000}}, map[int64][]ACL{1: OpenACL})
	if err != nil {
		return err
	}
	n := 0
	put := func(path string, size int) {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(n + i)
		}
		sw.WriteNode(SnapNode{Path: path, Data: data, ACLRef: 1, Stat: Stat{Czxid: int64(n), Mzxid: int64(n), Ctime: 1.7e12, Mtime: 1.7e12}})
		n++
	}
	// Depth-first pre-order as DataTree.serializeNode writes it: each node, then
	// its children's subtrees, children unsorted like a HashSet.
	for _, p := range []string{"/", "/managed-ledgers", "/managed-ledgers/public", "/managed-ledgers/public/default", "/managed-ledgers/public/default/persistent"} {
		put(p, 0)
	}
	for i := range 100_000 {
		t := fmt.Sprintf("/managed-ledgers/public/default/persistent/topic-%06d", (i*7919)%100_000)
		put(t, 120+i%180)
	}
	put("/ledgers", 0)
	put("/ledgers/00", 0)
	for hi := range 100 {
		d := fmt.Sprintf("/ledgers/00/%04d", (hi*37)%100)
		put(d, 0)
		for lo := range 1000 {
			put(fmt.Sprintf("%s/L%04d", d, (lo*613)%1000), 60+lo%120)
		}
	}
	*count = n
	return sw.Finish(&ZxidDigest{Zxid: 0x30d40, Version: 2, Digest: 1}, nil)
}

// BenchmarkZKDataRead: reading a ~200k-node snapshot, against a bare
// os.ReadFile of the same file measured in the same iterations; x-of-raw is
// (raw read time) / (our time), so 1.0 would be as fast as just reading bytes.
func BenchmarkZKDataRead(b *testing.B) {
	dir, nodes := benchSnapshot(b)
	path := filepath.Join(dir, "snapshot.30d40")
	fi, _ := os.Stat(path)
	b.Logf("benchmark snapshot %s: %d bytes, %d nodes", path, fi.Size(), nodes)
	run := func(b *testing.B, ours func() error) {
		var raw, mine, rawCPU, mineCPU time.Duration
		b.SetBytes(fi.Size())
		for b.Loop() {
			c0, t0 := processCPU(), time.Now()
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
			c1, t1 := processCPU(), time.Now()
			if err := ours(); err != nil {
				b.Fatal(err)
			}
			raw, mine = raw+t1.Sub(t0), mine+time.Since(t1)
			rawCPU, mineCPU = rawCPU+c1-c0, mineCPU+processCPU()-c1
		}
		b.ReportMetric(float64(raw)/float64(mine), "x-of-raw")
		// The same ratio in CPU time (all threads): less swayed by other jobs on a
		// shared machine, and it shows what a second core does for us.
		b.ReportMetric(float64(rawCPU)/float64(mineCPU), "x-of-raw-cpu")
		b.ReportMetric(float64(nodes), "nodes")
	}
	b.Run("stream", func(b *testing.B) {
		run(b, func() error {
			sr, err := OpenSnapshot(path)
			if err != nil {
				return err
			}
			defer sr.Close()
			for {
				if _, err := sr.Next(); err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
			}
		})
	})
	b.Run("tree", func(b *testing.B) {
		run(b, func() error {
			v, err := Load(dir, LoadOptions{})
			if err == nil && v.Tree.Len() != nodes {
				err = fmt.Errorf("tree has %d nodes, want %d", v.Tree.Len(), nodes)
			}
			return err
		})
	})
}

// processCPU is the user+system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMain removes the benchmark's synthesised snapshot (55 MB) after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchSnap.dir != "" {
		os.RemoveAll(filepath.Dir(benchSnap.dir))
	}
	os.Exit(code)
}
