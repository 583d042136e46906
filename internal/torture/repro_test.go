package torture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// The reproducers of the damage the torture campaigns found, each on a copy of the torture base (two or three
// tables per store), run as the real binary.

// checkDoc is the part of `check --json` these tests read.
type checkDoc struct {
	Findings []struct {
		Kind        string `json:"kind"`
		Location    string `json:"location"`
		Message     string `json:"message"`
		StoreDamage string `json:"store_damage"`
	} `json:"findings"`
}

func damagedBase(t *testing.T, w *world, edit func(dir string)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dd")
	testutil.CopyDir(t, w.base, dir)
	edit(dir)
	return dir
}

func checkJSON(t *testing.T, dir string, args ...string) (checkDoc, result) {
	t.Helper()
	r := run(t, dir, append([]string{"--json", "check"}, args...)...)
	var doc checkDoc
	if r.code != 3 {
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("check --json: %v\n%s", err, r.stdout)
		}
	}
	return doc, r
}

func noPanic(t *testing.T, r result) {
	t.Helper()
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") || r.code == 2 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func damageFinding(doc checkDoc, file string) bool {
	for _, f := range doc.Findings {
		if f.Kind == "store-damaged" && f.Location == file {
			return true
		}
	}
	return false
}

// Reproducer 1: a cut MANIFEST made a read-only check delete .sst files.
func TestReproCutManifestDeletesNothing(t *testing.T) {
	w := setup(t)
	for _, c := range []struct {
		file string
		size int64
	}{{"metadata/MANIFEST", 27}, {"ledgers/MANIFEST", 41}} {
		t.Run(c.file, func(t *testing.T) {
			dir := damagedBase(t, w, func(dir string) {
				if err := os.Truncate(filepath.Join(dir, c.file), c.size); err != nil {
					t.Fatal(err)
				}
			})
			before := hashTree(t, dir)
			doc, r := checkJSON(t, dir)
			noPanic(t, r)
			testutil.SameTree(t, before, hashTree(t, dir))
			// A cut that drops whole records is damage; one inside the last record
			// is also what a kill while Badger appends leaves, and is said so.
			damaged := damageFinding(doc, c.file)
			if !damaged && !strings.Contains(r.stderr, "MANIFEST has a half-written record") {
				t.Errorf("neither a store-damaged finding nor a note for %s: %s", c.file, r.stderr)
			}
			// Every table was still read: the findings are the undamaged base's.
			base, _ := checkJSON(t, w.base)
			want := len(base.Findings)
			if damaged {
				want++
			}
			if len(doc.Findings) != want {
				t.Errorf("%d findings, want the base's %d (plus the damage)", len(doc.Findings), len(base.Findings))
			}
		})
	}
}

