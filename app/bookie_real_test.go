package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestRealBookiesFromTheCLI: on every scenario of bookie dirs a real BookKeeper
// 4.17.4 wrote (testdata/bookkeeper), with its ZooKeeper dataDir as the metadata
// (inspect entries) and a data dir holding that dataDir's nodes plus an empty
// /managed-ledgers, as a Pulsar cluster with no topic yet has (check reads a
// Pulsar cluster: the bare BookKeeper tree has none of its root nodes), check exits 0 (no finding: the preallocated 0-byte entry logs are not damage) and
// inspect entries --hex shows each ledger's entries byte-identical to the Java
// client's writes.
func TestRealBookiesFromTheCLI(t *testing.T) {
	t.Setenv("LEDGERMEDIC_CACHE_DIR", t.TempDir())
	for _, name := range testutil.RealBookieScenarios(t) {
		t.Run(name, func(t *testing.T) {
			s := testutil.CopyRealBookies(t, name)
			var parts []string
			for _, d := range s.BookieDirs() {
				parts = append(parts, "bookie:"+d)
			}
			global := []string{"--metadata", "zk-data:" + s.ZKDataDir(), "--ledgers", strings.Join(parts, ",")}
			work := pulsarRootOver(t, s.ZKDataDir(), strings.Join(parts, ","))
			stdout, stderr, code := runBin(t, "-d", work, "--ledgers", strings.Join(parts, ","), "check")
			if code != 0 {
				t.Fatalf("check: exit %d\n%s\n%s", code, stdout, stderr)
			}
			if strings.Contains(stderr, "no real bookie") {
				t.Errorf("check notes: %s", stderr)
			}
			for _, l := range s.Ledgers {
				out := mustBin(t, 0, append(global, "--json", "inspect", "entries", "--ledger", fmt.Sprint(l.LedgerID), "--hex")...)
				var doc struct {
					EntryBytes []struct {
						LedgerID int64  `json:"ledger_id"`
						EntryID  int64  `json:"entry_id"`
						Hex      string `json:"hex"`
					} `json:"entry_bytes"`
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatalf("ledger %d: %v\n%s", l.LedgerID, err, out)
				}
				if len(doc.EntryBytes) != len(l.Written) {
					t.Fatalf("ledger %d: %d entries shown, the Java client wrote %d", l.LedgerID, len(doc.EntryBytes), len(l.Written))
				}
				for i, e := range doc.EntryBytes {
					if w := l.Written[i]; e.LedgerID != l.LedgerID || e.EntryID != w.EntryID || e.Hex != w.PayloadHex {
						t.Errorf("ledger %d entry %d: %d:%d %.40s, want %d:%d %.40s", l.LedgerID, i, e.LedgerID, e.EntryID, e.Hex, l.LedgerID, w.EntryID, w.PayloadHex)
					}
				}
			}
		})
	}
}

// pulsarRootOver makes a data dir holding every node of the ZooKeeper dataDir zkData
// (BookKeeper's /ledgers tree) and an empty /managed-ledgers.
func pulsarRootOver(t *testing.T, zkData, ledgers string) string {
	t.Helper()
	u, err := store.ParseMetadataURL("zk-data:" + zkData)
	if err != nil {
		t.Fatal(err)
	}
	l, err := store.ParseLedgersURL(ledgers)
	if err != nil {
		t.Fatal(err)
	}
	src, err := datadir.Open("", store.Options{ReadOnly: true, Metadata: &u, Ledgers: &l})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b := testutil.NewDataDir(t)
	err = src.Metadata.Walk(context.Background(), "/", func(n store.Node) error {
		b.Node(n.Path, bytes.Clone(n.Value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Node("/managed-ledgers", nil)
	return b.Close()
}
