package app

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestImportCopiesEveryByteAndRecordsTheSource: an import of a data dir (the
// embedded store, which every other backend reaches through the same interfaces)
// holds the same nodes and entries, records each node's source version, and leaves
// the source untouched.
func TestImportCopiesEveryByteAndRecordsTheSource(t *testing.T) {
	src, _ := testutil.Fixture(t, fixtures.Options{Seed: 3, LoseSchemaLedgers: 1})
	before := testutil.HashTree(t, src)
	out := filepath.Join(t.TempDir(), "copy")
	stdout, stderr, code := runBin(t, "-d", src, "--json", "import", "--copy-ledgers", "--out", out)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
	}
	testutil.SameTree(t, before, testutil.HashTree(t, src))
	want, got := testutil.Dump(t, src), testutil.Dump(t, out)
	if d := want.Diff(got); len(d) > 0 {
		t.Fatalf("the copy differs from its source: %v", d[:min(len(d), 10)])
	}

	var rec datadir.ImportRecord
	b, err := os.ReadFile(filepath.Join(out, datadir.ImportRecordFile))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("%s: %v\n%s", datadir.ImportRecordFile, err, b)
	}
	if rec.Nodes != int64(len(want.Nodes)) || rec.Entries != int64(len(want.Entries)) || !rec.LedgersCopied ||
		len(rec.Sources) != 2 || rec.Sources[0].Kind != "badger" {
		t.Fatalf("import record %+v; want %d nodes, %d entries, two badger sources", rec, len(want.Nodes), len(want.Entries))
	}
	f, err := os.Open(filepath.Join(out, datadir.ImportNodesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dd, err := datadir.Open(src, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	lines := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var n datadir.ImportedNode
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		cur, err := dd.Metadata.Get(n.Path)
		if err != nil || cur.Version != n.SourceVersion || len(cur.Value) != n.Size {
			t.Fatalf("%s: recorded version %d size %d; source has %d, %d bytes (%v)", n.Path, n.SourceVersion, n.Size, cur.Version, len(cur.Value), err)
		}
		lines++
	}
	if lines != len(want.Nodes) {
		t.Fatalf("%s has %d lines, want %d", datadir.ImportNodesFile, lines, len(want.Nodes))
	}

	// Metadata only: an empty ledger store, said so.
	out2 := filepath.Join(t.TempDir(), "meta-only")
	stdout, _, code = runBin(t, "-d", src, "import", "--out", out2, "--prefix", "/schemas")
	if code != 0 {
		t.Fatalf("import --prefix: exit %d\n%s", code, stdout)
	}
	got2 := testutil.Dump(t, out2)
	if len(got2.Entries) != 0 || len(got2.Nodes) == 0 {
		t.Fatalf("metadata-only import: %d nodes, %d entries", len(got2.Nodes), len(got2.Entries))
	}
	for p := range got2.Nodes {
		if len(p) < 8 || p[:8] != "/schemas" {
			t.Fatalf("node %s is outside --prefix /schemas", p)
		}
	}
	// A non-empty --out is refused before anything is read.
	if _, _, code := runBin(t, "-d", src, "import", "--out", out); code != 2 {
		t.Fatalf("import into an existing data dir: exit %d, want 2", code)
	}
}

func TestStoreFlagsAreCheckedBeforeAnythingOpens(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 3})
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"unknown scheme", []string{"--metadata", "mysql://x", "-d", dir, "check"}, 2},
		{"bookie as metadata", []string{"--metadata", "bookie:/x", "-d", dir, "check"}, 2},
		{"zk-data as ledgers", []string{"--ledgers", "zk-data:/x", "-d", dir, "check"}, 2},
		{"at-zxid without zk-data", []string{"--at-zxid", "5", "-d", dir, "check"}, 2},
		{"revision without etcd-db", []string{"--revision", "5", "-d", dir, "check"}, 2},
		{"bad at-time", []string{"--metadata", "zk-data:/nonexistent", "--at-time", "yesterday", "-d", dir, "check"}, 2},
		{"write to offline files", []string{"--metadata", "zk-data:/nonexistent", "-d", dir, "index", "backfill", "--apply"}, 2},
		{"write to bookie dirs", []string{"--ledgers", "bookie:/nonexistent", "-d", dir, "index", "backfill", "--apply"}, 2},
		{"no data dir for ledgers", []string{"--metadata", "zk-data:/nonexistent", "check"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runBin(t, c.args...)
			if code != c.want || stderr == "" {
				t.Fatalf("exit %d, want %d with a message\n%s\n%s", code, c.want, stdout, stderr)
			}
		})
	}
}
