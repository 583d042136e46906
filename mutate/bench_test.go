package mutate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkApplyBatch measures the per-run overhead a back-fill pays: one run of ten
// node sets (journal twice, epoch once, CAS, verify).
func BenchmarkApplyBatch(b *testing.B) {
	dd, _ := newDataDir(b)
	const n = 10
	for i := range n {
		if _, err := dd.Metadata.CompareAndSet(fmt.Sprintf("/ml/%d", i), 0, []byte("v0")); err != nil {
			b.Fatal(err)
		}
	}
	e := newEngine(b, dd)
	for i := 0; b.Loop(); i++ {
		p := &Plan{Command: "backfill"}
		for j := range n {
			path := fmt.Sprintf("/ml/%d", j)
			p.Items = append(p.Items, Item{Kind: KindSet, Path: path, Expect: version(b, dd, path), After: []byte(fmt.Sprintf("v%d", i+1))})
		}
		if _, err := e.Apply(ctx, p, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyBackfillRun is one back-fill batch: 100 managed-ledger nodes of
// about 5 kB rewritten in one run. It reports the journal's fsyncs per run.
func BenchmarkApplyBackfillRun(b *testing.B) {
	dd, _ := newDataDir(b)
	const n = 100
	value := func(gen int) []byte { return []byte(fmt.Sprintf("%d %s", gen, strings.Repeat("x", 5000))) }
	for i := range n {
		if _, err := dd.Metadata.CompareAndSet(fmt.Sprintf("/ml/%d", i), 0, value(0)); err != nil {
			b.Fatal(err)
		}
	}
	e := newEngine(b, dd)
	if _, err := e.Recover(ctx); err != nil {
		b.Fatal(err)
	}
	syncs := 0
	e.OnSync = func(string) { syncs++ }
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		p := &Plan{Command: "index backfill"}
		for j := range n {
			path := fmt.Sprintf("/ml/%d", j)
			p.Items = append(p.Items, Item{Kind: KindSet, Path: path, Expect: version(b, dd, path), After: value(i + 1)})
		}
		b.StartTimer()
		if _, err := e.Apply(ctx, p, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(syncs)/float64(b.N), "journal-fsyncs/op")
}

// BenchmarkReadRuns: the start-up read of a journal of 200 finished back-fill
// runs (100 nodes of 500 B each) that the heads file does not list (the first
// start after they were journaled), against a plain read of each record's ends.
func BenchmarkReadRuns(b *testing.B) {
	const nodes, runs = 100, 200
	benchJournalRead(b, nodes, runs, 500, dropHeads, readRunsOf(runs), readEachEnds)
}

// BenchmarkReadRunsListed: the same start-up read when the heads file lists every
// run (every later start), against a plain listing of the journal folder, a stat
// of each record and a read of the heads file.
func BenchmarkReadRunsListed(b *testing.B) {
	const nodes, runs = 100, 200
	listAll := func(dir string) {
		dropHeads(dir)
		if _, err := readRuns(dir, true); err != nil {
			b.Fatal(err)
		}
		if h := readHeads(dir); len(h) != runs {
			b.Fatalf("heads file lists %d runs, want %d", len(h), runs)
		}
	}
	bare := func(b *testing.B, dir string, files []string) {
		if _, err := os.ReadDir(dir); err != nil {
			b.Fatal(err)
		}
		for _, path := range files {
			if _, err := os.Lstat(path); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := os.ReadFile(filepath.Join(dir, headsFileName)); err != nil {
			b.Fatal(err)
		}
	}
	benchJournalRead(b, nodes, runs, 500, listAll, readRunsOf(runs), bare)
}

func dropHeads(dir string) { os.Remove(filepath.Join(dir, headsFileName)) }

// readRunsOf is a dry run's start-up read, checked: runs finished runs.
func readRunsOf(runs int) func(dir string) error {
	return func(dir string) error {
		got, err := readRuns(dir, false)
		if err == nil && (len(got) != runs || got[runs-1].rec != nil) {
			err = fmt.Errorf("%d runs, the last read whole: %v", len(got), got[runs-1].rec != nil)
		}
		return err
	}
}

// BenchmarkList: journal list (and undo's check, and run-id lookups) over a journal
// of 50 back-fill runs of 100 nodes of 5 kB (70 MB of records). Its B/op
// (-benchmem) must not grow with the items journaled.
func BenchmarkList(b *testing.B) {
	const nodes, runs = 100, 50
	benchJournalRead(b, nodes, runs, 5000, func(string) {}, func(dir string) error {
		got, err := List(dir)
		if err == nil && (len(got) != runs || got[0].Items != nodes) {
			err = fmt.Errorf("%d runs, the first of %d items", len(got), got[0].Items)
		}
		return err
	}, readEachEnds)
}

// benchJournalRead journals runs committed back-fill runs of nodes nodes of size
// bytes, calls setup on the journal, then times read over it against bare, the
// plain reads of the bytes read needs.
func benchJournalRead(b *testing.B, nodes, runs, size int, setup func(dir string), read func(dir string) error,
	bare func(b *testing.B, dir string, files []string)) {
	dd, _ := newDataDir(b)
	value := func(gen int) []byte { return []byte(fmt.Sprintf("%d %s", gen, strings.Repeat("x", size))) }
	for i := range nodes {
		if _, err := dd.Metadata.CompareAndSet(fmt.Sprintf("/ml/%d", i), 0, value(0)); err != nil {
			b.Fatal(err)
		}
	}
	e := newEngine(b, dd)
	for i := range runs {
		p := &Plan{Command: "index backfill"}
		for j := range nodes {
			path := fmt.Sprintf("/ml/%d", j)
			p.Items = append(p.Items, Item{Kind: KindSet, Path: path, Expect: version(b, dd, path), After: value(i + 1)})
		}
		if _, err := e.Apply(ctx, p, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	files, err := recordFiles(e.dir)
	if err != nil || len(files) != runs {
		b.Fatalf("%d record files, %v", len(files), err)
	}
	setup(e.dir)
	var ours, plain time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := read(e.dir); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		bare(b, e.dir, files)
		ours, plain = ours+t1.Sub(t0), plain+time.Since(t1)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/1e3/float64(b.N*runs), "µs/record")
	b.ReportMetric(plain.Seconds()/ours.Seconds(), "ours/bare-speed")
}

// readEachEnds reads each record's first and last 4 kB, the bytes the start-up
// and listing readers need of a record they read.
func readEachEnds(b *testing.B, _ string, files []string) {
	for _, path := range files {
		readEnds(b, path, 4<<10)
	}
}

// readEnds reads a file's first and last n bytes, as plainly as Go can.
func readEnds(b *testing.B, path string, n int64) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, min(n, fi.Size()))
	if _, err := f.ReadAt(buf, 0); err != nil {
		b.Fatal(err)
	}
	if _, err := f.ReadAt(buf, fi.Size()-int64(len(buf))); err != nil {
		b.Fatal(err)
	}
}
