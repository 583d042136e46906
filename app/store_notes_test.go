package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// cutZKDataDir copies the sample ZooKeeper dataDir (files a real server wrote)
// and damages a txn of its newest log, so a replay stops at the txn before it.
func cutZKDataDir(t *testing.T) string {
	t.Helper()
	src := "../testdata/zookeeper/sample/version-2"
	dst := filepath.Join(t.TempDir(), "version-2")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if n.Name() == "log.34" {
			b[40] ^= 0xff // inside the first txn record after the 16-byte file header
		}
		if err := os.WriteFile(filepath.Join(dst, n.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestStoppedReplayIsInTheJSON: a zk-data view that stops at a zxid is said in
// the -o json and -o jsonl documents, not only on stderr.
func TestStoppedReplayIsInTheJSON(t *testing.T) {
	zk := cutZKDataDir(t)
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	args := []string{"-d", dir, "--metadata", "zk-data:" + zk}
	out, errOut, code := runApp(t, append(args, "-o", "json", "inspect", "node", "/managed-ledgers")...)
	if code != 0 {
		t.Fatalf("inspect node: exit %d: %s", code, errOut)
	}
	var doc struct {
		StoreNotes []string `json:"store_notes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	stopped := func(notes []string) bool {
		for _, n := range notes {
			if strings.Contains(n, "replay stopped at") && strings.Contains(n, "zxid 0x33") && strings.HasPrefix(n, "zk-data:") {
				return true
			}
		}
		return false
	}
	if !stopped(doc.StoreNotes) {
		t.Errorf("-o json store_notes %q do not say the replay stopped (stderr: %s)", doc.StoreNotes, errOut)
	}
	if !strings.Contains(errOut, "replay stopped at") {
		t.Errorf("stderr does not say the replay stopped: %s", errOut)
	}
	out, _, _ = runApp(t, append(args, "-o", "jsonl", "inspect", "node", "/managed-ledgers")...)
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l struct {
			Table string   `json:"table"`
			Key   string   `json:"key"`
			Value []string `json:"value"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Key == "store_notes" && stopped(l.Value) {
			found = true
		}
	}
	if !found {
		t.Errorf("-o jsonl says nothing of the stopped replay:\n%s", out)
	}
	// A data dir's own stores say nothing: no store_notes member.
	out, _, _ = runApp(t, "-d", dir, "-o", "json", "inspect", "node", "/managed-ledgers")
	if strings.Contains(out, "store_notes") {
		t.Errorf("store_notes without a note:\n%s", out)
	}
}
