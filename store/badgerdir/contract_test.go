package badgerdir_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// The data dir's own Badger databases, written through a writable open.
const (
	truncatedPrefix = "/trunc"
	truncatedLedger = 900
	// bigValue goes to Badger's value log, which TruncateValueLogs cuts in half.
	bigValue = 2 << 20
)

// badgerDataDir creates a data dir holding the seeds (and, when damaged, a node
// and an entry whose values lose their tails between good ones) and returns its
// path, closed.
func badgerDataDir(t *testing.T, nodes []store.Node, ledgers [][][]byte, damaged bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dd")
	d, err := datadir.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Seed(t, d.Metadata, nodes)
	for i, entries := range ledgers {
		for e, v := range entries {
			if err := d.Ledgers.PutEntry(int64(i+1), int64(e), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if damaged {
		// Small values first, the big ones last: only these sit at the value log's end.
		for _, p := range []string{"/a", "/c", "/d"} {
			if _, err := d.Metadata.CompareAndSet(truncatedPrefix+p, 0, []byte("good")); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range []int64{0, 2, 3} {
			if err := d.Ledgers.PutEntry(truncatedLedger, e, []byte("good")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.Metadata.CompareAndSet(truncatedPrefix+"/b", 0, bytes.Repeat([]byte("x"), bigValue)); err != nil {
			t.Fatal(err)
		}
		if err := d.Ledgers.PutEntry(truncatedLedger, 1, bytes.Repeat([]byte("x"), bigValue)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if damaged {
		testutil.TruncateValueLogs(t, dir, datadir.MetadataDirName, bigValue/2)
		testutil.TruncateValueLogs(t, dir, datadir.LedgersDirName, bigValue/2)
	}
	return dir
}

func openBadger(t *testing.T, dir string, readOnly bool) *datadir.DataDir {
	t.Helper()
	d, err := datadir.Open(dir, store.Options{ReadOnly: readOnly})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// badgerUnreachable opens a data dir that is not there.
func badgerUnreachable(t *testing.T) (string, error) {
	dir := filepath.Join(t.TempDir(), "gone")
	d, err := datadir.Open(dir, store.Options{ReadOnly: true})
	if err == nil {
		d.Close()
	}
	return dir, err
}

func TestContractBadgerMetadata(t *testing.T) {
	t.Run("writable", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			d := openBadger(t, badgerDataDir(t, seed, nil, false), false)
			return storetest.Metadata{Store: d.Metadata, Unreachable: badgerUnreachable}
		})
	})
	t.Run("read-only", func(t *testing.T) {
		storetest.MetadataContract(t, func(t *testing.T, seed []store.Node) storetest.Metadata {
			d := openBadger(t, badgerDataDir(t, seed, nil, true), true)
			return storetest.Metadata{Store: d.Metadata, ReadOnly: true, TruncatedPrefix: truncatedPrefix, Unreachable: badgerUnreachable}
		})
	})
}

func TestContractBadgerLedgers(t *testing.T) {
	ids := func(seed [][][]byte) []int64 {
		var out []int64
		for i := range seed {
			out = append(out, int64(i+1))
		}
		return out
	}
	t.Run("writable", func(t *testing.T) {
		storetest.LedgerContract(t, func(t *testing.T, seed [][][]byte) storetest.Ledgers {
			d := openBadger(t, badgerDataDir(t, nil, seed, false), false)
			return storetest.Ledgers{Store: d.Ledgers, IDs: ids(seed), Unreachable: badgerUnreachable}
		})
	})
	t.Run("read-only", func(t *testing.T) {
		storetest.LedgerContract(t, func(t *testing.T, seed [][][]byte) storetest.Ledgers {
			d := openBadger(t, badgerDataDir(t, nil, seed, true), true)
			return storetest.Ledgers{Store: d.Ledgers, IDs: ids(seed), ReadOnly: true, Truncated: truncatedLedger, Unreachable: badgerUnreachable}
		})
	})
}
