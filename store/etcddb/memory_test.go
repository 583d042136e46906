//go:build !race

package etcddb_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ledgermedic/ledgermedic/store/etcddb"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestOpenWalkMemoryFlat: open + walk + Get of a db of 4N keys peaks at
// about the memory of one of N when read onto disk (with a small sort budget and the
// mmap's pages dropped every MB,
// so that both sizes go through runs on disk, as large ones do); the same two
// held in memory do grow (the mmap's pages stay resident), which shows the measure can
// tell. Each open runs in a child process (testutil.MemoryFlat); with
// LEDGERMEDIC_ETCDDB_MEM_URLS set to etcd-db: URLs it measures those instead
// (docs/benchmarks.md). Not built with -race: the detector's instrumentation
// multiplies memory.
func TestOpenWalkMemoryFlat(t *testing.T) {
	m := testutil.MemoryFlat{Test: "TestOpenWalkMemoryFlat", Env: "LEDGERMEDIC_ETCDDB_MEM", Setup: func(mode string) {
		switch mode {
		case "spill":
			etcddb.SetSpillAbove(-1)
			etcddb.SetSortBudget(4 << 20)
			etcddb.SetDropEvery(1 << 20)
		case "memory":
			etcddb.SetSpillAbove(1 << 62)
		}
	}}
	m.Check(t, 25_000, func(dir string, nodes int) string {
		writeMemDB(t, filepath.Join(dir, "db"), nodes)
		return "etcd-db:" + filepath.Join(dir, "db")
	})
}

// writeMemDB writes a db of about keys Pulsar-like keys in etcd's layout: each
// written once, a tenth rewritten, a fiftieth deleted.
func writeMemDB(t *testing.T, file string, keys int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	var revs []layoutRev
	for i := range keys {
		p := fmt.Sprintf("/managed-ledgers/public/default/persistent/topic-%07d", (i*7919)%keys)
		if i%4 != 0 {
			p = fmt.Sprintf("/ledgers/00/%04d/L%04d", i/10000, i%10000)
		}
		v := make([]byte, 60+i%200)
		for j := range v {
			v[j] = byte(i + j)
		}
		revs = append(revs, layoutRev{path: p, version: 1, value: v})
		if i%10 == 0 {
			revs = append(revs, layoutRev{path: p, version: 2, value: v[:len(v)/2]})
		}
		if i%50 == 0 {
			revs = append(revs, layoutRev{path: p, tomb: true})
		}
	}
	if err := writeEtcdLayout(file, revs); err != nil {
		t.Fatal(err)
	}
}
