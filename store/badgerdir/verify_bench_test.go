package badgerdir

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
)

// verifyBenchDir is LEDGERMEDIC_BENCH_DIR (a data dir such as `fixtures generate
// --topics 50 --ledgers 20 --entries 1000`, 157 MB) or a generated one of about
// 155 MB of tables: 32 ledgers of 8,000 entries of 1 KiB, half random bytes and
// half text (which Snappy shrinks), so Snappy has real work to do.
func verifyBenchDir(b *testing.B) string {
	if d := os.Getenv("LEDGERMEDIC_BENCH_DIR"); d != "" {
		return d
	}
	dir := b.TempDir()
	d, err := Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	w := d.NewBulkWriter()
	rng := rand.New(rand.NewPCG(7, 9))
	text := []byte("persistent://public/default/orders {\"id\":12345,\"state\":\"shipped\",\"items\":[1,2,3]} ")
	v := make([]byte, 1024)
	for l := range int64(32) {
		for e := range int64(8000) {
			for i := 0; i < 512; i += 8 {
				u := rng.Uint64()
				for j := range 8 {
					v[i+j] = byte(u >> (8 * j))
				}
			}
			for i := 512; i < len(v); i++ {
				v[i] = text[i%len(text)]
			}
			if err := w.PutEntry(l+1, e, v); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	// Tables this fresh are verified but not cached (racyWindow).
	time.Sleep(racyWindow)
	return dir
}

func tableFiles(b *testing.B, dir string) ([]string, int64) {
	var files []string
	var size int64
	for _, db := range []string{MetadataDirName, LedgersDirName} {
		m, _ := filepath.Glob(filepath.Join(dir, db, "*.sst"))
		for _, p := range m {
			fi, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			files, size = append(files, p), size+fi.Size()
		}
	}
	return files, size
}

// plainRead is the physical baseline: every table read once, sequentially.
func plainRead(b *testing.B, files []string) time.Duration {
	start := time.Now()
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return time.Since(start)
}

// childCPU is the CPU time (user+system) of the child processes reaped so far.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkVerifyOpen: a read-only open (and close) of a data dir with the
// verification cache empty (cold: every table verified in child processes) and
// filled (cached: a stat and an 8 KiB footer read per table), each against a plain
// sequential read of the same table files in the same iteration. Ratios are times
// (cold/read = how many plain reads one cold open costs).
func BenchmarkVerifyOpen(b *testing.B) {
	dir := verifyBenchDir(b)
	b.Setenv(VerifyModeEnv, "")
	files, size := tableFiles(b, dir)
	var read, cold, cached, coldCPU time.Duration
	open := func() time.Duration {
		start := time.Now()
		d, err := Open(dir, store.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(d.Damage) > 0 {
			b.Fatalf("damage in the benchmark dir: %v", d.Damage)
		}
		took := time.Since(start)
		d.Close()
		return took
	}
	b.ResetTimer()
	for range b.N {
		read += plainRead(b, files)
		b.StopTimer()
		b.Setenv(store.CacheDirEnv, b.TempDir())
		b.StartTimer()
		cpu := childCPU()
		cold += open()
		coldCPU += childCPU() - cpu
		children := verifyChildRuns.Load()
		cached += open()
		if verifyChildRuns.Load() != children {
			b.Fatal("the cached open verified tables")
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(cold)/float64(read), "cold/read")
	b.ReportMetric(float64(cached)/float64(read), "cached/read")
	b.ReportMetric(float64(read.Milliseconds())/n, "read-ms")
	b.ReportMetric(float64(cold.Milliseconds())/n, "cold-ms")
	b.ReportMetric(float64(coldCPU.Milliseconds())/n, "cold-child-cpu-ms")
	b.ReportMetric(float64(cached.Milliseconds())/n, "cached-ms")
	b.ReportMetric(float64(size)/1e6, "MB")
	b.ReportMetric(float64(len(files)), "tables")
}
