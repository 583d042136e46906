package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// Every command parses and validates its flags before it opens a store: a bad
// value exits 2 naming the flag even when --data-dir does not exist (opening
// it would exit 3).
func TestOptionsAreValidatedBeforeAnyStoreOpens(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	existing := filepath.Join(t.TempDir(), "exists")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		say  string
	}{
		{[]string{"inspect", "entries", "--topic", "a/b/c", "--offset", "-5"}, "--offset"},
		{[]string{"inspect", "entries", "--ledger", "1", "--limit", "0"}, "--limit"},
		{[]string{"inspect", "entries", "--topic", "a/b/c", "--time", "1718000000"}, "ambiguous"},
		{[]string{"inspect", "schema-usage", "--workers", "-1"}, "--workers"},
		{[]string{"inspect", "schemas", "--topic", "a/b"}, "bad topic name"},
		{[]string{"index", "backfill", "--workers", "0"}, "--workers"},
		{[]string{"index", "backfill", "--shard", "3/2"}, "shard"},
		{[]string{"index", "backfill", "--backup", existing, "--apply"}, "--backup"},
		{[]string{"index", "find", "--topic", "a/b/c", "--offset", "1", "--time", "-1h"}, "--offset and --time"},
		{[]string{"schema", "repair", "--from", existing, "--resolve-collision", "maybe"}, "--resolve-collision"},
		{[]string{"schema", "repair", "--from", existing, "--backup", filepath.Join(t.TempDir(), "b")}, "--backup needs --apply"},
		{[]string{"schema", "capture", "--out", existing}, "--force"},
		{[]string{"journal", "undo", "--backup", existing, "last"}, "--backup"},
		{[]string{"journal", "undo", "--backup", filepath.Join(t.TempDir(), "b"), "last"}, "--backup needs --apply"},
		{[]string{"index", "backfill", "--backup", filepath.Join(t.TempDir(), "b")}, "--backup needs --apply"},
		{[]string{"report", "--out", filepath.Join(t.TempDir(), "r.html"), "--topic", "a/b"}, "bad topic name"},
		{[]string{"fixtures", "generate", "--out", filepath.Join(t.TempDir(), "f"), "--partitions", "-1"}, "partitions"},
		{[]string{"import", "--out", nonEmpty}, "not empty"},
		{[]string{"schemaid", "decode", "--payload", "--field", "id", "00"}, "--field"},
	}
	for _, tc := range cases {
		_, stderr, code := runApp(t, append([]string{"-d", missing}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.say) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q before opening %s", tc.args, code, stderr, tc.say, missing)
		}
	}
}

// --backup writes a Badger backup of the data dir's own metadata store: on a live
// store every writing command refuses it before it connects or plans (exit 2),
// pointing at import, the copy of a live store. The stores named here do not
// answer: anything that tried to reach them would exit 3.
func TestBackupOfALiveStoreIsRefusedBeforePlanning(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 3})
	backup := filepath.Join(t.TempDir(), "meta.bak")
	for _, live := range []string{"zk://127.0.0.1:1/pulsar", "etcd://127.0.0.1:1"} {
		for _, args := range [][]string{
			{"index", "backfill", "--apply", "--backup", backup},
			{"schema", "repair", "--apply", "--backup", backup},
			{"journal", "undo", "--apply", "--backup", backup, "last"},
			{"journal", "undo", "--command", "--apply", "--backup", backup, "last"},
		} {
			full := append([]string{"-d", dir, "--metadata", live, "--timeout", "1s"}, args...)
			out, stderr, code := runBin(t, full...)
			if code != 2 || !strings.Contains(stderr, "import --out") || !strings.Contains(stderr, live) {
				t.Errorf("%q: exit %d, stderr %q; want 2 pointing at import", full, code, stderr)
			}
			if out != "" {
				t.Errorf("%q planned or printed: %s", full, out)
			}
			if _, err := os.Stat(backup); err == nil {
				t.Fatalf("%q wrote %s", full, backup)
			}
		}
	}
}