// Reproducer 2: a cut table crashed Badger's opening goroutines; bit flips in a
// ledgers table panicked while iterating.
func TestReproDamagedTableDoesNotPanic(t *testing.T) {
	w := setup(t)
	dir := damagedBase(t, w, func(dir string) {
		if err := os.Truncate(filepath.Join(dir, "metadata/000001.sst"), 3228); err != nil {
			t.Fatal(err)
		}
	})
	doc, r := checkJSON(t, dir)
	noPanic(t, r)
	if r.code != 1 || !damageFinding(doc, "metadata/000001.sst") {
		t.Errorf("exit %d; want 1 with a store-damaged finding for metadata/000001.sst:\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	dir = damagedBase(t, w, func(dir string) {
		p := filepath.Join(dir, "ledgers/000001.sst")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for off := 100; off < len(b); off += 997 {
			b[off] ^= 0x10
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	for _, args := range [][]string{{"check"}, {"inspect", "schema-usage"}} {
		r := run(t, dir, append([]string{"--json"}, args...)...)
		noPanic(t, r)
		if r.code != 1 || !strings.Contains(r.stdout, "store-damaged") {
			t.Errorf("%v: exit %d; want 1 with a store-damaged finding:\n%s", args, r.code, r.stderr)
		}
	}
}

// Reproducer 3: a zeroed page inside a table made keys vanish silently; now the
// damage is a finding and the findings it explains say so.
func TestReproZeroedPageIsNotSilent(t *testing.T) {
	w := setup(t)
	dir := damagedBase(t, w, func(dir string) {
		p := filepath.Join(dir, "metadata/000001.sst")
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, 1000), 4096); err != nil { // the file is < 8 KiB
			t.Fatal(err)
		}
		f.Close()
	})
	doc, r := checkJSON(t, dir)
	noPanic(t, r)
	if !damageFinding(doc, "metadata/000001.sst") {
		t.Fatalf("no store-damaged finding: %s", r.stdout)
	}
	explained := 0
	for _, f := range doc.Findings {
		if f.Kind == "entries-without-node" && len(f.StoreDamage) == 0 {
			t.Errorf("%s %s is not marked as possibly caused by the damage", f.Kind, f.Location)
		}
		if len(f.StoreDamage) > 0 {
			explained++
		}
	}
	if explained == 0 {
		t.Error("no finding is marked store_damage")
	}
}

// Reproducer 4: the empty logs a kill leaves made every command fail.
func TestReproKilledEmptyLogs(t *testing.T) {
	w := setup(t)
	dir := filepath.Join(t.TempDir(), "dd")
	testutil.CopyDir(t, w.preIndex, dir)
	for _, f := range []string{"metadata/00001.mem", "ledgers/000009.vlog"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, dir)
	for _, ro := range readOnly {
		r := run(t, dir, jsonArgs(ro)...)
		noPanic(t, r)
		if r.code == 3 || !strings.Contains(r.stderr, "unclean shutdown") {
			t.Errorf("%v: exit %d, want a result with an unclean-shutdown note: %s", ro, r.code, r.stderr)
		}
	}
	testutil.SameTree(t, before, hashTree(t, dir))
	r := run(t, dir, backfillArgs...)
	if r.code != w.indexCode {
		t.Fatalf("first writing re-run: exit %d (want %d): %s", r.code, w.indexCode, r.stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "journal", "store-recovery-*.log"))
	if len(logs) == 0 {
		t.Error("the recovery was not journaled")
	}
	if d := w.indexRef.Diff(testutil.Dump(t, dir)); len(d) > 0 {
		t.Errorf("end state differs from an uninterrupted back-fill: %v", d)
	}
}

// Reproducer 5a: one undecodable ManagedLedgerInfo aborted the whole back-fill
// with exit 3; now its topic is skipped with a finding and the rest is planned.
func TestReproBackfillSkipsBadNode(t *testing.T) {
	w := setup(t)
	dir := filepath.Join(t.TempDir(), "dd")
	testutil.CopyDir(t, w.preIndex, dir)
	const bad = "/managed-ledgers/public/default/persistent/events"
	editStore(t, dir, func(dd *datadir.DataDir) {
		n, err := dd.Metadata.Get(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dd.Metadata.CompareAndSet(bad, n.Version, []byte{0x08, 0xff, 0xff}); err != nil {
			t.Fatal(err)
		}
	})
	r := run(t, dir, "--json", "index", "backfill")
	noPanic(t, r)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (a finding): %s", r.code, r.stderr)
	}
	var doc struct {
		Findings []struct{ Kind, Path string } `json:"findings"`
		Plan     []struct{ Topic string }      `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range doc.Findings {
		found = found || (f.Kind == "index-node-undecodable" && f.Path == bad)
	}
	if !found {
		t.Errorf("no index-node-undecodable finding for %s: %s", bad, r.stdout)
	}
	if len(doc.Plan) == 0 {
		t.Errorf("nothing planned for the other topics: %s", r.stdout)
	}
}

// Reproducer 5b: a batched entry without a checksum cut short passed check.
func TestReproCutBatchWithoutChecksum(t *testing.T) {
	w := setup(t)
	dir := filepath.Join(t.TempDir(), "dd")
	testutil.CopyDir(t, w.base, dir)
	var ledger, entry int64 = -1, -1
	var value []byte
	for id, v := range w.indexRef.Entries {
		var e formats.Entry
		var md pulsarpb.MessageMetadata
		var bm pulsarpb.BrokerEntryMetadata
		if formats.ParseEntryInto(v, &e, &md, &bm) != nil || e.HasChecksum || !formats.BatchFramingCheckable(&md) ||
			md.GetNumMessagesInBatch() < 2 || (ledger >= 0 && (id.Ledger > ledger || id.Ledger == ledger && id.Entry > entry)) {
			continue
		}
		ledger, entry, value = id.Ledger, id.Entry, v
	}
	if ledger < 0 {
		t.Fatal("the fixture has no batched entry without a checksum")
	}
	cut := value[:len(value)-len(value)/4]
	editStore(t, dir, func(dd *datadir.DataDir) {
		if err := dd.Ledgers.PutEntry(ledger, entry, cut); err != nil {
			t.Fatal(err)
		}
	})
	doc, r := checkJSON(t, dir, "--skip-message-scan")
	noPanic(t, r)
	want := fmt.Sprintf("ledger %d entry %d", ledger, entry)
	for _, f := range doc.Findings {
		if f.Kind == "entry-undecodable" && f.Location == want {
			return
		}
	}
	t.Errorf("check does not report %s cut from %d to %d bytes: %s", want, len(value), len(cut), r.stdout)
}

// Reproducer 5c: index find on a topic without a broker index exited 3.
func TestReproFindOnTopicNotIndexed(t *testing.T) {
	w := setup(t)
	r := run(t, w.base, "index", "find", "--topic", "persistent://acme/billing/audit-log", "--offset", "3")
	if strings.Contains(r.stderr, "panic:") {
		t.Fatal(r.stderr)
	}
	if r.code != 2 || !strings.Contains(r.stderr, "not indexed") || !strings.Contains(r.stderr, "--time") {
		t.Errorf("exit %d, want 2 and a message saying the topic is not indexed: %s", r.code, r.stderr)
	}
}

// editStore opens dir writable in this process for fn.
func editStore(t *testing.T, dir string, fn func(*datadir.DataDir)) {
	t.Helper()
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fn(dd)
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
}
