package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/index"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/internal/gcpace"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// Benchmarks on live servers (docs/benchmarks.md, "Live ZooKeeper and etcd"):
// each reports our time beside a bare client loop
// doing the same reads or writes, measured in the same run; the figure is the ratio.

const (
	liveBenchTopics   = 50_000 // cloned managed-ledger nodes for inspect topics
	liveBenchBackfill = 2_000  // cloned managed-ledger nodes back-filled per iteration
	liveBenchBatch    = 100    // back-fill's default --batch; the bare loop's batch size
	liveBenchWriters  = 2      // batches back-fill's series writes at once (mutate.seriesWriters)
	liveBenchZKConc   = 16     // the ZooKeeper backend's default concurrency
	// liveBenchWarmup is the untimed rounds of back-fill and the bare loop before
	// the timed ones. A ZooKeeper server fresh from its start is still compiling
	// its request paths: its JIT compiler threads took up to 230 ms of the
	// server's core during the first ten rounds (of about 90 ms each), slowing
	// whichever loop they fell in, and about nothing after them. Servers in
	// production are warm.
	liveBenchWarmup = 12
)

// liveRaw is a server's own client, doing the bare work the figures compare against.
type liveRaw interface {
	url() string
	// create makes every path (parents first where the server needs them).
	create(b *testing.B, paths []string, values [][]byte)
	// readAll is the read yardstick over the paths inspect topics visits.
	readAll(b *testing.B, paths []string, prefix string)
	get(b *testing.B, path string) []byte
	// remove deletes the paths (leaves; parents stay).
	remove(b *testing.B, paths []string)
	// serverCPU is the server process's CPU time so far, which it takes from the
	// same cores as we do.
	serverCPU() time.Duration
	pid() int // the server's process
}

// liveBenchFixture is a generated cluster loaded into the server: the data dir (its
// ledger store serves the entries) and the managed-ledger values to clone.
type liveBenchFixture struct {
	dir     string
	all     [][]byte // every managed-ledger node value
	indexed [][]byte // values of topics back-fill writes (indexed, ledgers with entries)
}

func loadLiveFixture(b *testing.B, raw liveRaw) liveBenchFixture {
	b.Helper()
	dir, m := testutil.Fixture(b, fixtures.Options{Seed: 11, Topics: 14, LedgersPerTopic: 3, EntriesPerLedger: 10})
	local, err := datadir.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	u, err := store.ParseMetadataURL(raw.url())
	if err != nil {
		b.Fatal(err)
	}
	dst, err := datadir.OpenMetadata(u, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Close()
	if _, err := datadir.LoadNodes(context.Background(), local.Metadata, dst, datadir.LoadOptions{Batch: 64}); err != nil {
		b.Fatal(err)
	}
	f := liveBenchFixture{dir: dir}
	for _, ml := range m.ManagedLedgers {
		n, err := local.Metadata.Get(ml.Path)
		if err != nil {
			b.Fatal(err)
		}
		f.all = append(f.all, n.Value)
		if ml.Indexed && ml.Entries > 0 {
			f.indexed = append(f.indexed, n.Value)
		}
	}
	if len(f.indexed) == 0 {
		b.Fatal("fixture has no indexed topic to back-fill")
	}
	return f
}

// cloneTopics creates n managed-ledger nodes under tenant, cycling through values:
// each refers to real ledgers of the fixture, so reads of entry 0 hit real entries.
func cloneTopics(b *testing.B, raw liveRaw, root, tenant string, n int, values [][]byte) []string {
	b.Helper()
	paths := make([]string, n)
	vals := make([][]byte, n)
	for i := range n {
		paths[i] = fmt.Sprintf("%s/%s/ns/persistent/t%06d", root, tenant, i)
		vals[i] = values[i%len(values)]
	}
	raw.create(b, paths, vals)
	return paths
}

func openLive(b *testing.B, dir, url string, readOnly bool) *datadir.DataDir {
	b.Helper()
	u, err := store.ParseMetadataURL(url)
	if err != nil {
		b.Fatal(err)
	}
	dd, err := datadir.Open(dir, store.Options{ReadOnly: readOnly, Metadata: &u})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dd.Close() })
	return dd
}

