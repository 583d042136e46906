package app

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// undoExits runs `journal undo` as a dry run, then with --apply, and checks both
// exit with want and say the same thing; it returns the dry run's stderr.
func undoExits(t *testing.T, want int, say string, args ...string) string {
	t.Helper()
	var dryErr string
	for _, apply := range []bool{false, true} {
		full := append([]string{}, args...)
		if apply {
			full = append(full, "--apply")
		}
		_, stderr, code := runBin(t, full...)
		if code != want || !strings.Contains(stderr, say) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d saying %q", full, code, stderr, want, say)
		}
		if !apply {
			dryErr = stderr
		}
	}
	return dryErr
}

// A dry run of `journal undo` runs every check --apply runs and exits as it
// would: for a run already undone, a run an undo re-applied, and (with --command)
// every run of the invocation. Runs on the data dir's own store.
func TestUndoDryRunRefusesWhatApplyRefuses(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 7, LoseSchemaLedgers: 1})
	if _, errOut, code := runBin(t, "-d", dir, "index", "backfill", "--apply"); code > 1 {
		t.Fatalf("backfill: exit %d: %s", code, errOut)
	}
	runs, err := mutate.List(mutate.JournalDir(dir))
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	first := runs[0].RunID
	if _, errOut, code := runBin(t, "-d", dir, "journal", "undo", "--command", first); code != 0 {
		t.Fatalf("undo --command dry run: exit %d: %s", code, errOut)
	}
	undoExits(t, 0, "", "-d", dir, "journal", "undo", first) // the dry run passes, --apply undoes it
	undoExits(t, 2, "undone by run", "-d", dir, "journal", "undo", first)
	// Undo the undo (re-applies the run): the run itself is then refused, naming the run to undo instead.
	undoExits(t, 0, "", "-d", dir, "journal", "undo", "last")
	undoExits(t, 2, "re-applied by run", "-d", dir, "journal", "undo", first)
	// --command: the invocation's runs, checked one by one, newest first; --apply
	// would undo the newer ones and stop at the re-applied run, and so does the dry run.
	out, _, _ := runBin(t, "-d", dir, "journal", "undo", "--command", "--json", first)
	undoExits(t, 2, "re-applied by run", "-d", dir, "journal", "undo", "--command", first)
	if !strings.Contains(out, `"error": "undo run `+first) {
		t.Errorf("the --command dry run does not name the run it stops at:\n%s", out)
	}
}

// On a live store (a real ZooKeeper): the dry run of an undo refuses a run that
// wrote another store (the data dir's journal names ZooKeeper; no --metadata
// opens the data dir's own), and one whose node changed since, exiting as
// --apply does, which writes nothing.
func TestUndoDryRunChecksTheStoreAndItsNodes(t *testing.T) {
	srv := startZooKeeper(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "--metadata", srv.url, "fixtures", "generate", "--out", dir, "--seed", "7")
	live := []string{"-d", dir, "--metadata", srv.url}
	if _, errOut, code := runBin(t, append(live, "index", "backfill", "--apply")...); code > 1 {
		t.Fatalf("backfill: exit %d: %s", code, errOut)
	}
	undoExits(t, 2, "--metadata "+srv.url, "-d", dir, "journal", "undo", "last")
	if _, errOut, code := runBin(t, append(live, "journal", "undo", "--command", "last")...); code != 0 {
		t.Fatalf("undo --command dry run on the store the runs wrote: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runBin(t, "-d", dir, "journal", "undo", "--command", "last"); code != 2 || !strings.Contains(errOut, srv.url) {
		t.Errorf("undo --command dry run on another store: exit %d: %s", code, errOut)
	}

	out := mustBin(t, 0, append(live, "journal", "show", "--json", "last")...)
	var show struct {
		Items []struct {
			Kind string `json:"kind"`
			Path string `json:"path"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &show); err != nil {
		t.Fatal(err)
	}
	changed := ""
	for _, it := range show.Items {
		if it.Kind == string(mutate.KindSet) {
			changed = it.Path
			break
		}
	}
	if changed == "" {
		t.Fatalf("the back-fill run set no node: %s", out)
	}
	before := srv.tree(t)
	srv.set(t, changed, before[changed]) // same bytes, new version: a broker wrote it since
	before = srv.tree(t)
	stderr := undoExits(t, 3, changed, append(live, "journal", "undo", "last")...)
	if !strings.Contains(stderr, "changed since") {
		t.Errorf("the dry run does not say the node changed: %s", stderr)
	}
	if d := diffTrees(before, srv.tree(t)); len(d) > 0 {
		t.Errorf("a refused undo wrote: %v", d)
	}
}

// Every writing command's dry run meets the refusals its --apply meets before it
// plans: another program's files (zk-data, etcd-db, bookie dirs, and so their
// past) are refused, exit 2, dry run or not, before anything is opened (the paths
// named do not exist and the ZooKeeper does not answer: opening them would exit 3).
func TestDryRunsRefuseWhatApplyRefuses(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 7})
	if _, errOut, code := runBin(t, "-d", dir, "index", "backfill", "--apply"); code > 1 {
		t.Fatalf("backfill: exit %d: %s", code, errOut)
	}
	capFile := filepath.Join(t.TempDir(), "c.jsonl")
	mustBin(t, 0, "-d", dir, "schema", "capture", "--out", capFile)
	gone := filepath.Join(t.TempDir(), "gone")
	stores := []struct {
		flags []string
		say   string
	}{
		{[]string{"--metadata", "zk-data:" + gone}, "read-only"},
		{[]string{"--metadata", "etcd-db:" + gone}, "read-only"},
		{[]string{"--metadata", "zk://127.0.0.1:1", "--ledgers", "bookie:" + gone}, "import the bookie dirs first"},
		{[]string{"--metadata", "zk-data:" + gone, "--at-zxid", "5"}, "read-only"},
	}
	commands := [][]string{
		{"index", "backfill"},
		{"schema", "repair", "--from", capFile},
		{"journal", "push", "last"},
		{"journal", "undo", "last"},
		{"journal", "undo", "--command", "last"},
	}
	for _, st := range stores {
		for _, cmd := range commands {
			for _, apply := range []bool{false, true} {
				args := append(append([]string{"-d", dir}, st.flags...), cmd...)
				if apply {
					args = append(args, "--apply")
				}
				out, stderr, code := runBin(t, args...)
				if code != 2 || out != "" || !strings.Contains(stderr, st.say) {
					t.Errorf("%q: exit %d, stdout %.200q, stderr %q; want 2 saying %q", args, code, out, stderr, st.say)
				}
			}
		}
	}
}
