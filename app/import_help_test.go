package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestImportHelpSaysWhatItNeeds: import's help says a store no URL names comes
// from --data-dir, and the binary does what it says: a metadata-only import runs
// with -d and is refused without it, naming --data-dir.
func TestImportHelpSaysWhatItNeeds(t *testing.T) {
	help, _, _ := runApp(t, "import", "--help")
	if strings.Contains(help, "and/or") || !strings.Contains(help, "--data-dir is needed unless both --metadata and --ledgers are given") {
		t.Errorf("import help does not say when --data-dir is needed:\n%s", help)
	}
	zk := "zk-data:../testdata/zookeeper/sample"
	out := filepath.Join(t.TempDir(), "copy")
	if _, errOut, code := runApp(t, "--metadata", zk, "import", "--out", out); code != 2 || !strings.Contains(errOut, "--data-dir") {
		t.Errorf("metadata-only import without -d: exit %d, want 2 naming --data-dir: %s", code, errOut)
	}
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	if _, errOut, code := runApp(t, "-d", dir, "--metadata", zk, "import", "--out", out); code != 0 {
		t.Fatalf("metadata-only import with -d: exit %d: %s", code, errOut)
	}
	topics, errOut, code := runApp(t, "-d", out, "-o", "json", "inspect", "topics")
	if code > 1 || !strings.Contains(topics, "topic-00") {
		t.Errorf("the metadata-only copy: exit %d: %s\n%s", code, errOut, topics)
	}
}