// benchInspectTopics: inspect.Topics over >= 50k managed-ledger nodes against the
// bare read of every path it walks. Ratio bare/ours; target >= 0.5.
func benchInspectTopics(b *testing.B, raw liveRaw) {
	f := loadLiveFixture(b, raw)
	cloneTopics(b, raw, "/managed-ledgers", "bench", liveBenchTopics, f.all)
	dd := openLive(b, f.dir, raw.url(), true)
	b.Cleanup(gcpace.Start()) // as Run paces the binary's runs
	prefix := "/managed-ledgers/"
	var paths []string
	if err := dd.Metadata.Walk(context.Background(), prefix, func(n store.Node) error {
		paths = append(paths, n.Path)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	wantRows := liveBenchTopics + len(f.all)
	var ours, bare time.Duration
	for b.Loop() {
		t0 := time.Now()
		t, err := inspect.Topics(context.Background(), dd, "")
		if err != nil {
			b.Fatal(err)
		}
		if len(t.Rows) != wantRows {
			b.Fatalf("inspect topics: %d rows, want %d", len(t.Rows), wantRows)
		}
		t1 := time.Now()
		raw.readAll(b, paths, prefix)
		ours, bare = ours+t1.Sub(t0), bare+time.Since(t1)
	}
	b.ReportMetric(float64(len(paths)), "nodes")
	b.ReportMetric(float64(len(paths))*float64(b.N)/ours.Seconds(), "ours-nodes/s")
	b.ReportMetric(float64(len(paths))*float64(b.N)/bare.Seconds(), "bare-nodes/s")
	b.ReportMetric(bare.Seconds()/ours.Seconds(), "ours/bare-speed")
}

// benchBackfill: index.Backfill --apply (entry-0 reads, journaled runs, batched
// compare-and-set) over 2,000 managed ledgers against a bare read-modify-write
// loop (readModifyWrite): the same nodes' work with nothing of back-fill's (no
// walk, no entry reads, no planning, no journal, no read-back). Ratio bare/ours
// in nodes/s; target >= 0.7.
//
// LEDGERMEDIC_BENCH_SERVER_CPU=N pins the server process (all its threads) to
// CPU N with taskset; run the benchmark itself under `taskset -c M` to give the
// client the other core.
//
// More yardsticks, untimed, say where our time goes: "walk-only" walks the managed
// ledgers as back-fill does and decodes nothing, "plan-only" is the same back-fill
// as a dry run (walk, entry-0 reads, planning; nothing written), and
// "readback" reads the written nodes back in batches of the same size through the
// store, as the engine's verification does. Each is reported as a share of bare's
// time (plan-only/bare-time = 2 means planning alone takes twice the bare writes).
// A third loop, timed, is the floor of any verified back-fill (backfillFloor) on
// its own clones: floor/bare is the most a back-fill can reach here.
func benchBackfill(b *testing.B, raw liveRaw) {
	// settle lets the writes before a timed loop land (the server's batched
	// backend commits, our journal's write-back) before it starts, so that
	// neither loop pays for the other's or for the set-up's clones.
	settle := func() {
		syscall.Sync()
		time.Sleep(300 * time.Millisecond)
	}
	f := loadLiveFixture(b, raw)
	dd := openLive(b, f.dir, raw.url(), false)
	b.Cleanup(gcpace.Start()) // as Run paces the binary's runs
	// The fixture's own topics first, untimed: each timed run then writes only the
	// clones, found as the CLI finds them without --topic (a walk of the tree).
	if _, err := index.Backfill(context.Background(), dd, index.BackfillOptions{Apply: true}); err != nil {
		b.Fatal(err)
	}
	nb := dd.Metadata.(store.NodeBatcher)
	floorJournal := b.TempDir()
	for i := range liveBenchWarmup {
		mine := cloneTopics(b, raw, "/managed-ledgers", fmt.Sprintf("warm%d", i), liveBenchBackfill, f.indexed)
		theirs := cloneTopics(b, raw, "/bare", fmt.Sprintf("warm%d", i), liveBenchBackfill, f.indexed)
		floors := cloneTopics(b, raw, "/floor", fmt.Sprintf("warm%d", i), liveBenchBackfill, f.indexed)
		if _, err := index.Backfill(context.Background(), dd, index.BackfillOptions{Apply: true}); err != nil {
			b.Fatal(err)
		}
		readModifyWrite(b, nb, theirs, raw.get(b, mine[0]))
		backfillFloor(b, dd, fmt.Sprintf("/floor/warm%d/", i), floorJournal)
		raw.remove(b, mine)
		raw.remove(b, theirs)
		raw.remove(b, floors)
	}
	var ours, bare, walkOnly, planOnly, readBack, planCPU, applyCPU time.Duration
	var applyServerCPU, bareCPU, bareServerCPU, walkServerCPU, readBackServerCPU, serverJIT time.Duration
	var written int64
	var ratios, floorRatios []float64 // each iteration's bare/ours and bare/floor, for the medians
	var floorTime, floorCPU, floorServerCPU time.Duration
	iter := 0
	for b.Loop() {
		b.StopTimer()
		mine := cloneTopics(b, raw, "/managed-ledgers", fmt.Sprintf("bf%d", iter), liveBenchBackfill, f.indexed)
		// The bare loop's nodes lie outside /managed-ledgers/, where back-fill does not look.
		theirs := cloneTopics(b, raw, "/bare", fmt.Sprintf("t%d", iter), liveBenchBackfill, f.indexed)
		floors := cloneTopics(b, raw, "/floor", fmt.Sprintf("t%d", iter), liveBenchBackfill, f.indexed)
		floorPrefix := fmt.Sprintf("/floor/t%d/", iter)
		iter++
		tw, sw := time.Now(), raw.serverCPU()
		if err := dd.Metadata.Walk(context.Background(), "/managed-ledgers/", func(store.Node) error { return nil }); err != nil {
			b.Fatal(err)
		}
		walkOnly, walkServerCPU = walkOnly+time.Since(tw), walkServerCPU+raw.serverCPU()-sw
		tp, cp := time.Now(), rusage.ProcessCPU()
		if _, err := index.Backfill(context.Background(), dd, index.BackfillOptions{}); err != nil {
			b.Fatal(err)
		}
		planOnly, planCPU = planOnly+time.Since(tp), planCPU+rusage.ProcessCPU()-cp
		settle() // the clones' creation, as before the bare loop
		b.StartTimer()
		t0, c0, s0, j0 := time.Now(), rusage.ProcessCPU(), raw.serverCPU(), rusage.ThreadsCPU(raw.pid(), jitThreads)
		// The phase label lets a CPU profile of this benchmark be cut to our
		// apply alone (go tool pprof -tagfocus phase=apply); goroutines inherit it.
		var res *index.BackfillResult
		var err error
		pprof.Do(context.Background(), pprof.Labels("phase", "apply"), func(ctx context.Context) {
			res, err = index.Backfill(ctx, dd, index.BackfillOptions{Apply: true})
		})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		applyCPU += rusage.ProcessCPU() - c0
		applyServerCPU += raw.serverCPU() - s0
		nodes := int(res.TopicsWritten)
		if nodes != liveBenchBackfill {
			b.Fatalf("back-fill wrote %d managed-ledger nodes, want %d (skipped %v)", nodes, liveBenchBackfill, res.Skipped)
		}
		// The bare loop writes what back-fill wrote: the same bytes, the same batches.
		value := raw.get(b, mine[0])
		settle() // our run's aftermath
		t2, c2, s2 := time.Now(), rusage.ProcessCPU(), raw.serverCPU()
		readModifyWrite(b, nb, theirs, value)
		serverJIT += rusage.ThreadsCPU(raw.pid(), jitThreads) - j0
		bareIter := time.Since(t2)
		ratios = append(ratios, bareIter.Seconds()/t1.Sub(t0).Seconds())
		ours, bare = ours+t1.Sub(t0), bare+bareIter
		bareCPU, bareServerCPU = bareCPU+rusage.ProcessCPU()-c2, bareServerCPU+raw.serverCPU()-s2
		written += int64(nodes)
		b.StopTimer()
		settle()
		t3, c3, s3 := time.Now(), rusage.ProcessCPU(), raw.serverCPU()
		var n int
		pprof.Do(context.Background(), pprof.Labels("phase", "floor"), func(context.Context) {
			n = backfillFloor(b, dd, floorPrefix, floorJournal)
		})
		if n != liveBenchBackfill {
			b.Fatalf("floor wrote %d nodes, want %d", n, liveBenchBackfill)
		}
		floorIter := time.Since(t3)
		floorTime += floorIter
		floorCPU, floorServerCPU = floorCPU+rusage.ProcessCPU()-c3, floorServerCPU+raw.serverCPU()-s3
		floorRatios = append(floorRatios, bareIter.Seconds()/floorIter.Seconds())
		tr, sr := time.Now(), raw.serverCPU()
		for i := 0; i < len(mine); i += liveBenchBatch {
			if _, err := nb.GetNodes(mine[i:min(i+liveBenchBatch, len(mine))]); err != nil {
				b.Fatal(err)
			}
		}
		readBack, readBackServerCPU = readBack+time.Since(tr), readBackServerCPU+raw.serverCPU()-sr
		// Every iteration does the same work: the next back-fill walks its own
		// clones, not this one's too (already back-filled, they would be walked
		// and decoded again).
		raw.remove(b, mine)
		raw.remove(b, theirs)
		raw.remove(b, floors)
		b.StartTimer()
	}
	b.ReportMetric(float64(written)/ours.Seconds(), "ours-nodes/s")
	b.ReportMetric(float64(written)/bare.Seconds(), "bare-nodes/s")
	b.ReportMetric(bare.Seconds()/ours.Seconds(), "ours/bare-speed")
	// The median of the iterations' ratios: each times ours and the bare loop back
	// to back, so a burst of other load moves it less than the ratio of the sums.
	b.ReportMetric(medianOf(ratios), "ours/bare-median")
	// The floor (backfillFloor): the least a verified back-fill does. Its ratio
	// to the bare loop is the most any back-fill can reach on this machine and
	// setting; ours/floor is what back-fill's own work costs on top of it.
	b.ReportMetric(medianOf(floorRatios), "floor/bare-median")
	b.ReportMetric(bare.Seconds()/floorTime.Seconds(), "floor/bare-speed")
	b.ReportMetric(floorTime.Seconds()/ours.Seconds(), "ours/floor-speed")
	b.ReportMetric(float64(floorCPU.Microseconds())/float64(written), "floor-cpu-µs/node")
	b.ReportMetric(float64(floorServerCPU.Microseconds())/float64(written), "floor-server-cpu-µs/node")
	b.ReportMetric(walkOnly.Seconds()/bare.Seconds(), "walk-only/bare-time")
	b.ReportMetric(planOnly.Seconds()/bare.Seconds(), "plan-only/bare-time")
	b.ReportMetric(readBack.Seconds()/bare.Seconds(), "readback/bare-time")
	// Our process's CPU per node written (user+system, all goroutines): steadier
	// than the wall-clock ratios on a loaded machine, and what planning and the
	// writer share with the server on two cores.
	b.ReportMetric(float64(applyCPU.Microseconds())/float64(written), "apply-cpu-µs/node")
	b.ReportMetric(float64(planCPU.Microseconds())/float64(written), "plan-cpu-µs/node")
	// The server's CPU per node during our apply and during the bare loop, and the
	// bare loop's own client CPU. With both processes on the same cores, our run
	// cannot take less wall time than (our CPU + the server's) / cores: the
	// "cpu-floor" is that bound as a share of the bare time (above 2 on a machine
	// means 0.5× cannot be reached there, however well the work overlaps).
	b.ReportMetric(float64(applyServerCPU.Microseconds())/float64(written), "apply-server-cpu-µs/node")
	b.ReportMetric(float64(bareServerCPU.Microseconds())/float64(written), "bare-server-cpu-µs/node")
	b.ReportMetric(float64(bareCPU.Microseconds())/float64(written), "bare-cpu-µs/node")
	b.ReportMetric(float64(walkServerCPU.Microseconds())/float64(written), "walk-server-cpu-µs/node")
	b.ReportMetric(float64(readBackServerCPU.Microseconds())/float64(written), "readback-server-cpu-µs/node")
	// The server's JIT compiling during the timed loops (ZooKeeper's JVM; 0 for
	// etcd): near 0 once the warm-up did its work.
	b.ReportMetric(float64(serverJIT.Milliseconds())/float64(iter), "server-jit-ms/iter")
	floor := (applyCPU + applyServerCPU).Seconds() / float64(runtime.NumCPU())
	b.ReportMetric(floor/bare.Seconds(), "cpu-floor/bare-time")
}

// readModifyWrite is the floor of a back-fill: batches of liveBenchBatch nodes,
// each batch read with the store's batched read (ZooKeeper multiRead, etcd one
// range or Txn) and written back by one batched compare-and-set against the
// versions read, with value (what back-fill wrote); liveBenchWriters batches in
// flight, as back-fill's series writes. The store's batch calls are its thinnest
// client path: go-zookeeper has no multiRead, and its Get per node costs the
// ZooKeeper server several times the CPU per node (measured: a bare loop of
// Gets and a Multi was slower than the back-fill itself).
func readModifyWrite(b *testing.B, nb store.NodeBatcher, paths []string, value []byte) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range liveBenchWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1)-1) * liveBenchBatch
				if i >= len(paths) {
					return
				}
				batch := paths[i:min(i+liveBenchBatch, len(paths))]
				nodes, err := nb.GetNodes(batch)
				if err != nil {
					failed.Store(err)
					return
				}
				writes := make([]store.NodeWrite, len(nodes))
				for j, n := range nodes {
					writes[j] = store.NodeWrite{Path: batch[j], Expect: n.Version, Value: value}
				}
				if _, err := nb.CompareAndSetNodes(writes); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatalf("read-modify-write: %v", err)
	}
}

