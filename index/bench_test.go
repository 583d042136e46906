package index

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/internal/gcpace"
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
func bareEntry0Loop(b testing.TB, dd *datadir.DataDir) int {
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
// 10,000 ledgers: 100 topics of 100 ledgers (one batch run at the default --batch
// of 100 topics) and 1,000 topics of 10 ledgers (ten runs). Every workload opens a
// closed data dir, as the CLI does: the loop and plans read-only, apply writable.
// The apply-vs-bare sub-benchmark times both on fresh copies in the same iteration
// and reports their throughput ratio (apply ledgers/s over bare ledgers/s).
func BenchmarkBackfillThroughput(b *testing.B) {
	for _, shape := range []struct{ topics, perTopic int }{{100, 100}, {1000, 10}} {
		b.Run(fmt.Sprintf("%dtopics", shape.topics), func(b *testing.B) {
			benchBackfill(b, benchTopics(shape.topics, shape.perTopic), shape.topics*shape.perTopic)
		})
	}
}

func benchBackfill(b *testing.B, topics []tTopic, ledgers int) {
	dir := closedDir(b, topics)
	perSec := func(b *testing.B) {
		b.ReportMetric(float64(ledgers)*float64(b.N)/b.Elapsed().Seconds(), "ledgers/s")
	}
	b.Run("bare-entry0-loop", func(b *testing.B) {
		dd := openDir(b, dir, true)
		for b.Loop() {
			if n := bareEntry0Loop(b, dd); n != ledgers {
				b.Fatalf("%d ledgers", n)
			}
		}
		perSec(b)
	})
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("backfill-plan-workers-%d", workers), func(b *testing.B) {
			dd := openDir(b, dir, true)
			for b.Loop() {
				res, err := Backfill(context.Background(), dd, BackfillOptions{Workers: workers})
				if err != nil || res.Planned != int64(ledgers) {
					b.Fatalf("%v planned %d", err, res.Planned)
				}
			}
			perSec(b)
		})
	}
	b.Run("backfill-apply-workers-4", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dd := openDir(b, copyOf(b, dir), false)
			b.StartTimer()
			res, err := Backfill(context.Background(), dd, BackfillOptions{Apply: true, Workers: 4})
			if err != nil || res.Written != int64(ledgers) {
				b.Fatalf("%v written %d", err, res.Written)
			}
			b.StopTimer()
			dd.Close()
			b.StartTimer()
		}
		perSec(b)
	})
	// The loop's first pass after an open reads cold (table indexes and blocks not yet
	// cached), as apply does; its second pass reads warm. Each iteration times all
	// three back to back and the medians are reported, so load from other processes
	// moves the ratios less than the times.
	b.Run("apply-vs-bare", func(b *testing.B) {
		var cold, warm, apply, rCold, rWarm []float64
		for b.Loop() {
			ro := openDir(b, dir, true)
			start := time.Now()
			bareEntry0Loop(b, ro)
			c := time.Since(start).Seconds()
			start = time.Now()
			bareEntry0Loop(b, ro)
			w := time.Since(start).Seconds()
			ro.Close()
			dd := openDir(b, copyOf(b, dir), false)
			start = time.Now()
			if _, err := Backfill(context.Background(), dd, BackfillOptions{Apply: true, Workers: 4}); err != nil {
				b.Fatal(err)
			}
			a := time.Since(start).Seconds()
			dd.Close()
			cold, warm, apply = append(cold, c*1e3), append(warm, w*1e3), append(apply, a*1e3)
			rCold, rWarm = append(rCold, c/a), append(rWarm, w/a)
		}
		b.ReportMetric(median(cold), "bare-cold-ms")
		b.ReportMetric(median(warm), "bare-warm-ms")
		b.ReportMetric(median(apply), "apply-ms")
		b.ReportMetric(median(rCold), "apply/bare-cold")
		b.ReportMetric(median(rWarm), "apply/bare-warm")
	})
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// closedDir builds topics into a data dir and closes it.
func closedDir(b testing.TB, topics []tTopic) string {
	dd, _ := buildDir(b, topics)
	if err := dd.Close(); err != nil {
		b.Fatal(err)
	}
	return dd.Path
}

