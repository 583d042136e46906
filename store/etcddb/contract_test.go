package etcddb_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/etcddb"
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// etcd bbolt db files (etcd-db:), seeded by writing through a real etcd whose
// db file the backend then reads.

func etcdDBUnreachable(t *testing.T) (string, error) {
	path := filepath.Join(t.TempDir(), "gone", "db")
	_, err := testutil.OpenMetadata(t, "etcd-db:"+path, readOnly)
	return path, err
}

// readOnly: offline readers only read.
var readOnly = store.Options{ReadOnly: true}

func TestContractEtcdDB(t *testing.T) {
	storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
		srv := testutil.StartEtcd(t)
		storetest.Seed(t, testutil.MustOpenMetadataURL(t, "etcd:"+srv.Endpoint, false), seed)
		srv.Stop()
		return storetest.Metadata{Store: testutil.MustOpenMetadata(t, "etcd-db:"+srv.DBFile(), readOnly), ReadOnly: true, Unreachable: etcdDBUnreachable}
	})
}

// The db file of a real etcd is that server's keyspace: every key, value and
// version, read while the server runs (from a copy: it holds the file's lock).
func TestEtcdDBEqualsLiveTwin(t *testing.T) {
	srv := testutil.StartEtcd(t)
	live := testutil.MustOpenMetadataURL(t, "etcd:"+srv.Endpoint, false)
	storetest.Seed(t, live, storetest.MetadataSeed())
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
	time.Sleep(300 * time.Millisecond) // past etcd's 100 ms backend commit
	storetest.SameTree(t, testutil.MustOpenMetadata(t, "etcd-db:"+srv.DBFile(), readOnly), live, "")
}

// The same contract, the db read onto disk as a large one is.
func TestContractEtcdDBSpilled(t *testing.T) {
	etcddb.ForceSpill(t)
	TestContractEtcdDB(t)
}

// The same twin, the db read onto disk as a large one is.
func TestEtcdDBSpilledEqualsLiveTwin(t *testing.T) {
	etcddb.ForceSpill(t)
	TestEtcdDBEqualsLiveTwin(t)
}