// backfillFloor is what no verified back-fill can go without, and nothing more:
// the walk that finds the managed ledgers (the bare loop is handed their paths),
// entry 0 of every ledger read from the ledger store and parsed for its broker
// index, each node decoded, its ledgers' property set and the node
// re-encoded, the batch's before-images made durable (a file per batch, synced
// with its folder) before the batch's compare-and-set against the versions the
// walk read, and the batch read back and compared. liveBenchWriters batches of
// liveBenchBatch nodes are worked at once, as back-fill's series writes them;
// the walk feeds them as it goes. It returns the nodes written. What back-fill
// does beyond it (its rules and findings, the run records' states, progress)
// is what the figure ours/floor prices.
func backfillFloor(b *testing.B, dd *datadir.DataDir, prefix, journal string) int {
	nb := dd.Metadata.(store.NodeBatcher)
	key := cluster.KeyFor("")
	batches := make(chan []store.Node, liveBenchWriters)
	var walkErr error
	go func() {
		defer close(batches)
		var batch []store.Node
		walkErr = dd.Metadata.Walk(context.Background(), prefix, func(n store.Node) error {
			if strings.Count(n.Path, "/") != strings.Count(prefix, "/")+2 {
				return nil // the tenant's namespace and domain nodes
			}
			n.Value = bytes.Clone(n.Value)
			if batch = append(batch, n); len(batch) == liveBenchBatch {
				batches <- batch
				batch = nil
			}
			return nil
		})
		if len(batch) > 0 {
			batches <- batch
		}
	}()
	var written atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range liveBenchWriters {
		wg.Go(func() {
			er := dd.Ledgers.EntryReader()
			defer er.Close()
			for batch := range batches {
				if err := floorBatch(nb, er, key, journal, batch); err != nil {
					failed.Store(err)
					continue // drain
				}
				written.Add(int64(len(batch)))
			}
		})
	}
	wg.Wait()
	if walkErr != nil {
		b.Fatalf("floor walk: %v", walkErr)
	}
	if err := failed.Load(); err != nil {
		b.Fatalf("floor: %v", err)
	}
	return int(written.Load())
}

