package app

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// Benchmarks of ledgermedic on live bookies (docs/benchmarks.md, "Live BookKeeper"), each a
// ratio of whole processes timed in the same run against real ZooKeeper and
// three real bookies:
//
//	go test ./app -run '^$' -bench 'BenchmarkBK' -benchtime 3x

// timeProcess runs a command with its output discarded and returns its wall
// time; an exit code above 1 (bad input, cannot open) fails. (No peak RSS: a
// child's ru_maxrss keeps the forked test binary's, so /usr/bin/time is the
// tool for that.)
func timeProcess(b *testing.B, name string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LEDGERMEDIC_DATA_DIR=")
	errf, err := os.CreateTemp(b.TempDir(), "stderr-")
	if err != nil {
		b.Fatal(err)
	}
	defer errf.Close()
	cmd.Stderr = errf
	t0 := time.Now()
	err = cmd.Run()
	d := time.Since(t0)
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
		msg, _ := os.ReadFile(errf.Name())
		b.Fatalf("%s %v: %v: %s", filepath.Base(name), args, err, msg)
	}
	return d
}

func needBinary(b *testing.B) {
	if binary == "" {
		b.Fatal("the ledgermedic binary did not build")
	}
}

// BenchmarkBKInspectEntries: `inspect entries` of a 100,000-entry ledger (1 KiB
// Pulsar entries, ensemble 2/2/2, written by the Java client) through
// --ledgers bk:, against the Java client's `bk tool read --no-recovery` of the
// same ledger. Ratio java/ours in wall time; target >= 1.0 (faster than Java).
func BenchmarkBKInspectEntries(b *testing.B) {
	needBinary(b)
	c := testutil.StartBookKeeper(b, testutil.BKOptions{Bookies: 3})
	const n = 100_000
	r := rand.New(rand.NewPCG(5, 6))
	pad := make([]byte, 1000)
	entries := make([][]byte, n)
	for i := range entries {
		for j := range pad {
			pad[j] = byte(r.Uint32())
		}
		entries[i] = testutil.TopicEntry(b, testutil.Message{HasIndex: true, Index: int64(i), Payload: pad,
			Meta: &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(uint64(i)),
				PublishTime: proto.Uint64(1700000000000 + uint64(i))}})
	}
	// bk tool write holds every entry in memory: 100 MB of entries need more than
	// its default 256 MB heap (the bk script: BK_TOOL_HEAP). The read runs with the default.
	heap, had := os.LookupEnv("BK_TOOL_HEAP")
	os.Setenv("BK_TOOL_HEAP", "1g")
	w := c.WriteLedger(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}, entries)
	if had {
		os.Setenv("BK_TOOL_HEAP", heap)
	} else {
		os.Unsetenv("BK_TOOL_HEAP")
	}
	entries = nil
	id := fmt.Sprint(w.LedgerID)
	var ours, java time.Duration
	for b.Loop() {
		ours += timeProcess(b, binary, "--metadata", "zk://"+c.ZK.Addr, "--ledgers", "bk:", "inspect", "entries",
			"--ledger", id, "--limit", fmt.Sprint(n), "-o", "json")
		java += timeProcess(b, testutil.BKScript(), "tool", "read", "--zk", c.ZK.Addr, "--ledger", id, "--password", "", "--no-recovery")
	}
	b.ReportMetric(ours.Seconds()/float64(b.N), "ours-s")
	b.ReportMetric(java.Seconds()/float64(b.N), "java-s")
	b.ReportMetric(java.Seconds()/ours.Seconds(), "java/ours-speed")
}

// BenchmarkBKCheck: `check` of a live cluster (ZooKeeper + 3 bookies: 4 topics
// of 2 ledgers of 5,000 1 KiB entries the Java client wrote) against `check` of
// the same cluster copied by `import --copy-ledgers` into a data dir. The ratio
// datadir/live in wall time is recorded (no target: the live check reads every
// entry over the network from two replicas' bookies).
func BenchmarkBKCheck(b *testing.B) {
	needBinary(b)
	c := testutil.StartBookKeeper(b, testutil.BKOptions{Bookies: 3})
	ms := openLiveMetadata(b, c)
	pad := make([]byte, 1000)
	for i := range 4 {
		topic, _ := formats.ParseTopic(fmt.Sprintf("persistent://public/default/bench-%d", i))
		putBKTopic(b, c, ms, topic, 2, 5000, pad)
	}
	live := []string{"--metadata", "zk://" + c.ZK.Addr, "--ledgers", "bk:"}
	dir := filepath.Join(b.TempDir(), "copy")
	imp := timeProcess(b, binary, append(live, "import", "--out", dir, "--copy-ledgers", "-q")...)
	var liveT, dirT time.Duration
	for b.Loop() {
		liveT += timeProcess(b, binary, append(live, "check", "-q")...)
		dirT += timeProcess(b, binary, "-d", dir, "check", "-q")
	}
	b.ReportMetric(imp.Seconds(), "import-s")
	b.ReportMetric(liveT.Seconds()/float64(b.N), "live-s")
	b.ReportMetric(dirT.Seconds()/float64(b.N), "datadir-s")
	b.ReportMetric(dirT.Seconds()/liveT.Seconds(), "datadir/live-speed")
}
