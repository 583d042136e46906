package zkdata_test

import (
	"path/filepath"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/store/zkdata"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// ZooKeeper dataDirs (zk-data:), seeded by writing through a real ZooKeeper
// whose files the backend then reads.

func zkDataUnreachable(t *testing.T) (string, error) {
	dir := filepath.Join(t.TempDir(), "gone")
	_, err := testutil.OpenMetadata(t, "zk-data:"+dir, readOnly)
	return dir, err
}

// readOnly: offline readers only read.
var readOnly = store.Options{ReadOnly: true}

func TestContractZKData(t *testing.T) {
	storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
		srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
		storetest.Seed(t, testutil.MustOpenMetadataURL(t, "zk://"+srv.Addr, false), seed)
		srv.Stop()
		return storetest.Metadata{Store: testutil.MustOpenMetadata(t, "zk-data:"+srv.DataDir, readOnly), ReadOnly: true, Unreachable: zkDataUnreachable}
	})
}

// The dataDir a real ZooKeeper wrote is that server's tree: every node, value
// and version, while it runs and after a stop and restart.
func TestZKDataEqualsLiveTwin(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	live := testutil.MustOpenMetadataURL(t, "zk://"+srv.Addr, false)
	storetest.Seed(t, live, storetest.MetadataSeed())
	// Versions past 1, a deleted node and a recreated one.
	a := storetest.SeedRoot + "/a"
	n, err := live.Get(a)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if n.Version, err = live.CompareAndSet(a, n.Version, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	gone := storetest.WriteRoot + "/gone"
	v, err := live.CompareAndSet(gone, 0, []byte("soon deleted"))
	if err != nil {
		t.Fatal(err)
	}
	if err := live.CompareAndDelete(gone, v); err != nil {
		t.Fatal(err)
	}
	storetest.SameTree(t, testutil.MustOpenMetadata(t, "zk-data:"+srv.DataDir, readOnly), live, "")
	srv.Stop()
	srv.Restart()
	storetest.SameTree(t, testutil.MustOpenMetadata(t, "zk-data:"+srv.DataDir, readOnly), testutil.MustOpenMetadataURL(t, "zk://"+srv.Addr, true), "")
}

// The same contract, the dataDir read onto disk as a large one is.
func TestContractZKDataSpilled(t *testing.T) {
	zkdata.ForceSpill(t)
	TestContractZKData(t)
}

// The same twin, the dataDir read onto disk as a large one is.
func TestZKDataSpilledEqualsLiveTwin(t *testing.T) {
	zkdata.ForceSpill(t)
	TestZKDataEqualsLiveTwin(t)
}
