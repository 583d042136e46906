package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
	"github.com/ledgermedic/ledgermedic/testutil/golden"
)

// jsonGoldenDir holds one golden file per command (or view of a command) as
// `-o json` prints it: testdata/json/<command words joined by ->[@view].json.
// TestJSONGoldensAreTyped checks them against docs/json.md.
const jsonGoldenDir = "testdata/json"

// goldenFixture is the cluster the JSON goldens are made from: every schema
// type and topic template, small ledgers, and faults so findings, lost
// versions and plans are not empty.
var goldenFixture = fixtures.Options{Seed: 3, EntriesPerLedger: 3, LoseSchemaLedgers: 2, LoseTopicLedger: true,
	OrphanLedger: true, CorruptCRC: true, WithFirstEntryIndex: true}

// normalizers make the goldens independent of the run: temp dirs, run and
// invocation ids, times of the run, timings, a server's port.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{8}`), "RUN-ID"},
	{regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{8}`), "INVOCATION-ID"},
	{regexp.MustCompile(`"(created|captured_at)": "[^"]*"`), `"$1": "TIME"`},
	{regexp.MustCompile(`"elapsed_us": \d+`), `"elapsed_us": 0`},
	{regexp.MustCompile(`(legacy/\w+: )[^"]*`), "${1}RATIOS"},
	{regexp.MustCompile(`zk://127\.0\.0\.1:\d+`), "zk://127.0.0.1:PORT"},
	{regexp.MustCompile(`"tool_version": "[^"]*"`), `"tool_version": "VERSION"`},
}

// jsonGolden runs one command with -o json, checks its exit code and that
// stdout is one JSON document, and compares it with its golden file.
func jsonGolden(t *testing.T, name string, wantCode int, dirs map[string]string, args ...string) string {
	t.Helper()
	out, errOut, code := runApp(t, append([]string{"-o", "json"}, args...)...)
	if code != wantCode {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", name, code, wantCode, out, errOut)
	}
	if !json.Valid([]byte(out)) {
		t.Fatalf("%s: stdout is not one JSON document:\n%s", name, out)
	}
	for placeholder, dir := range dirs {
		out = strings.ReplaceAll(out, dir, placeholder)
	}
	for _, n := range normalizers {
		out = n.re.ReplaceAllString(out, n.with)
	}
	golden.CheckString(t, filepath.Join(jsonGoldenDir, name+".json"), out)
	return out
}

