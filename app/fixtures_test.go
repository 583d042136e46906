package app

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
	"github.com/ledgermedic/ledgermedic/testutil/golden"
)

func TestFixturesGenerateCLI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cluster")
	stdout, stderr, code := runApp(t, "fixtures", "generate", "--out", out, "--seed", "3",
		"--lose-schema-ledgers", "2", "--lose-topic-ledger", "--orphan-ledger", "--corrupt-crc")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	golden.CheckString(t, filepath.Join("testdata", "fixtures", "generate.txt"), strings.ReplaceAll(stdout, out, "DIR"))
	m, err := fixtures.LoadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Seed != 3 || m.Options.LoseSchemaLedgers != 2 || !m.Options.CorruptCRC || len(m.Faults) != 4 || len(m.Orphans) != 2 {
		t.Errorf("manifest options %+v, %d faults, %d orphans", m.Options, len(m.Faults), len(m.Orphans))
	}

	// A non-empty --out is refused, and nothing in it changes.
	before := testutil.HashTree(t, out)
	_, stderr, code = runApp(t, "fixtures", "generate", "--out", out)
	if code != 2 || !strings.Contains(stderr, "not empty") {
		t.Errorf("second generate into %s: exit %d, stderr %q", out, code, stderr)
	}
	testutil.SameTree(t, before, testutil.HashTree(t, out))
}

func TestFixturesGenerateJSON(t *testing.T) {
	out := t.TempDir() // exists but empty: accepted
	stdout, stderr, code := runApp(t, "--json", "fixtures", "generate", "--out", out, "--topics", "2",
		"--ledgers", "2", "--entries", "4", "--first-entry-index", "--index-key", "kafka.base.offset")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var doc struct {
		Summary []struct {
			What  string `json:"what"`
			Count int64  `json:"count"`
		} `json:"summary"`
		Faults []any `json:"faults"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, stdout)
	}
	m, err := fixtures.LoadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range doc.Summary {
		got[r.What] = r.Count
	}
	if got["topics"] != 2 || got["entries"] != m.Totals.Entries || got["messages"] != m.Totals.Messages || len(doc.Faults) != 0 {
		t.Errorf("summary %v, faults %v; manifest totals %+v", got, doc.Faults, m.Totals)
	}
	if !m.Options.WithFirstEntryIndex || m.Options.IndexKey != "kafka.base.offset" {
		t.Errorf("options not passed through: %+v", m.Options)
	}
}

func TestFixturesGenerateBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--partitions", "-1"},
		{"--lose-schema-ledgers", "99"},
		{"--ledgers", "1", "--lose-topic-ledger"},
	} {
		out := filepath.Join(t.TempDir(), "cluster")
		_, stderr, code := runApp(t, append([]string{"fixtures", "generate", "--out", out}, args...)...)
		if code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a message", args, code, stderr)
		}
	}
	if _, _, code := runApp(t, "fixtures", "generate"); code != 2 {
		t.Errorf("without --out: exit %d, want 2", code)
	}
}
