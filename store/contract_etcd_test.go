package store_test

import (
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/internal/testutil"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
)

// Live etcd (etcd://), seeded through the backend's own writes to a real server.

func openEtcdContract(t *testing.T, endpoint string, readOnly bool, timeout time.Duration) (store.MetadataBackend, error) {
	t.Helper()
	u, err := store.ParseMetadataURL("etcd:" + endpoint)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := store.OpenMetadata(u, store.Options{ReadOnly: readOnly, Remote: store.RemoteOptions{Timeout: timeout}})
	if err == nil {
		t.Cleanup(func() { mb.Close() })
	}
	return mb, err
}

func mustOpenEtcdContract(t *testing.T, endpoint string, readOnly bool) store.MetadataBackend {
	t.Helper()
	mb, err := openEtcdContract(t, endpoint, readOnly, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return mb
}

func etcdUnreachable(t *testing.T) (string, error) {
	addr := storetest.ClosedAddr(t)
	_, err := openEtcdContract(t, "http://"+addr, true, 1500*time.Millisecond)
	return addr, err
}

func TestContractEtcd(t *testing.T) {
	t.Run("writable", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			srv := testutil.StartEtcd(t)
			mb := mustOpenEtcdContract(t, srv.Endpoint, false)
			storetest.Seed(t, mb, seed)
			return storetest.Metadata{Store: mb, Unreachable: etcdUnreachable}
		})
	})
	t.Run("read-only", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			srv := testutil.StartEtcd(t)
			storetest.Seed(t, mustOpenEtcdContract(t, srv.Endpoint, false), seed)
			return storetest.Metadata{Store: mustOpenEtcdContract(t, srv.Endpoint, true), ReadOnly: true, Cut: srv.Stop, Unreachable: etcdUnreachable}
		})
	})
}