// TestJSONGoldens prints the JSON of every command against one fixture.
func TestJSONGoldens(t *testing.T) {
	broken, m := testutil.Fixture(t, goldenFixture)
	clean, _ := testutil.Fixture(t, fixtures.Options{Seed: 3, EntriesPerLedger: 3})
	work := t.TempDir()
	dirs := map[string]string{"BROKEN": broken, "CLEAN": clean, "WORK": work}
	capture := filepath.Join(work, "capture.jsonl")

	var indexed, batched fixtures.ManagedLedger
	for _, ml := range m.ManagedLedgers {
		if ml.Indexed && indexed.Topic == "" && len(ml.Ledgers) > 1 && ml.Ledgers[0].Lost == "" {
			indexed = ml
		}
		if ml.Messages > ml.Entries && batched.Topic == "" && ml.Ledgers[0].Lost == "" && !ml.Ledgers[0].Offloaded {
			batched = ml
		}
	}
	if indexed.Topic == "" || batched.Topic == "" {
		t.Fatalf("the fixture has no indexed (%q) or batched (%q) topic", indexed.Topic, batched.Topic)
	}
	schema := m.Schemas[0]

	check := jsonGolden(t, "check", 1, dirs, "-d", broken, "check")
	// A sharded check merged is the whole check, byte for byte.
	if merged := jsonGolden(t, "merge", 1, dirs, append([]string{"merge"}, shardParts(t, broken, 4)...)...); merged != check {
		t.Errorf("merge of 4 shards differs from check:\n%s", merged)
	}
	jsonGolden(t, "inspect-topics", 0, dirs, "-d", broken, "inspect", "topics")
	jsonGolden(t, "inspect-ledgers", 0, dirs, "-d", broken, "inspect", "ledgers", "--topic", indexed.BaseTopic)
	jsonGolden(t, "inspect-schemas", 0, dirs, "-d", broken, "inspect", "schemas")
	jsonGolden(t, "inspect-node", 0, dirs, "-d", broken, "inspect", "node", indexed.Path)
	jsonGolden(t, "inspect-node@schema-locator", 0, dirs, "-d", broken, "inspect", "node", schema.LocatorPath)
	jsonGolden(t, "inspect-entries", 0, dirs, "-d", broken, "inspect", "entries",
		"--ledger", fmt.Sprint(batched.Ledgers[0].ID), "--to", "1", "--payload", "--hex")
	jsonGolden(t, "inspect-entries@schema-ledger", 0, dirs, "-d", clean, "inspect", "entries",
		"--ledger", fmt.Sprint(schema.Versions[0].Ledger))
	jsonGolden(t, "inspect-schema-usage", 1, dirs, "-d", broken, "inspect", "schema-usage")
	jsonGolden(t, "schemaid-decode", 0, dirs, "schemaid", "decode", "ff00000000000007")
	jsonGolden(t, "schemaid-decode@payload", 0, dirs, "schemaid", "decode", "--payload", "000000002a68656c6c6f")
	jsonGolden(t, "fixtures-generate", 0, dirs, "fixtures", "generate", "--out", filepath.Join(work, "generated"),
		"--seed", "5", "--topics", "2", "--ledgers", "2", "--entries", "2", "--lose-schema-ledgers", "1", "--orphan-ledger")
	jsonGolden(t, "index-backfill", 1, dirs, "-d", clean, "index", "backfill", "--topic", indexed.Topic)
	jsonGolden(t, "index-find", 0, dirs, "-d", broken, "index", "find", "--topic", indexed.Topic,
		"--offset", fmt.Sprint(indexed.Ledgers[1].FirstIndex), "--compare")
	jsonGolden(t, "index-find@time", 0, dirs, "-d", clean, "index", "find", "--topic", indexed.Topic,
		"--time", "2024-06-10T06:13:20.150Z")
	// Before every entry: the first ledger, offloaded, holds the answer.
	jsonGolden(t, "index-find@time-offloaded", 1, dirs, "-d", clean, "index", "find", "--topic", indexed.Topic,
		"--time", "2023-11-14T22:13:30Z")
	jsonGolden(t, "schema-capture", 0, dirs, "-d", clean, "schema", "capture", "--out", capture)
	// The broken fixture's lost schema ledgers: captured around, listed, exit 1.
	jsonGolden(t, "schema-capture@lost", 1, dirs, "-d", broken, "schema", "capture", "--out",
		filepath.Join(work, "broken-capture.jsonl"))
	jsonGolden(t, "schema-repair", 0, dirs, "-d", broken, "schema", "repair", "--from", capture, "--count-usage")
	jsonGolden(t, "import", 0, dirs, "-d", broken, "import", "--copy-ledgers", "--out", filepath.Join(work, "copy"))
	jsonGolden(t, "report", 1, dirs, "-d", broken, "report", "--out", filepath.Join(work, "report.html"))

	// A schema history the broker reset: repair shows the version collisions and refuses.
	resetHealthy, _ := testutil.Fixture(t, fixtures.Options{Seed: 12, EntriesPerLedger: 3})
	reset, _ := testutil.Fixture(t, fixtures.Options{Seed: 12, EntriesPerLedger: 3, ResetSchemaHistory: 1})
	resetCapture := filepath.Join(work, "reset-capture.jsonl")
	dirs["RESET"], dirs["RESET-HEALTHY"] = reset, resetHealthy
	if _, errOut, code := runApp(t, "-d", resetHealthy, "schema", "capture", "--out", resetCapture); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errOut)
	}
	jsonGolden(t, "schema-repair@collision", 1, dirs, "-d", reset, "schema", "repair", "--from", resetCapture)

	// The writes last: a repair, then the journal that recorded it.
	jsonGolden(t, "schema-repair@apply", 0, dirs, "-d", broken, "schema", "repair", "--from", capture, "--apply")
	jsonGolden(t, "journal-list", 0, dirs, "-d", broken, "journal", "list")
	jsonGolden(t, "journal-show", 0, dirs, "-d", broken, "journal", "show", "last")
	jsonGolden(t, "journal-undo", 0, dirs, "-d", broken, "journal", "undo", "last")
	jsonGolden(t, "journal-undo@apply", 0, dirs, "-d", broken, "journal", "undo", "--apply", "last")
}

// TestJSONGoldenPush is journal push's golden: a run made on a copy imported
// from a live ZooKeeper, pushed back (dry run and applied).
func TestJSONGoldenPush(t *testing.T) {
	testutil.SkipWithoutZooKeeper(t)
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	url := "zk://" + srv.Addr
	work := t.TempDir()
	gen := filepath.Join(work, "generated")
	if _, errOut, code := runApp(t, "--metadata", url, "fixtures", "generate", "--out", gen, "--seed", "5",
		"--topics", "2", "--ledgers", "2", "--entries", "2"); code != 0 {
		t.Fatalf("load the fixture into ZooKeeper: exit %d: %s", code, errOut)
	}
	cp := filepath.Join(work, "copy")
	if _, errOut, code := runApp(t, "-d", gen, "--metadata", url, "import", "--copy-ledgers", "--out", cp); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runApp(t, "-d", cp, "index", "backfill", "--apply"); code > 1 { // 1: open ledgers got a value
		t.Fatalf("back-fill the copy: exit %d: %s", code, errOut)
	}
	dirs := map[string]string{"WORK": work}
	jsonGolden(t, "journal-push", 0, dirs, "-d", cp, "--metadata", url, "journal", "push", "last")
	jsonGolden(t, "journal-push@apply", 0, dirs, "-d", cp, "--metadata", url, "journal", "push", "--apply", "last")
}

// TestJSONGoldenFilesAreUsed fails on a golden file no test writes any more
// (a renamed command leaves its old golden behind).
func TestJSONGoldenFilesAreUsed(t *testing.T) {
	src, err := os.ReadFile("json_golden_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(jsonGoldenDir, "*.json"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if !bytes.Contains(src, []byte(`"`+name+`"`)) {
			t.Errorf("%s: no test in json_golden_test.go writes it", f)
		}
	}
}
