//go:build !race

package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

const envReadMemCase = "LEDGERMEDIC_TEST_READ_MEM_CASE" // "index,dir"

// readMemCases are read commands whose memory once grew with what they list,
// each with the exit code it gives on the fixture below (OUT: a file it writes).
var readMemCases = []struct {
	name string
	args []string
	code int
}{
	// The skipped versions in a list and their table built whole: about 1.5 KB
	// each (250,000 lost: 502 MB, against 131 MB spilled).
	{"schema capture", []string{"schema", "capture", "--out", "OUT"}, 1},
	// Every version's row and ledger looked up at once: 300,000 topics, 1.1 GB
	// (146 MB looked up a chunk at a time).
	{"inspect schemas", []string{"inspect", "schemas", "-o", "json"}, 0},
}

// TestReadMemoryFlat: the peak memory of readMemCases does not grow with the
// cluster, on fixtures of 16,000 and 64,000 topics with a lost schema ledger
// per topic (about half the versions). Each run is a fresh child process (the
// test binary) that prints its own peak. Below about 16,000 topics the peak
// still grows as the fixed budgets fill (capture at 4,000: 78 MB, 16,000: 112).
// Before: capture 131 vs 223 MiB, inspect schemas 153 vs 284 MiB.
func TestReadMemoryFlat(t *testing.T) {
	if c := os.Getenv(envReadMemCase); c != "" {
		readMemChild(t, c)
		return
	}
	if testing.Short() {
		t.Skip("generates 80,000 topics")
	}
	const small, large = 16_000, 64_000
	dirs := map[int]string{}
	for _, topics := range []int{small, large} {
		dirs[topics] = filepath.Join(t.TempDir(), "dd")
		if _, err := fixtures.Generate(context.Background(), dirs[topics], fixtures.Options{Seed: 3, Topics: topics,
			LedgersPerTopic: 1, EntriesPerLedger: 1, LoseSchemaLedgers: topics}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range readMemCases {
		t.Run(c.name, func(t *testing.T) {
			peak := func(topics int) float64 {
				return rusage.PeakOfChild(t, "TestReadMemoryFlat", envReadMemCase+"="+strconv.Itoa(i)+","+dirs[topics])
			}
			a, b := peak(small), peak(large)
			t.Logf("peak RSS: %d topics %.1f MiB, %d topics %.1f MiB", small, a, large, b)
			if b > a*1.3+16 {
				t.Errorf("peak RSS grew from %.1f MiB (%d topics) to %.1f MiB (%d topics)", a, small, b, large)
			}
		})
	}
}

func readMemChild(t *testing.T, c string) {
	i, dir, _ := strings.Cut(c, ",")
	n, err := strconv.Atoi(i)
	if err != nil || n >= len(readMemCases) {
		t.Fatalf("%s=%q: no such case", envReadMemCase, c)
	}
	rc := readMemCases[n]
	args := []string{"-d", dir}
	for _, a := range rc.args {
		args = append(args, strings.ReplaceAll(a, "OUT", filepath.Join(t.TempDir(), "out")))
	}
	// Standard output is counted, not kept: a buffer of it would be the peak.
	var out byteCounter
	var errb bytes.Buffer
	code := Run(context.Background(), append([]string{"ledgermedic"}, args...),
		Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")})
	if code != rc.code || out == 0 {
		t.Fatalf("%s: exit %d, want %d; %d bytes printed\n%.2000s", rc.name, code, rc.code, out, errb.String())
	}
	rusage.PrintPeak(t)
}

// byteCounter counts what is written to it.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}