func openDir(b testing.TB, dir string, readOnly bool) *datadir.DataDir {
	dd, err := datadir.Open(dir, store.Options{ReadOnly: readOnly, NoSandbox: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dd.Close() })
	return dd
}

// copyOf copies a closed data dir (a few MB) to a new temporary folder.
func copyOf(b testing.TB, dir string) string {
	dst := filepath.Join(b.TempDir(), "dd")
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	return dst
}

// Memory benchmark. TestMemoryFlat (LEDGERMEDIC_MEMBENCH=1, or the older
// LEDGERMEDIC_MEMTEST=1) builds data dirs of 10,000 and 200,000 ledgers (2 entries
// each, 100 ledgers per topic) and runs each workload in a fresh child process, which
// prints its peak numbers:
//
//	VmHWM     peak resident set (anonymous memory plus mapped file pages)
//	anon      peak RssAnon, sampled: heap and Badger's caches, not reclaimable
//	file      peak RssFile, sampled: pages of Badger's mmapped tables and value
//	          logs, clean file cache the kernel can drop under pressure
//	heap      peak Go HeapInuse, sampled
//	live      peak live Go heap (marked by the last GC), sampled; heap exceeds it
//	          by the GC's headroom (GOGC)
//
// Workloads: scan (read-only open, every entry of every ledger), bare (read-only
// open, entry 0 of every ledger), plan (read-only back-fill plan) and apply
// (writable open, back-fill --apply). The peaks include closing the dir, where a
// session flattens what it wrote (store.needsFlatten); "run" is VmHWM before the
// close.
//
// Other knobs: LEDGERMEDIC_MEMBENCH_TOPICS=100,2000,10000 (sizes, in topics of 100
// ledgers), LEDGERMEDIC_MEMBENCH_DIRS=small,large (existing data dirs instead, such
// as `fixtures generate` makes; bench/ratios.sh's backfill-memory sections),
// LEDGERMEDIC_MEMBENCH_MODES=plan,apply, LEDGERMEDIC_MEMBENCH_PROFILE=dir
// (heap profiles, see envMemProfile), LEDGERMEDIC_MEMBENCH_KEEP=dir (build each
// size once and reuse it) and LEDGERMEDIC_MEMBENCH_SMAPS=1 (resident memory by
// mapping at the run's and the close's largest sample, see envMemSmaps). A child's GOGC and GOMEMLIMIT come from the environment.
// The last lines give each mode's peak at the largest case over its peak at the smallest.
//
// What apply's growth was (profiles at 1M and 2M ledgers): Badger's table builders.
// A writable open compacts whatever L0 holds (a bulk-loaded ledger store at 2M
// ledgers: 5 L0 tables merged with 100 MB of L1, in up to 13 concurrent builders),
// and every memtable flush builds an L0 table in a z.Allocator that grows in doubling
// buffers (4, 8, 16, 32, 64 MB for a 16 MB memtable, as Snappy adds a compressed
// copy of each block). Badger keeps up to 8 such allocators in a pool for reuse, so
// live heap went 73 MB (200k), 178 MB (1M), 420 MB (2M), HeapInuse twice that (GOGC).
// Back-fill's own state is per run: a batch's plans, images and journal record are
// dropped when the run commits; only the per-topic results and findings stay.
const (
	envMemBench = "LEDGERMEDIC_MEMBENCH"
	envMemChild = "LEDGERMEDIC_MEM_CHILD"
	envMemMode  = "LEDGERMEDIC_MEM_MODE"
	// envMemProfile names a folder: each child writes <size>-<mode>-peak.pprof (heap
	// profile taken when the sampled live heap last rose by a tenth) and
	// <size>-<mode>-end.pprof (at the end of the workload).
	envMemProfile = "LEDGERMEDIC_MEMBENCH_PROFILE"
	// envMemKeep names a folder where built data dirs are kept for later runs.
	envMemKeep = "LEDGERMEDIC_MEMBENCH_KEEP"
	// envMemSmaps (any value): each child also reads /proc/self/smaps every 100 ms
	// and prints the resident memory by kind of mapping at its largest sample.
	envMemSmaps = "LEDGERMEDIC_MEMBENCH_SMAPS"
	// envMemDirs names existing data dirs (comma-separated, smallest first), such
	// as `fixtures generate` makes, to measure instead of the built sizes; apply
	// works on a copy of each, beside it.
	envMemDirs = "LEDGERMEDIC_MEMBENCH_DIRS"
)

