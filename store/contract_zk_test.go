package store_test

import (
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/internal/testutil"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
)

// Live ZooKeeper (zk://), seeded through the backend's own writes to a real server.

func openZKContract(t *testing.T, addr string, readOnly bool) store.MetadataBackend {
	t.Helper()
	u, err := store.ParseMetadataURL("zk://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := store.OpenMetadata(u, store.Options{ReadOnly: readOnly, Remote: store.RemoteOptions{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mb.Close() })
	return mb
}

func zkUnreachable(t *testing.T) (string, error) {
	addr := storetest.ClosedAddr(t)
	u, err := store.ParseMetadataURL("zk://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := store.OpenMetadata(u, store.Options{ReadOnly: true, Remote: store.RemoteOptions{Timeout: 1500 * time.Millisecond}})
	if err == nil {
		mb.Close()
	}
	return addr, err
}

func TestContractZK(t *testing.T) {
	t.Run("writable", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
			mb := openZKContract(t, srv.Addr, false)
			storetest.Seed(t, mb, seed)
			return storetest.Metadata{Store: mb, Unreachable: zkUnreachable}
		})
	})
	t.Run("read-only", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
			storetest.Seed(t, openZKContract(t, srv.Addr, false), seed)
			return storetest.Metadata{Store: openZKContract(t, srv.Addr, true), ReadOnly: true, Cut: srv.Stop, Unreachable: zkUnreachable}
		})
	})
}
