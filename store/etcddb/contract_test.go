package etcddb_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// etcd bbolt db files (etcd-db:), seeded by writing through a real etcd whose
// db file the backend then reads.

func openEtcdDBContract(t *testing.T, path string) (store.MetadataBackend, error) {
	t.Helper()
	u, err := store.ParseMetadataURL("etcd-db:" + path)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := datadir.OpenMetadata(u, store.Options{ReadOnly: true})
	if err == nil {
		t.Cleanup(func() { mb.Close() })
	}
	return mb, err
}

func mustOpenEtcdDBContract(t *testing.T, path string) store.MetadataBackend {
	t.Helper()
	mb, err := openEtcdDBContract(t, path)
	if err != nil {
		t.Fatal(err)
	}
	return mb
}

func etcdDBUnreachable(t *testing.T) (string, error) {
	path := filepath.Join(t.TempDir(), "gone", "db")
	_, err := openEtcdDBContract(t, path)
	return path, err
}

func TestContractEtcdDB(t *testing.T) {
	storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
		srv := testutil.StartEtcd(t)
		storetest.Seed(t, testutil.MustOpenMetadataURL(t, "etcd:"+srv.Endpoint, false), seed)
		srv.Stop()
		return storetest.Metadata{Store: mustOpenEtcdDBContract(t, srv.DBFile()), ReadOnly: true, Unreachable: etcdDBUnreachable}
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
	storetest.SameTree(t, mustOpenEtcdDBContract(t, srv.DBFile()), live, "")
}