// floorBatch is backfillFloor's work on one batch.
func floorBatch(nb store.NodeBatcher, er store.EntryReader, key, journal string, batch []store.Node) error {
	writes := make([]store.NodeWrite, len(batch))
	var before []byte
	for i, n := range batch {
		info, enc, err := formats.DecodeManagedLedgerInfo(n.Value)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Path, err)
		}
		for _, li := range info.GetLedgerInfo() {
			// Every ledger, the open one too (it has no count yet): a ledger
			// without entry 0 is left as it is.
			var e index.EntryInfo
			err := er.Peek(li.GetLedgerId(), 0, func(v []byte) (err error) {
				e, err = index.ParseEntryInfo(v)
				return err
			})
			if err == nil && e.HasIndex {
				formats.SetLedgerProperty(li, key, strconv.FormatInt(e.Base, 10))
			}
		}
		after, err := formats.EncodeManagedLedgerInfo(info, enc)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Path, err)
		}
		writes[i] = store.NodeWrite{Path: n.Path, Expect: n.Version, Value: after}
		before = append(before, n.Value...)
	}
	if err := writeDurable(journal, before); err != nil {
		return err
	}
	if _, err := nb.CompareAndSetNodes(writes); err != nil {
		return err
	}
	paths := make([]string, len(writes))
	for i, w := range writes {
		paths[i] = w.Path
	}
	got, err := nb.GetNodes(paths)
	if err != nil {
		return err
	}
	for i, n := range got {
		if !bytes.Equal(n.Value, writes[i].Value) {
			return fmt.Errorf("%s: read back %d bytes, not what was written", n.Path, len(n.Value))
		}
	}
	return nil
}

