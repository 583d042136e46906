package bookie_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// Bookie dirs (bookie:), seeded with ledgers the real Java client wrote to a
// real bookie, read after the bookie and its ZooKeeper stopped (metadata from
// the ZooKeeper dataDir).

func openBookieContract(t *testing.T, zkDataDir, bookieDir string) (*datadir.DataDir, error) {
	t.Helper()
	t.Setenv(store.CacheDirEnv, t.TempDir())
	mu, err := store.ParseMetadataURL("zk-data:" + zkDataDir)
	if err != nil {
		t.Fatal(err)
	}
	lu, err := store.ParseLedgersURL("bookie:" + bookieDir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := datadir.Open("", store.Options{ReadOnly: true, Metadata: &mu, Ledgers: &lu})
	if err == nil {
		t.Cleanup(func() { d.Close() })
	}
	return d, err
}

func TestContractBookieDirs(t *testing.T) {
	storetest.LedgerContract(t, func(t *testing.T, seed [][][]byte) storetest.Ledgers {
		c := testutil.StartBookKeeper(t, testutil.BKOptions{Bookies: 1})
		var ids []int64
		for _, entries := range seed {
			ids = append(ids, c.WriteLedger(testutil.BKWriteArg{}, entries).LedgerID)
		}
		// A ledger whose entry 1 no longer verifies, between good ones.
		lost := bytes.Repeat([]byte("this entry's bytes are flipped on disk "), 4)
		damaged := c.WriteLedger(testutil.BKWriteArg{}, [][]byte{[]byte("good 0"), lost, []byte("good 2"), []byte("good 3")}).LedgerID
		b := c.Bookies[0]
		b.FlipInEntryLog(lost)
		b.Stop()
		c.ZK.Stop()
		d, err := openBookieContract(t, c.ZK.DataDir, b.Dir)
		if err != nil {
			t.Fatal(err)
		}
		unreachable := func(t *testing.T) (string, error) {
			dir := filepath.Join(t.TempDir(), "gone")
			_, err := openBookieContract(t, c.ZK.DataDir, dir)
			return dir, err
		}
		return storetest.Ledgers{Store: d.Ledgers, IDs: ids, ReadOnly: true, Truncated: damaged, Unreachable: unreachable}
	})
}
