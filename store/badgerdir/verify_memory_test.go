//go:build !race

package badgerdir

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestVerifyChildMemoryBounded verifies 48 MB of incompressible tables in one
// child and checks the child's peak resident size stays near what one table
// needs: without its per-table soft memory limit (verifyMemoryLimit) the child's
// GOGC 400 let the heap grow to several times that (90-130 MB on the 4 MB
// tables of a 1M-ledger store, more than the back-fill that started it).
// Not built with -race: the detector's instrumentation multiplies memory (the
// child then passes 100 MB), so the bound is a figure of normal builds only.
func TestVerifyChildMemoryBounded(t *testing.T) {
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := d.NewBulkWriter()
	// Ledger nodes as a 1M-ledger store holds them: short keys, small values
	// Snappy shrinks (every block decompresses into a fresh buffer, the garbage
	// GOGC 400 lets pile up).
	rng := rand.New(rand.NewPCG(3, 5))
	v := []byte("\x08\x03\x10\x02\x18\x02\x20\x00\x28\x00\x32\x0cbookie-1:3181\x32\x0cbookie-2:3181\x38\x00\x40\x00ctime-and-some-properties-application=pulsar,component=managed-ledger,pulsar/managed-ledger=public/default/persistent/orders-000000")
	for i := range 400000 {
		path := fmt.Sprintf("/ledgers/00/%04d/L%04d", i/10000, i%10000)
		for j := len(v) - 6; j < len(v); j++ {
			v[j] = '0' + byte(rng.IntN(10))
		}
		if err := w.PutNode(path, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, MetadataDirName, "*.sst"))
	if len(tables) < 4 {
		t.Fatalf("%d ledger tables, want several to verify in a row", len(tables))
	}
	var checks []tableCheck
	for i, p := range tables {
		checks = append(checks, tableCheck{ID: uint64(i + 1), Path: p, Compressions: []uint32{1, 0, 2}})
	}
	t.Setenv(childAnonEnv, "1")
	// One child verifies them all in a row: the heap GOGC alone lets grow.
	w1 := &verifyFeed{queue: queueOf(checks)}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := startVerifyChild(exe)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	if err := ch.run(w1, func(r tableResult) {
		if r.Problem != "" {
			t.Errorf("table %d: %s", r.ID, r.Problem)
		}
		done++
	}); err != nil {
		t.Fatal(err)
	}
	if done != len(checks) {
		t.Fatalf("%d of %d tables verified", done, len(checks))
	}
	peak := int64(0)
	for _, l := range strings.Split(ch.stderr.String(), "\n") {
		if kb, ok := strings.CutPrefix(l, "rss-anon-kb "); ok {
			n, err := strconv.ParseInt(kb, 10, 64)
			if err != nil {
				t.Fatalf("child's report %q: %v", l, err)
			}
			peak = max(peak, n)
		}
	}
	t.Logf("%d tables verified in one child, anonymous memory at most %d KB before a table", len(checks), peak)
	if peak == 0 || peak > 40<<10 {
		t.Fatalf("verification child's anonymous memory reached %d KB, want (0, 40 MB]", peak)
	}
}

// childAnonEnv makes a verification child of this test binary write its
// anonymous resident memory (RssAnon, KB) to stderr before each table.
const childAnonEnv = "LEDGERMEDIC_TEST_CHILD_ANON"

var _ = func() bool {
	if os.Getenv(childAnonEnv) == "1" {
		prev := verifyChildHook
		verifyChildHook = func(c tableCheck) {
			if b, err := os.ReadFile("/proc/self/status"); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
						fmt.Fprintln(os.Stderr, "rss-anon-kb", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
					}
				}
			}
			if prev != nil {
				prev(c)
			}
		}
	}
	return true
}()

func queueOf(checks []tableCheck) <-chan tableCheck {
	q := make(chan tableCheck, len(checks))
	for _, c := range checks {
		q <- c
	}
	close(q)
	return q
}
