package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/internal/testutil"
)

// TestRealBookiesFromTheCLI: on every scenario of bookie dirs a real BookKeeper
// 4.17.4 wrote (testdata/bookkeeper), with its ZooKeeper dataDir as the metadata,
// check exits 0 (no finding: the preallocated 0-byte entry logs are not damage) and
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
			stdout, stderr, code := runBin(t, append(global, "check")...)
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
