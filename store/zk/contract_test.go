package zk_test

import (
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// Live ZooKeeper (zk://), seeded through the backend's own writes to a real server.

func zkUnreachable(t *testing.T) (string, error) {
	addr := storetest.ClosedAddr(t)
	_, err := testutil.OpenMetadataURL(t, "zk://"+addr, true, 1500*time.Millisecond)
	return addr, err
}

func TestContractZK(t *testing.T) {
	t.Run("writable", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
			mb := testutil.MustOpenMetadataURL(t, "zk://"+srv.Addr, false)
			storetest.Seed(t, mb, seed)
			return storetest.Metadata{Store: mb, Unreachable: zkUnreachable}
		})
	})
	t.Run("read-only", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
			storetest.Seed(t, testutil.MustOpenMetadataURL(t, "zk://"+srv.Addr, false), seed)
			return storetest.Metadata{Store: testutil.MustOpenMetadataURL(t, "zk://"+srv.Addr, true), ReadOnly: true, Cut: srv.Stop, Unreachable: zkUnreachable}
		})
	})
}