// writeDurable writes data to a new file in dir and syncs it and dir.
func writeDurable(dir string, data []byte) error {
	f, err := os.CreateTemp(dir, "floor-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func BenchmarkLiveZKInspectTopics(b *testing.B)   { benchInspectTopics(b, startZKRaw(b)) }
func BenchmarkLiveEtcdInspectTopics(b *testing.B) { benchInspectTopics(b, startEtcdRaw(b)) }
func BenchmarkLiveZKBackfill(b *testing.B)        { benchBackfill(b, pinServer(b, startZKRaw(b))) }
func BenchmarkLiveEtcdBackfill(b *testing.B)      { benchBackfill(b, pinServer(b, startEtcdRaw(b))) }

// pinServer pins the server to the CPU LEDGERMEDIC_BENCH_SERVER_CPU names, if
// any: every thread it has (taskset -a), and so the threads they start.
// jitThreads names a JVM's JIT compiler threads ("C1 CompilerThre", "C2 CompilerThre").
const jitThreads = "CompilerThre"

func pinServer[R liveRaw](b *testing.B, raw R) R {
	cpu := os.Getenv("LEDGERMEDIC_BENCH_SERVER_CPU")
	if cpu == "" {
		return raw
	}
	if out, err := exec.Command("taskset", "-a", "-p", "-c", cpu, fmt.Sprint(raw.pid())).CombinedOutput(); err != nil {
		b.Fatalf("taskset the server to CPU %s: %v: %s", cpu, err, out)
	}
	return raw
}

// zkRawStore is a plain go-zookeeper session.
type zkRawStore struct {
	addr string
	conn *zk.Conn
	srv  *testutil.ZKServer
}

func startZKRaw(b *testing.B) *zkRawStore {
	srv := testutil.StartZooKeeper(b, testutil.ZKOptions{SnapCount: -1})
	conn, _, err := zk.Connect([]string{srv.Addr}, 30*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Close)
	return &zkRawStore{addr: srv.Addr, conn: conn, srv: srv}
}

func (z *zkRawStore) serverCPU() time.Duration { return rusage.PIDCPU(z.srv.PID()) }

func (z *zkRawStore) pid() int { return z.srv.PID() }

func (z *zkRawStore) url() string { return "zk://" + z.addr }

func (z *zkRawStore) create(b *testing.B, paths []string, values [][]byte) {
	b.Helper()
	acl := zk.WorldACL(zk.PermAll)
	var ops []any
	flush := func() {
		if len(ops) == 0 {
			return
		}
		if _, err := z.conn.Multi(ops...); err != nil {
			b.Fatalf("create: %v", err)
		}
		ops = ops[:0]
	}
	made := map[string]bool{}
	for i, p := range paths {
		// Parents the server does not hold yet, once each, before their children.
		for j := 1; j < len(p); j++ {
			if p[j] != '/' || made[p[:j]] {
				continue
			}
			made[p[:j]] = true
			if ok, _, err := z.conn.Exists(p[:j]); err != nil {
				b.Fatal(err)
			} else if !ok {
				ops = append(ops, &zk.CreateRequest{Path: p[:j], Acl: acl})
			}
		}
		ops = append(ops, &zk.CreateRequest{Path: p, Data: values[i], Acl: acl})
		if len(ops) >= 1000 {
			flush()
		}
	}
	flush()
}

// readAll is a pipelined Get of every path, liveBenchZKConc at a time.
func (z *zkRawStore) readAll(b *testing.B, paths []string, _ string) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range liveBenchZKConc {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(paths)) {
					return
				}
				if _, _, err := z.conn.Get(paths[i]); err != nil {
					failed.Store(fmt.Errorf("get %s: %w", paths[i], err))
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

func (z *zkRawStore) remove(b *testing.B, paths []string) {
	for i := 0; i < len(paths); i += 1000 {
		var ops []any
		for _, p := range paths[i:min(i+1000, len(paths))] {
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
		}
		if _, err := z.conn.Multi(ops...); err != nil {
			b.Fatalf("delete: %v", err)
		}
	}
}

func (z *zkRawStore) get(b *testing.B, path string) []byte {
	v, _, err := z.conn.Get(path)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// etcdRawStore is a plain etcd v3 client.
type etcdRawStore struct {
	endpoint string
	cli      *clientv3.Client
	srv      *testutil.EtcdServer
}

func startEtcdRaw(b *testing.B) *etcdRawStore {
	srv := testutil.StartEtcd(b)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &etcdRawStore{endpoint: srv.Endpoint, cli: c, srv: srv}
}

func (e *etcdRawStore) serverCPU() time.Duration { return rusage.PIDCPU(e.srv.PID()) }

func (e *etcdRawStore) pid() int { return e.srv.PID() }

func (e *etcdRawStore) url() string { return "etcd://" + strings.TrimPrefix(e.endpoint, "http://") }

func (e *etcdRawStore) create(b *testing.B, paths []string, values [][]byte) {
	b.Helper()
	for i := 0; i < len(paths); i += liveBenchBatch {
		var ops []clientv3.Op
		for j := i; j < min(i+liveBenchBatch, len(paths)); j++ {
			ops = append(ops, clientv3.OpPut(paths[j], string(values[j])))
		}
		if _, err := e.cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
			b.Fatalf("create: %v", err)
		}
	}
}

// remove deletes the paths and compacts the store's history up to the deletes,
// as a production etcd's auto-compaction does: until then a deleted key stays in
// etcd's key index as a tombstone that every later range over it steps through
// (treeIndex.visit in server/mvcc/index.go), so each iteration's walk of
// /managed-ledgers/ would cost the server more than the one before.
func (e *etcdRawStore) remove(b *testing.B, paths []string) {
	var rev int64
	for i := 0; i < len(paths); i += liveBenchBatch {
		var ops []clientv3.Op
		for _, p := range paths[i:min(i+liveBenchBatch, len(paths))] {
			ops = append(ops, clientv3.OpDelete(p))
		}
		resp, err := e.cli.Txn(context.Background()).Then(ops...).Commit()
		if err != nil {
			b.Fatalf("delete: %v", err)
		}
		rev = resp.Header.Revision
	}
	if rev == 0 {
		return
	}
	if _, err := e.cli.Compact(context.Background(), rev, clientv3.WithCompactPhysical()); err != nil {
		b.Fatalf("compact at revision %d: %v", rev, err)
	}
}

// readAll is a range read of the prefix in pages of 1000, pinned to the first
// page's revision.
func (e *etcdRawStore) readAll(b *testing.B, paths []string, prefix string) {
	ctx := context.Background()
	end := clientv3.GetPrefixRangeEnd(prefix)
	n, begin, rev := 0, prefix, int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := e.cli.Get(ctx, begin, opts...)
		if err != nil {
			b.Fatal(err)
		}
		rev = resp.Header.Revision
		n += len(resp.Kvs)
		if !resp.More {
			break
		}
		begin = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if n != len(paths) {
		b.Fatalf("range read %d keys, want %d", n, len(paths))
	}
}

func (e *etcdRawStore) get(b *testing.B, path string) []byte {
	r, err := e.cli.Get(context.Background(), path)
	if err != nil || len(r.Kvs) != 1 {
		b.Fatalf("get %s: %v", path, err)
	}
	return r.Kvs[0].Value
}

// medianOf returns the median of v (0 for none).
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
