package bookie_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats/bkdisk"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// benchBookies writes a fixture of about 60k entries as 3 bookie dirs.
func benchBookies(b *testing.B) (string, *fixtures.BookieManifest) {
	b.Helper()
	dd, _ := testutil.Fixture(b, fixtures.Options{Seed: 5, Topics: 7, Partitions: 2, LedgersPerTopic: 3, EntriesPerLedger: 2000})
	m, err := fixtures.WriteBookies(context.Background(), dd, filepath.Join(b.TempDir(), "bookies"), fixtures.BookieOptions{Bookies: 3})
	if err != nil {
		b.Fatal(err)
	}
	return dd, m
}

func bookieFiles(b *testing.B, m *fixtures.BookieManifest, pattern string) (files []string, size int64) {
	for _, d := range m.Dirs {
		fs, _ := filepath.Glob(filepath.Join(d, pattern))
		for _, f := range fs {
			st, err := os.Stat(f)
			if err != nil {
				b.Fatal(err)
			}
			files = append(files, f)
			size += st.Size()
		}
	}
	return files, size
}

// bareRead is the physical baseline: every byte of the files read in order.
func bareRead(b *testing.B, files []string) time.Duration {
	start := time.Now()
	buf := make([]byte, 256<<10)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return time.Since(start)
}

// BenchmarkBookieScanVsRead: entry logs scanned (framing, and each entry's CRC32C
// digest checked) against a bare read of the same files; speed ratio scan/bare.
func BenchmarkBookieScanVsRead(b *testing.B) {
	_, m := benchBookies(b)
	files, size := bookieFiles(b, m, "ledgers/current/*.log")
	var bare, scan time.Duration
	entries := 0
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		bare += bareRead(b, files)
		start := time.Now()
		for _, p := range files {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			st, _ := f.Stat()
			_, err = bkdisk.ScanEntryLog(p, f, st.Size(), func(e bkdisk.LogEntry) error {
				if !bkdisk.Verify(e.Data, bkdisk.DigestCRC32C, nil) {
					b.Fatalf("%s offset %d: bad digest", p, e.Offset)
				}
				entries++
				return nil
			})
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
		scan += time.Since(start)
	}
	b.ReportMetric(float64(bare)/float64(scan), "scan/bare")
	b.ReportMetric(float64(size)/1e6, "MB")
	b.ReportMetric(float64(entries)/float64(b.N), "entries")
}

// BenchmarkBookieIndexBuildVsRead: the first index build (every entry log and
// journal scanned, digests detected, locations written to Badger) against a bare
// read of the same files; speed ratio build/bare.
func BenchmarkBookieIndexBuildVsRead(b *testing.B) {
	dd, m := benchBookies(b)
	logs, ls := bookieFiles(b, m, "ledgers/current/*.log")
	journals, js := bookieFiles(b, m, "journal/current/*.txn")
	files := append(logs, journals...)
	var bare, build time.Duration
	b.SetBytes(ls + js)
	b.ResetTimer()
	for range b.N {
		bare += bareRead(b, files)
		b.StopTimer()
		b.Setenv(store.CacheDirEnv, b.TempDir()) // no index to reuse
		b.StartTimer()
		start := time.Now()
		d := openWithBookies(b, dd, m.Dirs)
		build += time.Since(start)
		d.Close()
	}
	b.ReportMetric(float64(bare)/float64(build), "build/bare")
	b.ReportMetric(float64(ls+js)/1e6, "MB")
}
