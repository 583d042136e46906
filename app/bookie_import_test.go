package app

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/internal/testutil"
)

// TestImportFromBookieDirs: import of bookie dirs (with a flipped replica byte
// and a log cut short) into a data dir holds byte-identical payloads to the
// fixture's own ledger store, served from the good replicas, and never writes
// the bookie dirs.
func TestImportFromBookieDirs(t *testing.T) {
	t.Setenv("LEDGERMEDIC_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "fixtures", "generate", "--out", dir, "--seed", "8", "--bookies", "5", "--bookie-flip-byte")
	bookies := filepath.Join(dir, "bookies")
	var parts []string
	for i := 1; i <= 5; i++ {
		parts = append(parts, fmt.Sprintf("bookie:%s/bookie-%d", bookies, i))
	}
	before := testutil.HashTree(t, bookies)
	out := filepath.Join(t.TempDir(), "copy")
	mustBin(t, 0, "-d", dir, "--ledgers", strings.Join(parts, ","), "import", "--out", out)
	testutil.SameTree(t, before, testutil.HashTree(t, bookies))
	want, got := testutil.Dump(t, dir), testutil.Dump(t, out)
	if len(got.Entries) == 0 {
		t.Fatal("the import copied no entries")
	}
	if d := want.Diff(got); len(d) > 0 {
		t.Fatalf("the import from bookie dirs differs from the fixture's ledger store: %v", d[:min(len(d), 10)])
	}
}
