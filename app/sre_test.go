package app

// Issue 15: a CLI an SRE can trust at 3 a.m. Each test drives the real binary
// (or app.Run) the way a user types the command.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// faultyFixture has one of each fault check reports.
func faultyFixture(t *testing.T) string {
	t.Helper()
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1234, LoseTopicLedger: true, LoseSchemaLedgers: 1,
		CorruptCRC: true, OrphanLedger: true, LoseEntriesOnly: true})
	return dir
}

func TestGlobalFlagsAnywhere(t *testing.T) {
	dir := faultyFixture(t)
	forms := [][]string{
		{"-d", dir, "check", "--json"},
		{"check", "-d", dir, "--json"},
		{"check", "--json", "-d", dir},
		{"--json", "check", "--data-dir", dir},
		{"check", "-o", "json", "-d", dir},
	}
	var first string
	for _, args := range forms {
		out, errOut, code := runBin(t, args...)
		if code != 1 {
			t.Fatalf("%v: exit %d, want 1 (findings)\n%s", args, code, errOut)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v: not one JSON document: %v\n%s", args, err, out)
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("%v prints another document than %v", args, forms[0])
		}
	}
	// Sub-command groups take them too, and the innermost value wins.
	out, errOut, code := runBin(t, "-d", filepath.Join(dir, "nope"), "inspect", "-d", dir, "topics", "--json")
	if code != 0 || !strings.HasPrefix(out, "{") {
		t.Fatalf("inspect -d D topics --json: exit %d\n%s\n%s", code, out, errOut)
	}
}

