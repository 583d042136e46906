//go:build !race

package zkdata_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/zkdisk"
	"github.com/ledgermedic/ledgermedic/store/zkdata"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestOpenWalkMemoryFlat: open + walk + Get of a dataDir of 4N nodes peaks at
// about the memory of one of N when read onto disk (with a small sort budget,
// so that both sizes go through runs on disk, as large ones do); the same two
// held in memory do grow, which shows the measure can
// tell. Each open runs in a child process (testutil.MemoryFlat); with
// LEDGERMEDIC_ZKDATA_MEM_URLS set to zk-data: URLs it measures those instead
// (docs/benchmarks.md). Not built with -race: the detector's instrumentation
// multiplies memory.
func TestOpenWalkMemoryFlat(t *testing.T) {
	m := testutil.MemoryFlat{Test: "TestOpenWalkMemoryFlat", Env: "LEDGERMEDIC_ZKDATA_MEM", Setup: func(mode string) {
		switch mode {
		case "spill":
			zkdata.SetSpillAbove(-1)
			zkdata.SetSortBudget(4 << 20)
		case "memory":
			zkdata.SetSpillAbove(1 << 62)
		}
	}}
	m.Check(t, 40_000, func(dir string, nodes int) string {
		writeMemDataDir(t, dir, nodes)
		return "zk-data:" + dir
	})
}

// writeMemDataDir writes a dataDir of about nodes Pulsar-like nodes: a snapshot
// of most of them, and a log that changes and adds some.
func writeMemDataDir(t *testing.T, dataDir string, nodes int) {
	t.Helper()
	dir := filepath.Join(dataDir, "version-2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "snapshot.10"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sw, err := zkdisk.NewSnapshotWriter(f, nil, map[int64][]zkdisk.ACL{1: zkdisk.OpenACL})
	if err != nil {
		t.Fatal(err)
	}
	value := func(i, size int) []byte {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i + j)
		}
		return b
	}
	put := func(p string, data []byte) {
		if err := sw.WriteNode(zkdisk.SnapNode{Path: p, Data: data, ACLRef: 1, Stat: zkdisk.Stat{Czxid: 1, Mzxid: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/", "/managed-ledgers", "/managed-ledgers/public", "/managed-ledgers/public/default", "/managed-ledgers/public/default/persistent", "/ledgers", "/ledgers/00"} {
		put(p, nil)
	}
	topics := nodes / 4
	for i := range topics {
		put(fmt.Sprintf("/managed-ledgers/public/default/persistent/topic-%07d", (i*7919)%topics), value(i, 120+i%180))
	}
	for hi := range (3*topics + 9999) / 10000 {
		d := fmt.Sprintf("/ledgers/00/%04d", hi)
		put(d, nil)
		for lo := range min(10000, 3*topics-hi*10000) {
			put(fmt.Sprintf("%s/L%04d", d, lo), value(lo, 60+lo%120))
		}
	}
	if err := sw.Finish(nil, nil); err != nil {
		t.Fatal(err)
	}
	log := zkdisk.AppendLogHeader(nil)
	for i := range nodes / 100 {
		z := int64(0x11 + i)
		h := zkdisk.TxnHeader{ClientID: 0x100, Zxid: z, Time: 1.7e12, Type: zkdisk.OpSetData}
		var rec zkdisk.Record = &zkdisk.SetDataTxn{Type: zkdisk.OpSetData, Path: fmt.Sprintf("/managed-ledgers/public/default/persistent/topic-%07d", i), Data: value(i, 200), Version: 1}
		if i%2 == 1 {
			h.Type = zkdisk.OpCreate
			rec = &zkdisk.CreateTxn{Type: zkdisk.OpCreate, Path: "/managed-ledgers/public/default/persistent/new-" + strconv.Itoa(i), Data: value(i, 150), ParentCVersion: -1}
		}
		log = zkdisk.AppendLogRecord(log, zkdisk.EncodeTxn(h, rec, nil))
	}
	if err := os.WriteFile(filepath.Join(dir, "log.11"), log, 0o644); err != nil {
		t.Fatal(err)
	}
}
