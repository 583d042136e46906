package etcd_test

import (
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// Live etcd (etcd://), seeded through the backend's own writes to a real server.

func etcdUnreachable(t *testing.T) (string, error) {
	addr := storetest.ClosedAddr(t)
	_, err := testutil.OpenMetadataURL(t, "etcd:http://"+addr, true, 1500*time.Millisecond)
	return addr, err
}

func TestContractEtcd(t *testing.T) {
	t.Run("writable", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			srv := testutil.StartEtcd(t)
			mb := testutil.MustOpenMetadataURL(t, "etcd:"+srv.Endpoint, false)
			storetest.Seed(t, mb, seed)
			return storetest.Metadata{Store: mb, Unreachable: etcdUnreachable}
		})
	})
	t.Run("read-only", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			srv := testutil.StartEtcd(t)
			storetest.Seed(t, testutil.MustOpenMetadataURL(t, "etcd:"+srv.Endpoint, false), seed)
			return storetest.Metadata{Store: testutil.MustOpenMetadataURL(t, "etcd:"+srv.Endpoint, true), ReadOnly: true, Cut: srv.Stop, Unreachable: etcdUnreachable}
		})
	})
}