// hintCommands are the runnable commands in check's hints and notes: from
// "ledgermedic -d" to the end of the sentence.
func hintCommands(texts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range texts {
		i := strings.Index(s, "ledgermedic -d ")
		if i < 0 {
			continue
		}
		cmd := s[i:]
		for _, end := range []string{" (", "; ", ", then"} {
			if j := strings.Index(cmd, end); j >= 0 {
				cmd = cmd[:j]
			}
		}
		if !seen[cmd] {
			seen[cmd] = true
			out = append(out, cmd)
		}
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the quoting
// shellQuote produces: words separated by spaces, '...' quoted.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(ch)
		case ch == '\'':
			quoted, inWord = true, true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case ch == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func TestSuggestedCommandsRunAsPrinted(t *testing.T) {
	base := faultyFixture(t)
	// A data dir path that needs quoting, to prove the quoting.
	dir := filepath.Join(t.TempDir(), "copy of cluster")
	if err := os.Rename(base, dir); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBin(t, "check", "--json", "-d", dir)
	if code != 1 {
		t.Fatalf("check: exit %d\n%s", code, errOut)
	}
	var doc struct {
		Findings []report.Finding `json:"findings"`
		Notes    []string         `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, f := range doc.Findings {
		texts = append(texts, f.Hint, f.Message)
		if strings.Contains(f.Hint+f.Message, "ledgermedic ") && !strings.Contains(f.Hint+f.Message, "ledgermedic -d ") {
			t.Errorf("finding %s suggests a command without the data dir: %q", f.Kind, f.Hint)
		}
	}
	cmds := hintCommands(append(texts, doc.Notes...))
	kinds := map[string]bool{}
	// The hints name the capture file the README names (schemas.jsonl): run them
	// where one is, as the SRE would.
	work := t.TempDir()
	captureOf(t, 1234, filepath.Join(work, "schemas.jsonl"))
	for _, cmd := range cmds {
		words := shellWords(t, cmd)
		if words[0] != "ledgermedic" || words[1] != "-d" || words[2] != dir {
			t.Fatalf("%q does not name the data dir %q: %q", cmd, dir, words)
		}
		kinds[words[3]+" "+words[4]] = true
		stdout, stderr, code := runBinIn(t, work, words[1:]...)
		if code > 1 {
			t.Errorf("suggested command %q: exit %d\n%s\n%s", cmd, code, stdout, stderr)
		}
		// A repair hint that resolves nothing does not do what it says.
		if words[3]+" "+words[4] == "schema repair" && (code != 0 || !regexp.MustCompile(`[1-9][0-9]* restorable`).MatchString(stdout)) {
			t.Errorf("suggested repair %q resolves nothing: exit %d\n%s\n%s", cmd, code, stdout, stderr)
		}
	}
	for _, want := range []string{"schema repair", "inspect entries", "index backfill"} {
		if !kinds[want] {
			t.Errorf("check suggested no %q command; suggested: %q", want, cmds)
		}
	}
}

func TestFixturesLedgersPerTopic(t *testing.T) {
	for _, flag := range []string{"--ledgers-per-topic", "--ledgers"} {
		out := filepath.Join(t.TempDir(), "dd")
		_, errOut, code := runBin(t, "fixtures", "generate", "--out", out, "--topics", "1", flag, "2")
		if code != 0 {
			t.Fatalf("%s 2: exit %d: %s", flag, code, errOut)
		}
		b, err := os.ReadFile(filepath.Join(out, fixtures.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		var m fixtures.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, ml := range m.ManagedLedgers {
			if len(ml.Ledgers) != 2 {
				t.Errorf("%s 2: %s has %d ledgers", flag, ml.Path, len(ml.Ledgers))
			}
		}
	}
}

// entryOffsets are the broker offsets of every entry of a ledger, from inspect entries.
func entryOffsets(t *testing.T, dir string, ledger int64) [][2]int64 {
	t.Helper()
	out, errOut, code := runApp(t, "-d", dir, "inspect", "entries", "--ledger", itoa(ledger), "--json")
	if code != 0 {
		t.Fatalf("inspect entries --ledger %d: exit %d: %s", ledger, code, errOut)
	}
	var doc struct {
		Entries []struct {
			EntryID     int64 `json:"entry_id"`
			BrokerIndex int64 `json:"broker_index"`
			BatchSize   int64 `json:"batch_size"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var offs [][2]int64
	for _, e := range doc.Entries {
		offs = append(offs, [2]int64{e.BrokerIndex - e.BatchSize + 1, e.BrokerIndex})
	}
	return offs
}

type findAnswer struct {
	Answers []struct {
		Result   string `json:"result"`
		LedgerID int64  `json:"ledger_id"`
		EntryID  int64  `json:"entry_id"`
	} `json:"answers"`
}

func findJSON(t *testing.T, args ...string) (findAnswer, int, string) {
	t.Helper()
	out, errOut, code := runApp(t, append(args, "--json")...)
	var a findAnswer
	if code <= 1 {
		if err := json.Unmarshal([]byte(out), &a); err != nil || len(a.Answers) == 0 {
			t.Fatalf("%v: %v\n%s\n%s", args, err, out, errOut)
		}
	}
	return a, code, errOut
}

func TestIndexFindAroundLostLedger(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 1234, LoseTopicLedger: true})
	const topic = "persistent://acme/orders/orders-partition-0"
	var lost int64 = -1
	var intact []int64
	for _, ml := range m.ManagedLedgers {
		if ml.Topic != topic {
			continue
		}
		for _, l := range ml.Ledgers {
			switch {
			case l.Lost != "":
				lost = l.ID
			case !l.Offloaded:
				intact = append(intact, l.ID)
			}
		}
	}
	if lost < 0 || len(intact) < 2 {
		t.Fatalf("fixture: lost ledger %d, intact %v", lost, intact)
	}
	var lastBefore, firstAfter int64 = -1, -1
	for _, id := range intact {
		offs := entryOffsets(t, dir, id)
		for e, o := range offs {
			for off := o[0]; off <= o[1]; off++ {
				a, code, errOut := findJSON(t, "-d", dir, "index", "find", "--topic", topic, "--offset", itoa(off))
				if code != 0 || a.Answers[0].Result != "found" || a.Answers[0].LedgerID != id || a.Answers[0].EntryID != int64(e) {
					t.Fatalf("offset %d (ledger %d entry %d): exit %d, answer %+v\n%s", off, id, e, code, a.Answers, errOut)
				}
			}
		}
		if id < lost && len(offs) > 0 {
			lastBefore = offs[len(offs)-1][1]
		}
		if id > lost && firstAfter < 0 && len(offs) > 0 {
			firstAfter = offs[0][0]
		}
	}
	if lastBefore < 0 || firstAfter <= lastBefore+1 {
		t.Fatalf("no offsets between the ledgers around lost ledger %d (%d, %d)", lost, lastBefore, firstAfter)
	}
	for _, off := range []int64{lastBefore + 1, (lastBefore + firstAfter) / 2, firstAfter - 1} {
		a, code, errOut := findJSON(t, "-d", dir, "index", "find", "--topic", topic, "--offset", itoa(off))
		if code != 1 || a.Answers[0].Result != "lost" || a.Answers[0].LedgerID != lost {
			t.Errorf("offset %d in lost ledger %d: exit %d, answer %+v\n%s", off, lost, code, a.Answers, errOut)
		}
	}
	// By time too: the search goes around the lost ledger.
	if _, code, errOut := findJSON(t, "-d", dir, "index", "find", "--topic", topic, "--time", "2024-06-10T00:00:00Z"); code != 0 {
		t.Errorf("--time: exit %d\n%s", code, errOut)
	}
}

func TestSchemaRepairUnknownTopicIsBadInput(t *testing.T) {
	dir := faultyFixture(t)
	for _, c := range []struct {
		topic string
		near  string
	}{
		{"acme/nope/nope", "nearest: "},
		{"acme/order/orders", "nearest: acme/orders/orders"},
	} {
		out, errOut, code := runBin(t, "-d", dir, "schema", "repair", "--topic", c.topic)
		if code != 2 || !strings.Contains(errOut, c.near) {
			t.Errorf("--topic %s: exit %d, want 2 naming %q\n%s\n%s", c.topic, code, c.near, out, errOut)
		}
	}
	// A known topic is still a dry run.
	if _, errOut, code := runBin(t, "-d", dir, "schema", "repair", "--topic", "public/default/events"); code > 1 {
		t.Errorf("known topic: exit %d: %s", code, errOut)
	}
}

func TestIndexFindTimeUnits(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1234})
	const topic = "acme/orders/orders-partition-0"
	find := func(tm string) (findAnswer, int, string) {
		return findJSON(t, "-d", dir, "index", "find", "--topic", topic, "--time", tm)
	}
	ref, code, errOut := find("2024-06-10T07:13:21Z")
	if code != 0 {
		t.Fatalf("RFC 3339: exit %d: %s", code, errOut)
	}
	for _, same := range []string{"1718003601s", "1718003601000ms", "1718003601000000us"} {
		a, code, errOut := find(same)
		if code != 0 || a.Answers[0] != ref.Answers[0] {
			t.Errorf("--time %s: exit %d, %+v, want %+v\n%s", same, code, a.Answers, ref.Answers, errOut)
		}
	}
	for _, bare := range []string{"1718000000", "1718003601000"} {
		_, errOut, code := runBin(t, "-d", dir, "index", "find", "--topic", topic, "--time", bare)
		if code != 2 || !strings.Contains(errOut, "ambiguous") || !strings.Contains(errOut, bare+"s") {
			t.Errorf("bare --time %s: exit %d, want 2 and a message giving the units\n%s", bare, code, errOut)
		}
	}
	// Relative to now: the fixture is in 2024, so an hour ago is past its end.
	if a, code, errOut := find("-1h"); code != 1 || a.Answers[0].Result != "past-end" {
		t.Errorf("--time -1h: exit %d, %+v\n%s", code, a.Answers, errOut)
	}
}

