package index

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/store"
)

// BenchmarkFindOffset compares entry reads and wall time per find on a topic of
// 1,000 ledgers x 100 entries, with firstEntryIndex and with the legacy search.
// BenchmarkFindOffsetOneShot adds building the Finder (what one CLI call pays).
func BenchmarkFindOffset(b *testing.B) {
	shapes := []struct {
		name    string
		batches func(*rand.Rand) []int
	}{
		{"uniform-batch-4", func(*rand.Rand) []int { return uniform(100, 4) }},
		{"random-batch-1to10", func(r *rand.Rand) []int { return randomBatches(r, 100, 10) }},
	}
	for _, shape := range shapes {
		rng := rand.New(rand.NewPCG(9, 9))
		ledgers := make([]tLedger, 1000)
		for i := range ledgers {
			ledgers[i] = tLedger{batches: shape.batches(rng), prop: "auto"}
		}
		dd, truth := buildDir(b, []tTopic{{name: "bench", ledgers: ledgers, mlIndex: true}})
		info, _, _ := loadInfo(b, dd, tPath("bench"))
		// Built once, as a broker keeps the managed ledger's metadata in memory:
		// each find then costs its entry reads.
		finder, err := NewFinder(dd.Ledgers, info, FindOptions{})
		if err != nil {
			b.Fatal(err)
		}
		tr := truth[tPath("bench")]
		last := tr[len(tr)-1].Last
		for _, legacy := range []bool{false, true} {
			name := shape.name + "/firstEntryIndex"
			if legacy {
				name = shape.name + "/legacy"
			}
			b.Run(name, func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 1))
				var reads, touched int
				for b.Loop() {
					a, err := finder.Offset(context.Background(), r.Int64N(last+1), legacy)
					if err != nil || !a.Found {
						b.Fatalf("find: %v %+v", err, a)
					}
					reads += a.EntryReads
					touched += a.LedgersTouched
				}
				b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
				b.ReportMetric(float64(touched)/float64(b.N), "ledgers/op")
			})
		}
	}
}

