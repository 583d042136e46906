package app

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestZooKeeperBackfillRewritesBigNode: on a ZooKeeper run as Pulsar runs it
// (jute.maxbuffer 10 MiB), a managed ledger whose node is over 5 MiB (tens of
// thousands of offloaded ledgers, uncompressed) is rewritten by back-fill as on
// the data dir; told a smaller limit, it refuses the node before writing it.
func TestZooKeeperBackfillRewritesBigNode(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{JVMFlags: []string{"-Djute.maxbuffer=10485760"}})
	url := "zk://" + srv.Addr
	dir := filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "--metadata", url, "fixtures", "generate", "--out", dir, "--seed", "6", "--topics", "6")
	ref := filepath.Join(t.TempDir(), "ref")
	mustBin(t, 0, "fixtures", "generate", "--out", ref, "--seed", "6", "--topics", "6")

	path := backfilledManagedLedger(t, ref)
	info, _, err := formats.DecodeManagedLedgerInfo(testutil.Dump(t, ref).Nodes[path])
	if err != nil {
		t.Fatal(err)
	}
	info.LedgerInfo = append(offloadedLedgers(34_000), info.LedgerInfo...)
	big, err := formats.EncodeManagedLedgerInfo(info, formats.Plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(big) < 5<<20 || len(big) > 10<<20 {
		t.Fatalf("the managed ledger is %d bytes, want 5 to 10 MiB", len(big))
	}
	b := testutil.EditDataDir(t, ref)
	b.Node(path, big)
	b.Close()
	zkSetBig(t, srv.Addr, path, big)

	// Told that the ensemble takes 4 MiB, the back-fill refuses the node before it
	// writes it, naming the node, its size and the limit.
	_, stderr, code := runBin(t, "-d", dir, "--metadata", url+"?jute-maxbuffer=4194304", "index", "backfill", "--apply")
	if code != 3 {
		t.Fatalf("a %d-byte node over a 4 MiB limit: exit %d, want 3\n%s", len(big), code, stderr)
	}
	for _, says := range []string{path, "4194304", "nothing was changed"} {
		if !strings.Contains(stderr, says) {
			t.Errorf("the refusal does not say %q:\n%s", says, stderr)
		}
	}
	// The size named is the rewritten value's, a little over the stored one.
	if m := regexp.MustCompile(`": (\d+) bytes`).FindStringSubmatch(stderr); m == nil {
		t.Errorf("the refusal names no size:\n%s", stderr)
	} else if n, _ := strconv.Atoi(m[1]); n < len(big) {
		t.Errorf("the refusal names %d bytes, the node is at least %d", n, len(big))
	}
	if got := zkTree(t, srv.Addr)[path]; !bytes.Equal(got, big) {
		t.Fatalf("a refused node was written (%d bytes)", len(got))
	}

	mustBin(t, -1, "-d", ref, "index", "backfill", "--apply")
	mustBin(t, -1, "-d", dir, "--metadata", url, "index", "backfill", "--apply")
	want := testutil.Dump(t, ref).Nodes[path]
	got := zkTree(t, srv.Addr)[path]
	if bytes.Equal(want, big) {
		t.Fatal("the data-dir back-fill left the big node as it was: the test tests nothing")
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s in ZooKeeper: %d bytes, differs from the data-dir back-fill (%d bytes)", path, len(got), len(want))
	}
}

// backfilledManagedLedger is the first managed ledger (by path) a back-fill of a
// copy of dir rewrites.
func backfilledManagedLedger(t *testing.T, dir string) string {
	t.Helper()
	probe := filepath.Join(t.TempDir(), "probe")
	testutil.CopyDir(t, dir, probe)
	before := testutil.Dump(t, probe).Nodes
	mustBin(t, -1, "-d", probe, "index", "backfill", "--apply")
	var changed []string
	for p, v := range testutil.Dump(t, probe).Nodes {
		if strings.HasPrefix(p, "/managed-ledgers/") && strings.Count(p, "/") == 5 && !bytes.Equal(before[p], v) {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		t.Fatal("back-fill rewrites no managed ledger of the fixture")
	}
	sort.Strings(changed)
	return changed[0]
}

// offloadedLedgers are n ledgers offloaded to S3 and deleted from BookKeeper, as
// the offloader records them (driver metadata: bucket, region, endpoint). Their
// ids are far above the fixture's.
func offloadedLedgers(n int) []*mlpb.ManagedLedgerInfo_LedgerInfo {
	kv := func(k, v string) *mlpb.KeyValue { return &mlpb.KeyValue{Key: proto.String(k), Value: proto.String(v)} }
	out := make([]*mlpb.ManagedLedgerInfo_LedgerInfo, n)
	for i := range out {
		ts := int64(1_700_000_000_000 + i*60_000)
		out[i] = &mlpb.ManagedLedgerInfo_LedgerInfo{
			LedgerId: proto.Int64(int64(10_000_000 + i)), Entries: proto.Int64(0), Size: proto.Int64(0), Timestamp: proto.Int64(ts),
			OffloadContext: &mlpb.OffloadContext{
				UidMsb: proto.Int64(int64(i)*7919 + 1), UidLsb: proto.Int64(int64(i)*104729 + 1),
				Complete: proto.Bool(true), BookkeeperDeleted: proto.Bool(true), Timestamp: proto.Int64(ts + 1000),
				DriverMetadata: &mlpb.OffloadDriverMetadata{Name: proto.String("aws-s3"), Properties: []*mlpb.KeyValue{
					kv("bucket", "pulsar-offload-prod"), kv("region", "eu-west-1"),
					kv("serviceEndpoint", fmt.Sprintf("https://s3.eu-west-1.amazonaws.com/%d", i%97)),
				}},
			},
		}
	}
	return out
}

// zkSetBig sets a node of up to 16 MiB with the plain client (its send buffer
// sized for it).
func zkSetBig(t *testing.T, addr, path string, v []byte) {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}), zk.WithMaxConnBufferSize(16<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Set(path, v, -1); err != nil {
		t.Fatalf("set %s (%d bytes): %v", path, len(v), err)
	}
}
