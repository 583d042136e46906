package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
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

// TestCheckOnBookieDirs: check reads bookie dirs as the ledger store and reports
// exactly the replica faults the fixture wrote. With faults every entry survives on
// some replica (a flipped byte), the Pulsar-level findings equal those on the data
// dir's own ledger store; with a log cut short and a bookie missing too, the
// replica findings still equal the fixture's.
func TestCheckOnBookieDirs(t *testing.T) {
	t.Setenv("LEDGERMEDIC_CACHE_DIR", t.TempDir())
	for _, c := range []struct {
		name     string
		faults   []string
		sameRest bool
	}{
		{"flipped replica byte", []string{"--bookie-flip-byte"}, true},
		{"every bookie fault", []string{"--bookie-flip-byte", "--bookie-cut-log", "--bookie-missing", "--bookie-unclosed-log"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cluster")
			mustBin(t, 0, append([]string{"fixtures", "generate", "--out", dir, "--seed", "8", "--lose-topic-ledger", "--bookies", "5"}, c.faults...)...)
			var bm fixtures.BookieManifest
			b, err := os.ReadFile(filepath.Join(dir, "bookies", fixtures.BookieManifestFile))
			if err != nil || json.Unmarshal(b, &bm) != nil || len(bm.Expected) == 0 {
				t.Fatalf("bookie manifest: %v, %d expected findings", err, len(bm.Expected))
			}
			ledgers := "bookie:" + strings.Join(bm.Dirs, ",bookie:")
			onBookies := findingSet(t, mustBin(t, 1, "-d", dir, "--ledgers", ledgers, "--json", "check"))
			onBadger := findingSet(t, mustBin(t, 1, "-d", dir, "--json", "check"))

			var want []string
			for _, f := range bm.Expected {
				loc := fmt.Sprintf("ledger %d entry %d", f.LedgerID, f.EntryID)
				if f.LedgerID < 0 {
					loc = f.File
				}
				want = append(want, f.Kind+" "+loc)
			}
			replicaKinds := map[string]bool{"under-replicated": true, "replica-corrupt": true, "replicas-differ": true,
				"entry-log-damaged": true, "journal-damaged": true, "lastmark-damaged": true}
			var got, rest []string
			for _, f := range onBookies {
				parts := strings.SplitN(f, " ", 3) // severity kind location
				if replicaKinds[parts[1]] {
					got = append(got, parts[1]+" "+parts[2])
				} else {
					rest = append(rest, f)
				}
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("replica findings:\n%s\nthe fixture wrote:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if c.sameRest && strings.Join(rest, "\n") != strings.Join(onBadger, "\n") {
				t.Fatalf("the other findings differ between bookie dirs and the data dir:\n%s\n--- data dir:\n%s", strings.Join(rest, "\n"), strings.Join(onBadger, "\n"))
			}
		})
	}
}

// TestEntryReadersAgreeOnBookieDirs: inspect entries and index find give the same
// answers on bookie dirs as on the data dir's own ledger store.
func TestEntryReadersAgreeOnBookieDirs(t *testing.T) {
	t.Setenv("LEDGERMEDIC_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "fixtures", "generate", "--out", dir, "--seed", "3", "--first-entry-index", "--bookies", "5", "--bookie-flip-byte")
	m, err := fixtures.LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bm fixtures.BookieManifest
	b, _ := os.ReadFile(filepath.Join(dir, "bookies", fixtures.BookieManifestFile))
	if err := json.Unmarshal(b, &bm); err != nil {
		t.Fatal(err)
	}
	ledgers := "bookie:" + strings.Join(bm.Dirs, ",bookie:")
	same := func(args ...string) {
		t.Helper()
		a, _, ca := runBin(t, append([]string{"-d", dir, "--json"}, args...)...)
		b, _, cb := runBin(t, append([]string{"-d", dir, "--ledgers", ledgers, "--json"}, args...)...)
		if ca != cb || withoutNotes(t, a) != withoutNotes(t, b) {
			t.Fatalf("%v: data dir (exit %d):\n%s\nbookie dirs (exit %d):\n%s", args, ca, a, cb, b)
		}
	}
	checked := 0
	for _, ml := range m.ManagedLedgers {
		for i, l := range ml.Ledgers {
			if i > 1 || l.Entries == 0 || l.Offloaded {
				continue
			}
			same("inspect", "entries", "--ledger", fmt.Sprint(l.ID))
			if ml.Indexed {
				same("index", "find", "--topic", ml.Topic, "--offset", fmt.Sprint(l.FirstIndex+1))
			}
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("only %d ledgers compared", checked)
	}
}

// withoutNotes drops what differs between two runs of the same question: the
// notes (they name the stores used) and wall times, at any depth.
func withoutNotes(t *testing.T, s string) string {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "notes")
			delete(x, "store_notes") // what the stores in use said: they differ by design
			delete(x, "elapsed_us")  // the wall time of the search
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(doc)
	b, _ := json.Marshal(doc)
	return string(b)
}

// TestSchemaRepairAgreesOnBookieDirs: inspect schemas reads bookie dirs as it
// reads the data dir's own ledger store; schema repair, which writes ledgers,
// refuses bookie dirs before it plans, dry run and --apply alike, pointing at
// import (the dry run exits as --apply would).
func TestSchemaRepairAgreesOnBookieDirs(t *testing.T) {
	t.Setenv("LEDGERMEDIC_CACHE_DIR", t.TempDir())
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: 4})
	capFile := filepath.Join(t.TempDir(), "schemas.jsonl")
	mustBin(t, 0, "-d", healthy, "schema", "capture", "--out", capFile)
	dir := filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "fixtures", "generate", "--out", dir, "--seed", "4", "--lose-schema-ledgers", "1", "--lose-schema-entries", "1",
		"--bookies", "5", "--bookie-flip-byte")
	var bm fixtures.BookieManifest
	b, _ := os.ReadFile(filepath.Join(dir, "bookies", fixtures.BookieManifestFile))
	if err := json.Unmarshal(b, &bm); err != nil {
		t.Fatal(err)
	}
	ledgers := "bookie:" + strings.Join(bm.Dirs, ",bookie:")
	for _, args := range [][]string{
		{"schema", "repair", "--from", capFile},
		{"schema", "repair", "--from", capFile, "--apply"},
		{"schema", "repair"},
	} {
		out, errOut, code := runBin(t, append([]string{"-d", dir, "--ledgers", ledgers}, args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, "ledgermedic import --ledgers") {
			t.Errorf("%v on bookie dirs: exit %d, stdout %q, stderr %q; want 2 pointing at import, nothing planned", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"inspect", "schemas"},
	} {
		a, _, ca := runBin(t, append([]string{"-d", dir, "--json"}, args...)...)
		o, _, co := runBin(t, append([]string{"-d", dir, "--ledgers", ledgers, "--json"}, args...)...)
		if ca != co || withoutNotes(t, a) != withoutNotes(t, o) {
			t.Fatalf("%v: data dir (exit %d):\n%s\nbookie dirs (exit %d):\n%s", args, ca, a, co, o)
		}
	}
}