func BenchmarkFindOffsetOneShot(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	ledgers := make([]tLedger, 1000)
	for i := range ledgers {
		ledgers[i] = tLedger{batches: randomBatches(rng, 100, 10), prop: "auto"}
	}
	dd, truth := buildDir(b, []tTopic{{name: "bench", ledgers: ledgers, mlIndex: true}})
	info, _, _ := loadInfo(b, dd, tPath("bench"))
	tr := truth[tPath("bench")]
	last := tr[len(tr)-1].Last
	for _, legacy := range []bool{false, true} {
		b.Run(fmt.Sprintf("legacy=%v", legacy), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			for b.Loop() {
				if _, err := FindOffset(context.Background(), dd.Ledgers, info, r.Int64N(last+1), FindOptions{Legacy: legacy}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchTopics is n topics of perTopic ledgers, each ledger 2 entries, none with the property.
func benchTopics(n, perTopic int) []tTopic {
	topics := make([]tTopic, n)
	for i := range topics {
		ls := make([]tLedger, perTopic)
		for j := range ls {
			ls[j] = tLedger{batches: []int{3, 2}}
		}
		topics[i] = tTopic{name: fmt.Sprintf("t%05d", i), ledgers: ls, mlIndex: true}
	}
	return topics
}

// bareEntry0Loop is the yardstick: decode each managed ledger and read and parse
// entry 0 of each ledger, one at a time, nothing else.
func bareEntry0Loop(b testing.TB, dd *store.DataDir) int {
	n := 0
	err := dd.Metadata.Walk(context.Background(), formats.ManagedLedgersRoot+"/", func(node store.Node) error {
		info, _, err := formats.DecodeManagedLedgerInfo(node.Value)
		if err != nil {
			return err
		}
		for _, li := range info.GetLedgerInfo() {
			v, err := dd.Ledgers.Entry(li.GetLedgerId(), 0)
			if err != nil {
				return err
			}
			if _, err := ParseEntryInfo(v); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkBackfillThroughput compares back-fill planning (every ledger read and
// decided, nothing written) and a full --apply with the bare entry-0 loop, on
// 10,000 ledgers.
func BenchmarkBackfillThroughput(b *testing.B) {
	topics := benchTopics(100, 100)
	dd, _ := buildDir(b, topics)
	const ledgers = 100 * 100
	perSec := func(b *testing.B) {
		b.ReportMetric(float64(ledgers)*float64(b.N)/b.Elapsed().Seconds(), "ledgers/s")
	}
	b.Run("bare-entry0-loop", func(b *testing.B) {
		for b.Loop() {
			if n := bareEntry0Loop(b, dd); n != ledgers {
				b.Fatalf("%d ledgers", n)
			}
		}
		perSec(b)
	})
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("backfill-plan-workers-%d", workers), func(b *testing.B) {
			for b.Loop() {
				res, err := Backfill(context.Background(), dd, BackfillOptions{Workers: workers})
				if err != nil || res.Planned != ledgers {
					b.Fatalf("%v planned %d", err, res.Planned)
				}
			}
			perSec(b)
		})
	}
	b.Run("backfill-apply-workers-4", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fresh, _ := buildDir(b, topics)
			b.StartTimer()
			res, err := Backfill(context.Background(), fresh, BackfillOptions{Apply: true, Workers: 4})
			if err != nil || res.Written != ledgers {
				b.Fatalf("%v written %d", err, res.Written)
			}
		}
		perSec(b)
	})
}

// TestBackfillPeakMemory measures the peak RSS (VmHWM) of a back-fill --apply of
// 10,000 and of 200,000 ledgers, each in its own process. Run it with
// LEDGERMEDIC_MEMTEST=1; it takes a minute.
func TestBackfillPeakMemory(t *testing.T) {
	if dir := os.Getenv("LEDGERMEDIC_MEM_CHILD"); dir != "" {
		memChild(t, dir)
		return
	}
	if os.Getenv("LEDGERMEDIC_MEMTEST") == "" {
		t.Skip("set LEDGERMEDIC_MEMTEST=1 to measure back-fill peak memory")
	}
	for _, c := range []struct{ topics, perTopic int }{{100, 100}, {2000, 100}, {20, 10000}} {
		dd, _ := buildDir(t, benchTopics(c.topics, c.perTopic))
		dir := dd.Path
		if err := dd.Close(); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"bare", "backfill"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBackfillPeakMemory$", "-test.v")
			cmd.Env = append(os.Environ(), "LEDGERMEDIC_MEM_CHILD="+dir, "LEDGERMEDIC_MEM_MODE="+mode)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if i := strings.Index(line, "MEM "); i >= 0 {
					t.Logf("%d topics x %d ledgers = %d ledgers, %s: %s", c.topics, c.perTopic, c.topics*c.perTopic, mode, line[i+4:])
				}
			}
		}
	}
}

func memChild(t *testing.T, dir string) {
	dd, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	opened := vmHWM(t)
	// Sample the Go heap while the work runs: VmHWM also counts Badger's mmapped
	// tables and caches, which grow with the data read whatever reads it.
	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	what := ""
	if os.Getenv("LEDGERMEDIC_MEM_MODE") == "bare" {
		what = fmt.Sprintf("read entry 0 of %d ledgers", bareEntry0Loop(t, dd))
	} else {
		res, err := Backfill(context.Background(), dd, BackfillOptions{Apply: true, Workers: 4})
		if err != nil {
			t.Fatal(err)
		}
		what = fmt.Sprintf("wrote %d ledgers in %d runs", res.Written, len(res.Runs))
	}
	close(stop)
	<-sampled
	t.Logf("MEM %s; VmHWM after open %d kB, at end %d kB; peak Go heap in use %d kB", what, opened, vmHWM(t), peakHeap.Load()/1024)
}

// vmHWM reads the process's peak resident set size in kB.
func vmHWM(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return 0
}
