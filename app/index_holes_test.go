package app

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
)

// An offset in a lost ledger is "in lost ledger N" (exit 1) before a back-fill and
// after one, by every search index find can run: the back-fill leaves the lost
// ledger without firstEntryIndex, and the firstEntryIndex+legacy search over it
// once answered the entry after it (found, exit 0).
func TestIndexFindInLostLedgerAfterBackfill(t *testing.T) {
	findInLostLedgerAfterBackfill(t, nil)
}

func TestZooKeeperIndexFindInLostLedgerAfterBackfill(t *testing.T) {
	findInLostLedgerAfterBackfill(t, []string{"--metadata", startZooKeeper(t).url})
}

func TestEtcdIndexFindInLostLedgerAfterBackfill(t *testing.T) {
	findInLostLedgerAfterBackfill(t, []string{"--metadata", startEtcd(t).url})
}

// findAnswers is index find's JSON.
type findAnswers struct {
	Answers []struct {
		Method string `json:"method"`
		Result string `json:"result"`
		Ledger int64  `json:"ledger_id"`
		Entry  int64  `json:"entry_id"`
	} `json:"answers"`
	Findings []struct {
		Kind string `json:"kind"`
	} `json:"findings"`
}

// findInLostLedgerAfterBackfill runs the report's commands with the real binary,
// the metadata in the store stores names (the data dir's own when nil).
func findInLostLedgerAfterBackfill(t *testing.T, stores []string) {
	const topic, offset = "acme/orders/orders-partition-0", "60"
	dir := filepath.Join(t.TempDir(), "X")
	mustBin(t, 0, append(stores, "fixtures", "generate", "--out", dir, "--seed", "7", "--lose-topic-ledger")...)
	m, err := fixtures.LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	lost := int64(-1)
	for _, ml := range m.ManagedLedgers {
		for _, l := range ml.Ledgers {
			if strings.HasSuffix(ml.Topic, topic) && l.Lost == fixtures.LostNodeAndEntries && l.FirstIndex <= 60 && 60 <= l.LastIndex {
				lost = l.ID
			}
		}
	}
	if lost < 0 {
		t.Fatalf("the fixture has no lost ledger of %s holding offset %s", topic, offset)
	}
	cmd := append(append([]string{"-d", dir}, stores...), "--json", "index", "find", "--topic", topic, "--offset", offset)
	find := func(when string, extra ...string) {
		t.Helper()
		out, stderr, code := runBin(t, append(cmd, extra...)...)
		var doc findAnswers
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s %v: %v\n%s\n%s", when, extra, err, out, stderr)
		}
		if code != report.ExitFindings || len(doc.Answers) == 0 {
			t.Fatalf("%s %v: exit %d, want 1\n%s\n%s", when, extra, code, out, stderr)
		}
		for _, a := range doc.Answers {
			if a.Result != "lost" || a.Ledger != lost || a.Entry != -1 {
				t.Errorf("%s %v: %s says %s %d:%d, want lost in ledger %d\n%s", when, extra, a.Method, a.Result, a.Ledger, a.Entry, lost, stderr)
			}
		}
		for _, f := range doc.Findings {
			if f.Kind == "index-search-disagreement" {
				t.Errorf("%s %v: the searches disagree\n%s", when, extra, out)
			}
		}
	}
	find("before the back-fill")
	find("before the back-fill", "--compare")
	mustBin(t, 1, append(append([]string{"-d", dir}, stores...), "index", "backfill", "--apply")...)
	find("after the back-fill")
	find("after the back-fill", "--compare")
	find("after the back-fill", "--legacy")
}
