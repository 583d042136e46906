package bookkeeper_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
	_ "github.com/ledgermedic/ledgermedic/store/bookkeeper" // registers bk:
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// Live bookies (bk:), seeded with ledgers the real Java client wrote.

func openBKContract(t *testing.T, zkAddr string, timeout time.Duration) (*datadir.DataDir, error) {
	t.Helper()
	mu, err := store.ParseMetadataURL("zk://" + zkAddr)
	if err != nil {
		t.Fatal(err)
	}
	lu, err := store.ParseLedgersURL("bk:")
	if err != nil {
		t.Fatal(err)
	}
	dd, err := datadir.Open("", store.Options{ReadOnly: true, Metadata: &mu, Ledgers: &lu, Remote: store.RemoteOptions{Timeout: timeout}})
	if err == nil {
		t.Cleanup(func() { dd.Close() })
	}
	return dd, err
}

func bkUnreachable(t *testing.T) (string, error) {
	addr := storetest.ClosedAddr(t)
	_, err := openBKContract(t, addr, 1500*time.Millisecond)
	return addr, err
}

func TestContractLiveBookies(t *testing.T) {
	storetest.LedgerContract(t, func(t *testing.T, seed [][][]byte) storetest.Ledgers {
		c := testutil.StartBookKeeper(t, testutil.BKOptions{Bookies: 1})
		var ids []int64
		for _, entries := range seed {
			ids = append(ids, c.WriteLedger(testutil.BKWriteArg{}, entries).LedgerID)
		}
		// A ledger whose entry 1 no longer verifies on its one bookie, between good ones.
		lost := bytes.Repeat([]byte("this entry's bytes are flipped on disk "), 4)
		damaged := c.WriteLedger(testutil.BKWriteArg{}, [][]byte{[]byte("good 0"), lost, []byte("good 2"), []byte("good 3")}).LedgerID
		c.Bookies[0].FlipInEntryLog(lost)
		if err := c.WaitBookies(1, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		dd, err := openBKContract(t, c.ZK.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Ledgers{Store: dd.Ledgers, IDs: ids, ReadOnly: true, Truncated: damaged, Unreachable: bkUnreachable}
	})
}
