package datadir

import (
	"testing"

	"github.com/ledgermedic/ledgermedic/store/badgerdir"
)

// filledDataDir returns a closed data dir holding the nodes below.
func filledDataDir(t testing.TB, nodes map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	d, err := badgerdir.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := d.NewBulkWriter()
	for p, v := range nodes {
		if err := w.PutNode(p, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