var memModes = []string{"scan", "bare", "plan", "apply"}

func TestMemoryFlat(t *testing.T) {
	if dir := os.Getenv(envMemChild); dir != "" {
		memChild(t, dir, os.Getenv(envMemMode))
		return
	}
	if os.Getenv(envMemBench) == "" && os.Getenv("LEDGERMEDIC_MEMTEST") == "" {
		t.Skip("set " + envMemBench + "=1 to measure peak memory of scans and back-fill")
	}
	type memCase struct {
		label string
		dir   func() string // a closed data dir, built or found
		own   bool          // the dir is the test's own: apply may write it
	}
	var cases []memCase
	if s := os.Getenv(envMemDirs); s != "" {
		for _, d := range strings.Split(s, ",") {
			cases = append(cases, memCase{label: filepath.Base(d), dir: func() string { return d }})
		}
	} else {
		sizes := []int{100, 2000}
		if s := os.Getenv("LEDGERMEDIC_MEMBENCH_TOPICS"); s != "" { // e.g. "100,4000"
			sizes = sizes[:0]
			for _, f := range strings.Split(s, ",") {
				n, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				sizes = append(sizes, n)
			}
		}
		for _, n := range sizes {
			cases = append(cases, memCase{
				label: strconv.Itoa(n * 100), own: os.Getenv(envMemKeep) == "",
				dir: func() string { return memBenchDir(t, n, 100) },
			})
		}
	}
	modes := memModes
	if s := os.Getenv("LEDGERMEDIC_MEMBENCH_MODES"); s != "" { // e.g. "plan,apply"
		modes = strings.Split(s, ",")
	}
	peaks := make(map[string][]int64) // VmHWM in KB by mode, in the order of cases
	for _, c := range cases {
		dir := c.dir()
		size := dirSize(t, dir)
		for _, mode := range modes {
			// apply writes, so it runs last: every mode sees the same data.
			cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryFlat$", "-test.v", "-test.count=1")
			childDir := dir
			if mode == "apply" && !c.own {
				childDir = copyDir(t, dir) // a kept or given dir stays unwritten
			}
			cmd.Env = append(os.Environ(), envMemChild+"="+childDir, envMemMode+"="+mode, "LEDGERMEDIC_MEM_LABEL="+c.label)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child %s: %v\n%s", mode, err, out)
			}
			if childDir != dir {
				os.RemoveAll(childDir)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if i := strings.Index(line, "SMAPS "); i >= 0 {
					t.Logf("%s %s", c.label, line[i:])
				}
				if i := strings.Index(line, "MEM "); i >= 0 {
					t.Logf("%s (%5.1f MB on disk) %-5s %s", c.label, float64(size)/1e6, mode, line[i+4:])
					var hwm int64
					fmt.Sscanf(line[i:], "MEM VmHWM %d", &hwm)
					peaks[mode] = append(peaks[mode], hwm)
				}
			}
		}
	}
	// The figure of docs/benchmarks.md: the largest case's peak over the smallest's.
	for _, mode := range modes {
		if p := peaks[mode]; len(p) > 1 && p[0] > 0 {
			t.Logf("%s: peak RSS %s / %s = %.2fx (%d / %d MB)", mode, cases[len(p)-1].label, cases[0].label,
				float64(p[len(p)-1])/float64(p[0]), p[len(p)-1], p[0])
		}
	}
}