// captureOf writes a capture of a healthy fixture of seed to path.
func captureOf(t *testing.T, seed uint64, path string) {
	t.Helper()
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: seed})
	if _, errOut, code := runBin(t, "-d", healthy, "schema", "capture", "--out", path); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errOut)
	}
}

func TestFromIsNotSplitAtCommas(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "cap,2024.jsonl")
	captureOf(t, 9, capture)
	broken, _ := testutil.Fixture(t, fixtures.Options{Seed: 9, LoseSchemaLedgers: 1})
	out, errOut, code := runBin(t, "-d", broken, "schema", "repair", "--from", capture, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Restored int `json:"restored"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Restored != 1 {
		t.Fatalf("restored %d (%v), want 1\n%s", doc.Restored, err, out)
	}
}

func TestRepairSaysWhatCheckWillReport(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "cap.jsonl")
	captureOf(t, 9, capture)
	broken, _ := testutil.Fixture(t, fixtures.Options{Seed: 9, LoseSchemaLedgers: 1, LoseSchemaEntries: 1})
	out, errOut, code := runBin(t, "-d", broken, "schema", "repair", "--from", capture, "--apply")
	if code != 0 {
		t.Fatalf("repair: exit %d\n%s\n%s", code, out, errOut)
	}
	out2, _, code := runBin(t, "-d", broken, "check", "--json")
	var doc struct {
		Findings []report.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out2), &doc); err != nil {
		t.Fatal(err)
	}
	orphans := 0
	for _, f := range doc.Findings {
		if f.Severity == report.SeverityInfo {
			continue
		}
		if f.Kind != "orphan-ledger" {
			t.Errorf("after the repair check reports %s at %s: %s", f.Kind, f.Location, f.Message)
			continue
		}
		orphans++
		if !strings.Contains(out, f.Location+",") || !strings.Contains(out, "orphan-ledger") {
			t.Errorf("check reports orphan %s that the repair output never mentioned:\n%s", f.Location, out)
		}
	}
	if orphans == 0 || code != 1 {
		t.Fatalf("want the old ledger of the lost entry reported as an orphan (exit 1), got exit %d and %d orphans", code, orphans)
	}
}

// bigCapture writes a capture of at least size bytes by repeating the records
// of a real capture (the same versions, so parsing does all its work on each).
func bigCapture(t testing.TB, seed uint64, size int64, path string) {
	small := path + ".small"
	captureOf(t.(*testing.T), seed, small)
	b, err := os.ReadFile(small)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for n := int64(0); n < size; n += int64(len(b)) {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRepairFromStopsOnInterrupt(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "big.jsonl")
	bigCapture(t, 9, 150<<20, capture)
	broken, _ := testutil.Fixture(t, fixtures.Options{Seed: 9, LoseSchemaLedgers: 1})
	before := testutil.HashTree(t, broken)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		cmd := exec.Command(binary, "-d", broken, "schema", "repair", "--from", capture, "--apply")
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond) // reading done, parsing under way
		sent := time.Now()
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		took := time.Since(sent)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != report.ExitInterrupted {
			t.Fatalf("%v: %v, want exit %d\n%s", sig, err, report.ExitInterrupted, errb.String())
		}
		if took > time.Second {
			t.Errorf("%v: stopped %v after the signal, want within a second", sig, took)
		}
		if !strings.Contains(errb.String(), "interrupted") {
			t.Errorf("%v: stderr does not say it was interrupted: %q", sig, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(broken, "journal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted parse left a journal: %v", err)
	}
	testutil.SameTree(t, before, testutil.HashTree(t, broken))
}

func TestTrapsExitCodes(t *testing.T) {
	dir := faultyFixture(t)
	capture := filepath.Join(t.TempDir(), "cap.jsonl")
	captureOf(t, 1234, capture)
	existing := filepath.Join(t.TempDir(), "meta.bak")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		want   int
		stderr string
	}{
		{"negative ledger", []string{"-d", dir, "inspect", "entries", "--ledger", "-5"}, 2, "not negative"},
		{"backup exists", []string{"-d", dir, "schema", "repair", "--from", capture, "--apply", "--backup", existing}, 2, "already exists"},
		{"undo backup exists", []string{"-d", dir, "journal", "undo", "--apply", "--backup", existing, "x"}, 2, "already exists"},
		{"bad output format", []string{"-d", dir, "check", "-o", "yaml"}, 2, "table, wide, json or jsonl"},
		{"did you mean a command", []string{"chek"}, 2, `Did you mean "check"?`},
		{"did you mean a flag", []string{"-d", dir, "check", "--jsn"}, 2, `Did you mean "--json"?`},
		{"bad flag value", []string{"-d", dir, "inspect", "entries", "--ledger", "x"}, 2, "ledger"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runBin(t, c.args...)
			if code != c.want || !strings.Contains(errOut, c.stderr) {
				t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, c.want, c.stderr, out, errOut)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "journal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused --backup left a journal: %v", err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the existing backup file was overwritten")
	}
}

func TestMissingRequiredFlagUnderJSON(t *testing.T) {
	dir := faultyFixture(t)
	for _, args := range [][]string{
		{"-d", dir, "--json", "inspect", "entries"},
		{"inspect", "entries", "--json", "-d", dir},
		{"-d", dir, "-o", "json", "index", "find", "--offset", "1"},
	} {
		out, errOut, code := runBin(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "missing required flag") || !strings.Contains(errOut, "USAGE") {
			t.Errorf("%v: exit %d, want 2, nothing on stdout, help and the error on stderr\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
	}
}

func TestDemoNamesNoDeletedDir(t *testing.T) {
	out, errOut, code := runApp(t, "demo")
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, errOut)
	}
	first, _, _ := strings.Cut(out, "\n")
	tmp := strings.TrimSpace(first[strings.LastIndex(first, " "):])
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("demo temp dir %s: %v (want it removed)", tmp, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; strings.Contains(last, tmp) {
		t.Errorf("the demo's last line names the temp dir it removed: %q", last)
	}
}

// readmeExitCodes parses the README's exit-code table: code -> meaning.
func readmeExitCodes(t *testing.T) map[int]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Exit codes")
	if !ok {
		t.Fatal("README has no Exit codes section")
	}
	codes := map[int]string{}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 2 {
			continue
		}
		var code int
		if _, err := fmt.Sscanf(strings.TrimSpace(cells[0]), "%d", &code); err == nil {
			codes[code] = strings.TrimSpace(cells[1])
		}
	}
	return codes
}

// TestReadmeExitCodeTable drives every code of the README's table from a real
// scenario, and checks the table lists every code the tool has.
func TestReadmeExitCodeTable(t *testing.T) {
	table := readmeExitCodes(t)
	clean, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	broken := faultyFixture(t)
	scenarios := map[int][][]string{
		report.ExitClean:      {{"-d", clean, "check"}, {"-d", clean, "inspect", "topics"}, {"--version"}},
		report.ExitFindings:   {{"-d", broken, "check"}, {"-d", broken, "inspect", "schema-usage"}, {"-d", broken, "index", "backfill"}},
		report.ExitBadInput:   {{"check"}, {"-d", clean, "check", "--nope"}, {"-d", clean, "inspect", "entries", "--ledger", "-5"}},
		report.ExitCannotOpen: {{"-d", filepath.Join(t.TempDir(), "missing"), "check"}, {"-d", t.TempDir(), "inspect", "topics"}},
	}
	for code, runs := range scenarios {
		if _, ok := table[code]; !ok {
			t.Errorf("README's exit-code table lacks %d", code)
		}
		for _, args := range runs {
			if _, errOut, got := runBin(t, args...); got != code {
				t.Errorf("%v: exit %d, want %d (%s)\n%s", args, got, code, table[code], errOut)
			}
		}
	}
	// 130 is driven by TestRepairFromStopsOnInterrupt; here it must be documented.
	if _, ok := table[report.ExitInterrupted]; !ok {
		t.Errorf("README's exit-code table lacks %d (interrupted)", report.ExitInterrupted)
	}
	for code := range table {
		if _, ok := scenarios[code]; !ok && code != report.ExitInterrupted {
			t.Errorf("README documents exit %d, which the tool never returns", code)
		}
	}
	if !strings.Contains(exitCodesHelp, fmt.Sprint(report.ExitInterrupted)) {
		t.Errorf("--help's exit codes lack %d", report.ExitInterrupted)
	}
}

func TestJournalAtScale(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1234})
	if _, errOut, code := runBin(t, "-d", dir, "index", "backfill", "--apply", "--batch", "1"); code > 1 {
		t.Fatalf("backfill: exit %d: %s", code, errOut)
	}
	type run struct {
		Run, Command, UndoneBy string
	}
	list := func() []map[string]any {
		out, errOut, code := runBin(t, "-d", dir, "journal", "list", "-o", "json")
		if code != 0 {
			t.Fatalf("journal list: exit %d: %s", code, errOut)
		}
		var doc struct {
			Runs []map[string]any `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Runs
	}
	runs := list()
	if len(runs) < 3 {
		t.Fatalf("back-fill with --batch 1 wrote %d runs, want several", len(runs))
	}
	first, last := runs[0]["run"].(string), runs[len(runs)-1]["run"].(string)
	// last, and a unique prefix, name a run; an ambiguous prefix is refused.
	out, errOut, code := runBin(t, "-d", dir, "journal", "show", "last")
	if code != 0 || !strings.Contains(out, last) {
		t.Fatalf("journal show last: exit %d, want %s\n%s%s", code, last, out, errOut)
	}
	if strings.Count(out, "index backfill") != 1 {
		t.Errorf("journal show prints the command %d times, want once:\n%s", strings.Count(out, "index backfill"), out)
	}
	if !strings.Contains(out, "tool version") || !strings.Contains(out, Version()) && !strings.Contains(out, "(devel)") {
		t.Errorf("journal show does not give the tool version:\n%s", out)
	}
	if _, errOut, code := runBin(t, "-d", dir, "journal", "show", first[:len(first)-4]); code != 0 {
		t.Errorf("unique prefix: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runBin(t, "-d", dir, "journal", "show", first[:8]); code != 2 || !strings.Contains(errOut, "ambiguous") {
		t.Errorf("ambiguous prefix: exit %d: %s", code, errOut)
	}
	// One command undoes every batch run of the back-fill.
	out, errOut, code = runBin(t, "-d", dir, "journal", "undo", "--command", "last")
	if code != 0 || strings.Count(out, "would be undone") != len(runs) {
		t.Fatalf("dry run: exit %d, want %d runs listed\n%s%s", code, len(runs), out, errOut)
	}
	if _, errOut, code := runBin(t, "-d", dir, "journal", "undo", "--command", "--apply", last); code != 0 {
		t.Fatalf("undo --command --apply: exit %d: %s", code, errOut)
	}
	for _, r := range list() {
		if r["command"] == "index backfill" && r["undone_by"] == nil {
			t.Errorf("run %v was not undone", r["run"])
		}
	}
	out, _, _ = runBin(t, "-d", dir, "index", "backfill", "-o", "json")
	var plan struct {
		Summary []struct {
			Planned int `json:"planned"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Summary) != 1 || plan.Summary[0].Planned == 0 {
		t.Errorf("after undoing every run the back-fill should have its work again: %v\n%s", err, out)
	}
}

func TestOutputConventions(t *testing.T) {
	dir := faultyFixture(t)
	// --version
	out, _, code := runBin(t, "--version")
	if code != 0 || !strings.Contains(out, "ledgermedic version") {
		t.Errorf("--version: exit %d: %q", code, out)
	}
	// help command
	out, _, code = runBin(t, "help", "check")
	if code != 0 || !strings.Contains(out, "ledgermedic check") {
		t.Errorf("help check: exit %d:\n%s", code, out)
	}
	// bash completion lists commands
	out, _, code = runBin(t, "--generate-bash-completion")
	if code != 0 || !strings.Contains(out, "check") || !strings.Contains(out, "inspect") {
		t.Errorf("completion: exit %d:\n%s", code, out)
	}
	// --quiet: nothing on stdout, the exit code tells
	out, _, code = runBin(t, "-d", dir, "check", "--quiet")
	if code != 1 || out != "" {
		t.Errorf("check --quiet: exit %d, stdout %q", code, out)
	}
	// -o jsonl: one JSON object per line
	out, _, code = runBin(t, "-d", dir, "check", "-o", "jsonl")
	if code != 1 {
		t.Fatalf("-o jsonl: exit %d", code)
	}
	findings := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil || o["table"] == nil {
			t.Fatalf("-o jsonl line %q: %v", line, err)
		}
		if o["table"] == "findings" {
			findings++
		}
	}
	if findings == 0 {
		t.Errorf("-o jsonl has no findings")
	}
	// --out - writes the capture to stdout, alone.
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	out, errOut, code := runBin(t, "-d", healthy, "schema", "capture", "--out", "-")
	if code != 0 || !strings.Contains(errOut, "to stdout") {
		t.Fatalf("capture --out -: exit %d: %s", code, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil || o["schema_key"] == nil {
			t.Fatalf("capture line %q: %v", line, err)
		}
	}
}
