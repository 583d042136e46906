package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// benchRow is a row of the size of check's coverage rows.
type benchRow struct {
	Topic       string `json:"topic" table:"TOPIC"`
	Indexed     bool   `json:"indexed" table:"INDEXED"`
	WithEntries int    `json:"ledgers_with_entries" table:"LEDGERS WITH ENTRIES"`
	Covered     int    `json:"ledgers_with_property" table:"WITH PROPERTY"`
}

func benchRowAt(i int) benchRow {
	return benchRow{Topic: "persistent://tenant/ns/topic-" + strconv.Itoa(i), Indexed: i%2 == 0, WithEntries: i % 100, Covered: i % 7}
}

func benchFindingAt(i int) Finding {
	return Finding{Kind: "ledger-missing", Severity: SeverityError, Location: "/managed-ledgers/tenant/ns/persistent/topic-" + strconv.Itoa(i),
		Message: "ledger 12345 is listed by the managed ledger but has no node and no entries",
		Hint:    "ledgermedic check --severity error", LedgerID: Int64(int64(i))}
}

// streamDoc is a document of n streamed rows and n streamed findings, made
// one at a time as they print.
func streamDoc(n int) *Document {
	fs := FindingStream{Count: n, Each: func(yield func(Finding) error) error {
		for i := range n {
			if err := yield(benchFindingAt(i)); err != nil {
				return err
			}
		}
		return nil
	}}
	d := &Document{FindingStream: &fs, Notes: []string{"streamed"}}
	d.Add(Stream("coverage", "firstEntryIndex coverage", func(yield func(benchRow) error) error {
		for i := range n {
			if err := yield(benchRowAt(i)); err != nil {
				return err
			}
		}
		return nil
	}))
	return d
}

// BenchmarkStreamPrint prints a streamed document of 1,000,000 rows and
// 1,000,000 findings in each format. Baselines: "whole-json", the same rows
// and findings in memory encoded whole as printJSON did before it streamed,
// and "floor", the least any JSON printer of them must do, json.Marshal of
// each row and finding into a buffered discard:
//
//	go test ./report -run XXX -bench StreamPrint -benchtime 1x
func BenchmarkStreamPrint(b *testing.B) {
	const n = 1_000_000
	for _, f := range []Format{FormatJSON, FormatJSONL, FormatTable} {
		b.Run(string(f), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := PrintWith(io.Discard, streamDoc(n), Options{Format: f, Width: 120}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*n), "ns/item")
		})
	}
	b.Run("whole-json", func(b *testing.B) {
		// The same document in memory, encoded whole as printJSON did before
		// it streamed (wholeJSON); building it is not timed.
		rows, fs := make([]benchRow, n), make([]Finding, n)
		for i := range n {
			rows[i], fs[i] = benchRowAt(i), benchFindingAt(i)
		}
		d := &Document{Findings: fs, Notes: []string{"streamed"}}
		d.Add(Rows("coverage", "firstEntryIndex coverage", rows))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := wholeJSON(d); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*n), "ns/item")
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := bufio.NewWriterSize(io.Discard, outputBuffer)
			for i := range n {
				for _, v := range []any{benchRowAt(i), benchFindingAt(i)} {
					bs, err := json.Marshal(v)
					if err != nil {
						b.Fatal(err)
					}
					w.Write(bs)
				}
			}
			w.Flush()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*n), "ns/item")
	})
}

// envMemChild makes the test binary a child of TestStreamMemoryFlat: it
// prints a streamed document of "FORMAT:N" rows and findings to nowhere and
// says the most heap it held (memLine).
const envMemChild = "LEDGERMEDIC_REPORT_MEM_CHILD"

// memLine starts the child's report of its peak live heap, in bytes.
const memLine = "peak-live-heap "

// tinyRow keeps the memory test fast: what it measures is what the printer
// holds, not the rows.
type tinyRow struct {
	N int `json:"n" table:"N"`
}

// The printer holds no more memory for a million streamed rows than for a
// hundred thousand: each format prints 100,000 and then 1,000,000 rows and
// findings in a child process of its own, which collects its garbage every
// 25,000 rows and findings and measures the heap left (what the printer holds
// there and then: the same point of a page in both runs). The peak of the
// second run must be within a small constant of the first's; a printer that
// kept the rows or the findings would hold tens of MB more. The children's
// peak RSS (VmHWM, rusage.PrintPeak) is logged: it adds the collector's lag behind the
// allocations, which the load of the machine sways.
func TestStreamMemoryFlat(t *testing.T) {
	if spec := os.Getenv(envMemChild); spec != "" {
		memChild(t, spec)
		return
	}
	if testing.Short() {
		t.Skip("prints 2.2M rows and findings per format")
	}
	// slack is what the peak may grow by: 900,000 more rows held as cells
	// would take 40 MB, the findings 150 MB.
	const slack = 1 << 20
	for _, f := range []Format{FormatJSON, FormatJSONL, FormatTable} {
		small, smallRSS := memPeak(t, f, 100_000)
		large, largeRSS := memPeak(t, f, 1_000_000)
		t.Logf("-o %s: peak live heap %d / %d KiB, peak RSS %d / %d KiB at 100k / 1M rows and findings",
			f, small>>10, large>>10, smallRSS, largeRSS)
		if large > small+slack {
			t.Errorf("-o %s: peak live heap %d KiB at 1M rows and findings, %d KiB at 100k: it grows with the rows",
				f, large>>10, small>>10)
		}
	}
}

// memPeak runs the child for n rows and findings in format f and returns the
// peak live heap it reported, in bytes, and its peak RSS in KiB.
func memPeak(t *testing.T, f Format, n int) (heap int64, rssKiB int64) {
	t.Helper()
	out, rssMiB := rusage.RunChild(t, "TestStreamMemoryFlat", fmt.Sprintf("%s=%s:%d", envMemChild, f, n))
	_, rest, ok := strings.Cut(out, memLine)
	if !ok {
		t.Fatalf("child -o %s %d did not report its heap:\n%s", f, n, out)
	}
	heap, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
	if err != nil {
		t.Fatalf("child -o %s %d: %v", f, n, err)
	}
	return heap, int64(rssMiB * 1024)
}

func memChild(t *testing.T, spec string) {
	f, count, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(count)
	if err != nil {
		t.Fatalf("%s=%q", envMemChild, spec)
	}
	var peak uint64
	sample := func(i int) {
		if i%25_000 != 0 {
			return
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	fs := FindingStream{Count: n, Each: func(yield func(Finding) error) error {
		for i := range n {
			sample(i)
			if err := yield(Finding{Kind: "k", Severity: SeverityInfo, Location: strconv.Itoa(i)}); err != nil {
				return err
			}
		}
		return nil
	}}
	d := &Document{FindingStream: &fs}
	d.Add(Stream("rows", "Rows", func(yield func(tinyRow) error) error {
		for i := range n {
			sample(i)
			if err := yield(tinyRow{i}); err != nil {
				return err
			}
		}
		return nil
	}))
	w := &countingWriter{fail: 1 << 62}
	if err := PrintWith(w, d, Options{Format: Format(f)}); err != nil {
		t.Fatal(err)
	}
	if w.n < 2*n {
		t.Fatalf("printed %d bytes for %d rows and findings", w.n, n)
	}
	fmt.Printf("%s%d\n", memLine, peak)
	rusage.PrintPeak(t)
}