// copyDir copies a data dir of any size (cp keeps sparse files sparse) to a new
// folder beside it, for a workload that writes.
func copyDir(t *testing.T, dir string) string {
	dst, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".copy-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", "--sparse=always", dir+"/.", dst).CombinedOutput(); err != nil {
		os.RemoveAll(dst)
		t.Fatalf("copy %s: %v: %s", dir, err, out)
	}
	return dst
}

// memBenchDir returns a closed data dir of topics x perTopic ledgers. With
// LEDGERMEDIC_MEMBENCH_KEEP set to a folder, it is built there once (<folder>/<ledgers>)
// and reused by later runs; apply then works on a copy.
func memBenchDir(t *testing.T, topics, perTopic int) string {
	keep := os.Getenv(envMemKeep)
	if keep != "" {
		dir := filepath.Join(keep, strconv.Itoa(topics*perTopic))
		if _, err := os.Stat(filepath.Join(dir, datadir.LedgersDirName)); err == nil {
			return dir
		}
	}
	dd, _ := buildDir(t, benchTopics(topics, perTopic))
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
	if keep == "" {
		return dd.Path
	}
	dir := filepath.Join(keep, strconv.Itoa(topics*perTopic))
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(copyOf(t, dd.Path), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// memChild runs one workload and prints its peaks.
func memChild(t *testing.T, dir, mode string) {
	defer gcpace.Start()() // as the binary paces its runs (app.Run)
	dd, err := datadir.Open(dir, store.Options{ReadOnly: mode != "apply", NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	var closingDir atomic.Bool // profiles taken in the close are named close-peak
	profile := func(string) {}
	if pd := os.Getenv(envMemProfile); pd != "" {
		prefix := filepath.Join(pd, os.Getenv("LEDGERMEDIC_MEM_LABEL")+"-"+mode+"-")
		profile = func(name string) {
			if name == "peak" && closingDir.Load() {
				name = "close-peak"
			}
			writeHeapProfile(t, prefix+name+".pprof")
		}
	}
	s := startMemSampler(profile)
	smaps := func(string) func() { return func() {} }
	if os.Getenv(envMemSmaps) != "" {
		smaps = func(phase string) func() { return startSmapsSampler(t, phase) }
	}
	stopSmaps := smaps("run")
	ctx := context.Background()
	var what string
	switch mode {
	case "scan":
		var entries, bytes int64
		err = dd.Ledgers.LedgerIDs(ctx, func(id, _ int64) error {
			return dd.Ledgers.Entries(ctx, id, 0, -1, func(_ int64, v []byte) error {
				entries++
				bytes += int64(len(v))
				return nil
			})
		})
		what = fmt.Sprintf("read %d entries (%d bytes)", entries, bytes)
	case "bare":
		what = fmt.Sprintf("read entry 0 of %d ledgers", bareEntry0Loop(t, dd))
	case "plan", "apply":
		var res *BackfillResult
		res, err = Backfill(ctx, dd, BackfillOptions{Apply: mode == "apply", Workers: 4})
		if err == nil {
			what = fmt.Sprintf("planned %d, wrote %d ledgers in %d runs", res.Planned, res.Written, len(res.Runs))
		}
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The close is measured too: a session's close flattens what it wrote.
	runHWM := vmStatus("VmHWM")
	stopSmaps()
	stopSmaps = smaps("close")
	closingDir.Store(true)
	closing := time.Now()
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
	stopSmaps()
	p := s.stop()
	profile("end")
	t.Logf("MEM VmHWM %4d MB (run %4d MB) | anon %4d MB | file %4d MB | heap %4d MB | live %4d MB | %v (close %v) | %s",
		vmStatus("VmHWM")>>10, runHWM>>10, p.anon>>10, p.file>>10, p.heap>>20, p.live>>20, p.elapsed.Round(time.Millisecond),
		time.Since(closing).Round(time.Millisecond), what)
}

type memPeaks struct {
	anon, file int64 // kB
	heap, live uint64
	elapsed    time.Duration
}

type memSampler struct {
	stopc chan struct{}
	done  chan memPeaks
}

// startMemSampler samples RssAnon, RssFile and HeapInuse every 10ms until stop,
// and the live heap as of the last GC; it calls peak("peak") each time the live heap
// rises a tenth above the last such call.
func startMemSampler(peak func(string)) *memSampler {
	s := &memSampler{stopc: make(chan struct{}), done: make(chan memPeaks, 1)}
	start := time.Now()
	go func() {
		var p memPeaks
		var ms runtime.MemStats
		var profiled uint64
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		sample := func() {
			runtime.ReadMemStats(&ms)
			p.heap = max(p.heap, ms.HeapInuse)
			metrics.Read(live)
			if v := live[0].Value; v.Kind() == metrics.KindUint64 {
				p.live = max(p.live, v.Uint64())
			}
			if p.live > profiled+profiled/10 {
				profiled = p.live
				peak("peak")
			}
			p.anon = max(p.anon, vmStatus("RssAnon"))
			p.file = max(p.file, vmStatus("RssFile"))
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-s.stopc:
				sample()
				p.elapsed = time.Since(start)
				s.done <- p
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *memSampler) stop() memPeaks {
	close(s.stopc)
	return <-s.done
}

// writeHeapProfile collects garbage and writes the heap profile to path: the
// collection makes the profile show what is live now, not as of an earlier cycle.
func writeHeapProfile(t *testing.T, path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Error(err)
	}
}

// vmStatus reads one kB field of /proc/self/status (0 when unavailable).
func vmStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return 0
}

// startSmapsSampler reads /proc/self/smaps every 100 ms and, when stopped, logs
// the resident memory by kind of mapping (and the Go heap's state) at the sample
// with the largest total, and at the largest sample of the close.
func startSmapsSampler(t *testing.T, phase string) (stop func()) {
	stopc, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var best smapsSample
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if s := readSmaps(); s.total > best.total {
				best = s
			}
			select {
			case <-stopc:
				t.Logf("SMAPS %s peak %d MB: %s", phase, best.total>>10, best.describe())
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(stopc); <-done }
}

type smapsSample struct {
	total int64 // kB
	kinds map[string]int64
	ms    runtime.MemStats
	at    time.Time
}

func (s smapsSample) describe() string {
	keys := make([]string, 0, len(s.kinds))
	for k := range s.kinds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return int(s.kinds[b] - s.kinds[a]) })
	var b strings.Builder
	for _, k := range keys {
		if s.kinds[k] >= 512 {
			fmt.Fprintf(&b, "%s %.1f, ", k, float64(s.kinds[k])/1024)
		}
	}
	m := s.ms
	fmt.Fprintf(&b, "| Go: heap in use %d, idle unreleased %d, stacks %d, sys %d, next GC %d MB",
		m.HeapInuse>>20, (m.HeapIdle-m.HeapReleased)>>20, m.StackSys>>20, m.Sys>>20, m.NextGC>>20)
	return b.String()
}

func readSmaps() smapsSample {
	s := smapsSample{kinds: map[string]int64{}, at: time.Now()}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return s
	}
	defer f.Close()
	kind := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "Shared_Dirty:"); ok && kind != "anon" {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			s.kinds[kind+" (dirty)"] += v
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Rss:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			s.kinds[kind] += v
			s.total += v // the (dirty) kinds are parts of these, not counted again
			continue
		}
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && len(fields[1]) == 4 {
			path := ""
			if len(fields) >= 6 {
				path = fields[5]
			}
			switch {
			case path == "":
				kind = "anon"
			case strings.HasSuffix(path, ".sst"), strings.HasSuffix(path, ".vlog"), strings.HasSuffix(path, ".mem"):
				kind = filepath.Base(filepath.Dir(path)) + "/*" + filepath.Ext(path)
				if len(fields) > 6 {
					kind += " " + strings.Join(fields[6:], " ")
				}
			case strings.HasPrefix(path, "["):
				kind = path
			default:
				kind = "binary/libs"
			}
		}
	}
	runtime.ReadMemStats(&s.ms)
	return s
}
