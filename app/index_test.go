package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/index"
	"github.com/ledgermedic/ledgermedic/report"
)

func indexRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := Env{Stdout: &out, Stderr: &errOut}
	code := Run(context.Background(), append([]string{"ledgermedic"}, args...), e)
	return code, out.String(), errOut.String()
}

func indexFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dd")
	if _, err := fixtures.Generate(context.Background(), dir, fixtures.Options{Seed: 2}, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestIndexBackfillAndFindCLI(t *testing.T) {
	dir := indexFixture(t)
	// Dry run: the fixture's offloaded first ledger cannot be inferred (a warning): exit 1.
	code, out, stderr := indexRun(t, "-d", dir, "--json", "index", "backfill")
	if code != report.ExitFindings {
		t.Fatalf("dry run exit %d: %s", code, stderr)
	}
	var doc struct {
		Summary []struct {
			Planned int `json:"planned"`
			Written int `json:"written"`
		} `json:"summary"`
		Plan  []map[string]any `json:"plan"`
		Runs  []string         `json:"runs"`
		Notes []string         `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(doc.Summary) != 1 || doc.Summary[0].Planned == 0 || doc.Summary[0].Written != 0 || len(doc.Plan) != doc.Summary[0].Planned {
		t.Fatalf("dry run summary %+v, %d plan rows", doc.Summary, len(doc.Plan))
	}

	code, out, stderr = indexRun(t, "-d", dir, "--json", "index", "backfill", "--apply", "--batch", "3")
	if code != report.ExitFindings {
		t.Fatalf("apply exit %d: %s", code, stderr)
	}
	doc.Runs = nil
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary[0].Written == 0 || len(doc.Runs) == 0 {
		t.Fatalf("apply: %+v", doc)
	}

	// Found: exit 0, one ledger read.
	code, out, stderr = indexRun(t, "-d", dir, "--json", "index", "find", "--topic", "acme/orders/orders-partition-1", "--offset", "30")
	if code != report.ExitClean {
		t.Fatalf("find exit %d: %s", code, stderr)
	}
	var ans struct {
		Answers []struct {
			Method string `json:"method"`
			Ledger int64  `json:"ledger_id"`
			Base   int64  `json:"base_offset"`
			Last   int64  `json:"last_offset"`
			Reads  int    `json:"entry_reads"`
			Touch  int    `json:"ledgers_touched"`
		} `json:"answers"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil {
		t.Fatal(err)
	}
	if a := ans.Answers; len(a) != 1 || a[0].Method != "firstEntryIndex" || a[0].Base > 30 || a[0].Last < 30 || a[0].Touch != 1 {
		t.Fatalf("find: %+v", ans)
	}

	// --compare prints two answers that agree.
	code, out, _ = indexRun(t, "-d", dir, "index", "find", "--topic", "acme/orders/orders-partition-1", "--offset", "30", "--compare")
	if code != report.ExitClean || !strings.Contains(out, "legacy") || !strings.Contains(out, "entry reads") {
		t.Fatalf("compare exit %d:\n%s", code, out)
	}

	// Past the end: exit 1.
	if code, _, _ := indexRun(t, "-d", dir, "index", "find", "--topic", "acme/orders/orders-partition-1", "--offset", "99999999"); code != report.ExitFindings {
		t.Fatalf("past end exit %d", code)
	}
}

func TestIndexFindBadInput(t *testing.T) {
	dir := indexFixture(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--topic", "acme/orders/orders", "--offset", "1"}, "is partitioned (3 partitions"},
		{[]string{"--topic", "acme/orders/nope", "--offset", "1"}, "no managed ledger"},
		{[]string{"--topic", "acme/orders/orders-partition-0"}, "exactly one of --offset and --time"},
		{[]string{"--topic", "acme/orders/orders-partition-0", "--offset", "1", "--time", "5"}, "exactly one"},
		{[]string{"--topic", "acme/orders/orders-partition-0", "--time", "yesterday"}, "RFC 3339"},
	}
	for _, c := range cases {
		code, _, stderr := indexRun(t, append([]string{"-d", dir, "index", "find"}, c.args...)...)
		if code != report.ExitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d stderr %q, want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if code, _, stderr := indexRun(t, "-d", dir, "index", "backfill", "--topic", "acme/orders/nope"); code != report.ExitBadInput {
		t.Errorf("backfill unknown topic: exit %d %s", code, stderr)
	}
}

// A back-fill of more topics than index.DefaultRowLimit lists the first ones and
// counts the rest, in the table and in JSON, and still writes every topic.
func TestIndexBackfillListsAtMostRowLimit(t *testing.T) {
	const topics = index.DefaultRowLimit + 60
	dir := filepath.Join(t.TempDir(), "dd")
	if _, err := fixtures.Generate(context.Background(), dir, fixtures.Options{Seed: 2, Topics: topics}, nil); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := indexRun(t, "-d", dir, "index", "backfill")
	if code > report.ExitFindings || !strings.Contains(out, fmt.Sprintf("the topics table lists the first %d of ", index.DefaultRowLimit)) {
		t.Fatalf("dry run: exit %d, no note of the topics not listed:\n%s%s", code, tail(out, 2000), stderr)
	}
	code, out, stderr = indexRun(t, "-d", dir, "--json", "index", "backfill", "--apply")
	if code > report.ExitFindings {
		t.Fatalf("apply: exit %d: %s", code, stderr)
	}
	var doc struct {
		Summary           []struct{ Topics, Planned, Written int64 }
		Topics            []json.RawMessage
		Findings          []struct{ Kind string }
		TopicsNotListed   int64            `json:"topics_not_listed"`
		FindingsNotListed map[string]int64 `json:"findings_not_listed"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, tail(out, 2000))
	}
	s := doc.Summary[0]
	// A partitioned topic has a managed ledger per partition: the summary counts those.
	if s.Topics < topics || s.Written == 0 || s.Written != s.Planned {
		t.Fatalf("summary %+v, want at least %d managed ledgers, every planned ledger written", s, topics)
	}
	if len(doc.Topics) != index.DefaultRowLimit || doc.TopicsNotListed == 0 || int64(len(doc.Topics))+doc.TopicsNotListed > s.Topics {
		t.Fatalf("%d topics listed, %d not listed, of %d", len(doc.Topics), doc.TopicsNotListed, s.Topics)
	}
	kinds := map[string]int{}
	for _, f := range doc.Findings {
		kinds[f.Kind]++
	}
	for kind, n := range doc.FindingsNotListed {
		if n <= 0 || kinds[kind] != index.DefaultRowLimit {
			t.Errorf("%s: %d not listed, %d listed; want the first %d listed", kind, n, kinds[kind], index.DefaultRowLimit)
		}
	}
	if len(doc.FindingsNotListed) == 0 {
		t.Error("no finding kind reached the limit; the fixture has an open ledger per topic")
	}
	// Every topic was written: a second run has nothing to do.
	code, out, _ = indexRun(t, "-d", dir, "--json", "index", "backfill")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Summary[0].Planned != 0 {
		t.Fatalf("after --apply: exit %d, %+v, %v", code, doc.Summary, err)
	}
}

// tail is the last n bytes of s, for failure messages of long outputs.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
