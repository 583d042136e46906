package repair_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestCLIRebuildDeletedHistories is the rebuild of deleted histories end to end: capture a
// healthy copy; in the same cluster with every schema history deleted by the
// broker, check names each key and the versions stored messages still use;
// schema repair --apply rebuilds every history byte for byte; check is clean;
// every stored message decodes with its own version as a consumer would; undo
// restores the data dir exactly.
func TestCLIRebuildDeletedHistories(t *testing.T) {
	const seed = 11
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: seed})
	// All five registry-schema topics: AVRO, JSON, PROTOBUF (ending in a
	// tombstone), KEY_VALUE and STRING (with a tombstone in the middle).
	broken, m := testutil.Fixture(t, fixtures.Options{Seed: seed, DeleteSchemaHistory: 5})
	capFile := capture(t, healthy)

	// check: one used-schema-version-missing per (topic, used version), naming the locator.
	want := map[string]bool{}
	for _, tu := range m.Topics {
		for _, u := range tu.Usage {
			if u.Version != nil && tu.SchemaKey != "" {
				want[fmt.Sprintf("%s v%d %s", tu.Topic, *u.Version, formats.SchemasRoot+"/"+tu.SchemaKey)] = true
			}
		}
	}
	if len(want) < 10 {
		t.Fatalf("the fixture uses only %d registry versions", len(want))
	}
	got := map[string]bool{}
	for _, f := range checkJSON(t, broken, 1) {
		if f.Kind == "used-schema-version-missing" {
			got[fmt.Sprintf("%s v%d %s", f.Topic, *f.Version, f.Path)] = true
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("check reports missing versions\n%v\nwant (from the manifest)\n%v", got, want)
	}

	before := testutil.Dump(t, broken)
	code, out, errOut := run(t, "--data-dir", broken, "schema", "repair", "--from", capFile)
	if code != 0 || !strings.Contains(out, "rebuild") || !strings.Contains(out, "no-locator") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, "--data-dir", broken, "--json", "schema", "repair", "--from", capFile, "--apply")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		RunID    string `json:"run_id"`
		Restored int    `json:"restored"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	versions := 0
	for _, s := range m.Schemas {
		versions += len(s.Versions)
	}
	if doc.Restored != versions {
		t.Errorf("rebuilt %d versions, the manifest has %d", doc.Restored, versions)
	}

	sameHistories(t, healthy, broken, m)
	if fs := checkJSON(t, broken, 0); len(actionable(fs)) > 0 {
		t.Fatalf("check after the rebuild: %+v", actionable(fs))
	}
	decoded := consumeAll(t, broken)
	wantMsgs := int64(0)
	for _, tu := range m.Topics {
		for _, u := range tu.Usage {
			if u.Version != nil {
				wantMsgs += u.Messages
			}
		}
	}
	if decoded != wantMsgs {
		t.Errorf("decoded %d messages with their own versions, the manifest counts %d", decoded, wantMsgs)
	}
	if code, out, _ := run(t, "--data-dir", broken, "schema", "repair", "--from", capFile); code != 0 || !strings.Contains(out, "nothing to write") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}

	if code, out, errOut := run(t, "--data-dir", broken, "journal", "undo", "--apply", doc.RunID); code != 0 {
		t.Fatalf("undo: exit %d\n%s\n%s", code, out, errOut)
	}
	if d := before.Diff(testutil.Dump(t, broken)); len(d) > 0 {
		t.Fatalf("undo left differences: %v", d)
	}
}

// TestCLIResetHistoryCollision: after a reset (history deleted, a new version 0
// registered, new messages), check reports the collision with the manifest's
// exact counts per history; repair refuses without --resolve-collision and
// writes nothing; "new" writes nothing and exits 0; "old" rebuilds the captured
// history and old messages decode with it again.
func TestCLIResetHistoryCollision(t *testing.T) {
	const seed = 12
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: seed})
	// Through the CLI, as a drill would make it.
	broken := generateCLI(t, "--seed", strconv.Itoa(seed), "--reset-schema-history", "2")
	m, err := fixtures.LoadManifest(broken)
	if err != nil {
		t.Fatal(err)
	}
	capFile := capture(t, healthy)

	reset := 0
	collisions := map[string]report{}
	for _, f := range checkJSON(t, broken, 1) {
		if f.Kind == "schema-version-collision" {
			collisions[fmt.Sprintf("%s v%d", f.Topic, *f.Version)] = f
		}
	}
	for _, tu := range m.Topics {
		if len(tu.Histories) != 2 {
			continue
		}
		reset++
		old, new := historyUsage(t, tu, fixtures.HistoryOld, 0), historyUsage(t, tu, fixtures.HistoryNew, 0)
		f, ok := collisions[tu.Topic+" v0"]
		if !ok {
			t.Fatalf("no collision reported for %s version 0: %v", tu.Topic, collisions)
		}
		gotOld, gotNew := historyCounts(t, f.Message)
		if gotOld != [2]int64{old.Messages, old.Entries} || gotNew != [2]int64{new.Messages, new.Entries} {
			t.Errorf("%s: check says old %v new %v (messages, entries); the manifest old %d/%d new %d/%d\n%s", tu.Topic,
				gotOld, gotNew, old.Messages, old.Entries, new.Messages, new.Entries, f.Message)
		}
		if old.Messages == 0 || new.Messages == 0 {
			t.Errorf("%s: the fixture has no messages of one history", tu.Topic)
		}
	}
	if reset != 2 || len(collisions) != 2 {
		t.Fatalf("%d reset topics, %d collisions: %v", reset, len(collisions), collisions)
	}
	// inspect schema-usage reports the same.
	code, out, _ := run(t, "--data-dir", broken, "--json", "inspect", "schema-usage")
	if code != 1 || strings.Count(out, `"schema-version-collision"`) != 2 {
		t.Errorf("inspect schema-usage: exit %d, collisions %d", code, strings.Count(out, `"schema-version-collision"`))
	}

	before := testutil.Dump(t, broken)
	code, out, errOut := run(t, "--data-dir", broken, "schema", "repair", "--from", capFile, "--apply")
	if code != 1 || !strings.Contains(out, "Schema version collisions") || !strings.Contains(errOut, "--resolve-collision") {
		t.Fatalf("repair without --resolve-collision: exit %d\n%s\n%s", code, out, errOut)
	}
	if d := before.Diff(testutil.Dump(t, broken)); len(d) > 0 {
		t.Fatalf("a refused repair wrote: %v", d)
	}
	if code, _, errOut := run(t, "--data-dir", broken, "schema", "repair", "--from", capFile, "--resolve-collision", "both"); code != 2 {
		t.Errorf("bad --resolve-collision: exit %d (%s)", code, errOut)
	}
	code, out, _ = run(t, "--data-dir", broken, "schema", "repair", "--from", capFile, "--apply", "--resolve-collision", "new")
	if code != 0 || !strings.Contains(out, "keep-current") {
		t.Fatalf("--resolve-collision new: exit %d\n%s", code, out)
	}
	if d := before.Diff(testutil.Dump(t, broken)); len(d) > 0 {
		t.Fatalf("--resolve-collision new wrote: %v", d)
	}

	code, out, errOut = run(t, "--data-dir", broken, "schema", "repair", "--from", capFile, "--apply", "--resolve-collision", "old")
	if code != 0 || !strings.Contains(out, "left in place, orphaned") {
		t.Fatalf("--resolve-collision old: exit %d\n%s\n%s", code, out, errOut)
	}
	sameHistories(t, healthy, broken, m)
	// Old messages decode with the rebuilt versions again; the new history's
	// ledgers are orphans now, and no collision is left.
	for _, f := range checkJSON(t, broken, 1) {
		if f.Severity != "info" && f.Kind != "orphan-ledger" {
			t.Errorf("after --resolve-collision old: %s %s: %s", f.Kind, f.Location, f.Message)
		}
	}
	for _, tu := range m.Topics {
		if len(tu.Histories) == 2 {
			n := consumeTopic(t, broken, tu.Topic, fixtures.HistoryOld)
			var want int64
			for _, u := range tu.Histories[0].Usage {
				want += u.Messages
			}
			if n != want {
				t.Errorf("%s: %d old-history messages decode, the manifest has %d", tu.Topic, n, want)
			}
		}
	}
}

// TestCLIRebuildRefused: a capture that lacks a version stored messages use, or
// whose definition does not hash to the recorded hash, is refused naming the
// version, and nothing is written.
func TestCLIRebuildRefused(t *testing.T) {
	const seed = 13
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: seed})
	broken := generateCLI(t, "--seed", strconv.Itoa(seed), "--delete-schema-history", "1")
	capFile := capture(t, healthy)
	lines := strings.SplitAfter(string(mustRead(t, capFile)), "\n")
	edit := func(name string, f func(rec map[string]any) (keep bool)) string {
		var out []string
		for _, l := range lines {
			if strings.TrimSpace(l) == "" {
				continue
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatal(err)
			}
			if rec["schema_key"] == "public/default/events" && !f(rec) {
				continue
			}
			b, _ := json.Marshal(rec)
			out = append(out, string(b)+"\n")
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(strings.Join(out, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, file string
		want       []string
	}{
		{"lacks a used version", edit("lacks.jsonl", func(r map[string]any) bool { return r["version"].(float64) != 1 }),
			[]string{"stored messages use version 1", "capture lacks it"}},
		{"definition does not hash", edit("tampered.jsonl", func(r map[string]any) bool {
			if r["version"].(float64) == 2 {
				r["definition"] = strings.Replace(r["definition"].(string), `"ts"`, `"tstamp"`, 1)
			}
			return true
		}), []string{"public/default/events version 2: hash", "does not match its definition", "lacks it"}},
	}
	before := testutil.Dump(t, broken)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "--data-dir", broken, "schema", "repair", "--from", c.file, "--apply")
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output does not say %q:\n%s\n%s", w, out, errOut)
				}
			}
			if d := before.Diff(testutil.Dump(t, broken)); len(d) > 0 {
				t.Fatalf("a refused rebuild wrote: %v", d)
			}
		})
	}
}

func generateCLI(t *testing.T, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dd")
	if code, out, errOut := run(t, append([]string{"fixtures", "generate", "--out", dir}, args...)...); code != 0 {
		t.Fatalf("fixtures generate %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	return dir
}

type report struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	Location string `json:"location"`
	Message  string `json:"message"`
	Topic    string `json:"topic"`
	Path     string `json:"path"`
	Version  *int64 `json:"schema_version"`
}

func checkJSON(t *testing.T, dir string, wantCode int) []report {
	t.Helper()
	code, out, errOut := run(t, "--data-dir", dir, "--json", "check")
	if code != wantCode {
		t.Fatalf("check: exit %d, want %d\n%s\n%s", code, wantCode, out, errOut)
	}
	var doc struct {
		Findings []report `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return doc.Findings
}

func actionable(fs []report) []report {
	var out []report
	for _, f := range fs {
		if f.Severity != "info" {
			out = append(out, f)
		}
	}
	return out
}

var historyRE = regexp.MustCompile(`old history: (\d+) messages in (\d+) entries.*new history: (\d+) messages in (\d+) entries`)

func historyCounts(t *testing.T, msg string) (old, new [2]int64) {
	t.Helper()
	m := historyRE.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("no per-history counts in %q", msg)
	}
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	return [2]int64{n(m[1]), n(m[2])}, [2]int64{n(m[3]), n(m[4])}
}

func historyUsage(t *testing.T, tu fixtures.TopicUsage, history string, version int64) fixtures.SchemaUsage {
	t.Helper()
	for _, h := range tu.Histories {
		if h.History != history {
			continue
		}
		for _, u := range h.Usage {
			if u.Version != nil && *u.Version == version {
				return u
			}
		}
	}
	t.Fatalf("%s: the manifest has no %s-history usage of version %d", tu.Topic, history, version)
	return fixtures.SchemaUsage{}
}

func capture(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "schemas.jsonl")
	if code, out, errOut := run(t, "--data-dir", dir, "schema", "capture", "--out", p); code != 0 {
		t.Fatalf("capture: exit %d\n%s\n%s", code, out, errOut)
	}
	return p
}

// version is one schema version as a broker reads it: the locator's index
// entry, the ledger's metadata, the SchemaEntry and its SchemaInfo.
type version struct {
	ie    *schemapb.IndexEntry
	md    *bkpb.LedgerMetadataFormat
	entry *schemapb.SchemaEntry
	info  []byte // SchemaInfo bytes as stored
}

func readHistory(t *testing.T, dd *datadir.DataDir, key string) (*schemapb.SchemaLocator, []version) {
	t.Helper()
	n, err := dd.Metadata.Get(formats.SchemasRoot + "/" + key)
	if err != nil {
		t.Fatalf("locator of %s: %v", key, err)
	}
	loc, err := formats.DecodeSchemaLocator(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	var out []version
	for _, ie := range loc.GetIndex() {
		l := ie.GetPosition().GetLedgerId()
		node, err := dd.Metadata.Get(formats.LedgerPath(l))
		if err != nil {
			t.Fatalf("%s version %d: ledger %d node: %v", key, ie.GetVersion(), l, err)
		}
		md, err := formats.DecodeLedgerMetadata(node.Value)
		if err != nil {
			t.Fatal(err)
		}
		b, err := dd.Ledgers.Entry(l, ie.GetPosition().GetEntryId())
		if err != nil {
			t.Fatalf("%s version %d: %v", key, ie.GetVersion(), err)
		}
		se, err := formats.DecodeSchemaEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		if md.GetLength() != int64(len(b)) || md.GetState() != bkpb.LedgerMetadataFormat_CLOSED || md.GetLastEntryId() != 0 {
			t.Errorf("%s version %d: ledger %d metadata %v for a %d-byte entry", key, ie.GetVersion(), l, md, len(b))
		}
		out = append(out, version{ie: ie, md: md, entry: se, info: se.GetSchemaData()})
	}
	return loc, out
}

// sameHistories compares every schema history the manifest says was cleared
// with the healthy cluster's: SchemaInfo bytes identical, the same versions and
// hashes in the locator and in each SchemaEntry's index (positions mapped to the
// new ledgers, version 0's placeholder kept), and schema ledger metadata.
func sameHistories(t *testing.T, healthy, repaired string, m *fixtures.Manifest) {
	t.Helper()
	hd, rd := testutil.OpenReadOnly(t, healthy), testutil.OpenReadOnly(t, repaired)
	defer hd.Close()
	defer rd.Close()
	for _, s := range m.Schemas {
		if s.History == "" {
			continue
		}
		hLoc, hv := readHistory(t, hd, s.Key)
		rLoc, rv := readHistory(t, rd, s.Key)
		if len(hv) != len(rv) || len(rv) != len(s.Versions) {
			t.Fatalf("%s: %d versions rebuilt, healthy has %d, the manifest %d", s.Key, len(rv), len(hv), len(s.Versions))
		}
		newID := map[int64]int64{-1: -1}
		for i := range hv {
			newID[hv[i].ie.GetPosition().GetLedgerId()] = rv[i].ie.GetPosition().GetLedgerId()
		}
		strip := func(ies []*schemapb.IndexEntry, mapIDs bool) string {
			var b strings.Builder
			for _, ie := range ies {
				l := ie.GetPosition().GetLedgerId()
				if mapIDs {
					l = newID[l]
				}
				fmt.Fprintf(&b, "v%d@%d:%d#%x ", ie.GetVersion(), l, ie.GetPosition().GetEntryId(), ie.GetHash())
			}
			return b.String()
		}
		if a, b := strip(append(hLoc.GetIndex(), hLoc.GetInfo()), true), strip(append(rLoc.GetIndex(), rLoc.GetInfo()), false); a != b {
			t.Errorf("%s: locator\n%s\nwant\n%s", s.Key, b, a)
		}
		for i := range hv {
			v := s.Versions[i].Version
			if !bytes.Equal(hv[i].info, rv[i].info) {
				t.Errorf("%s version %d: SchemaInfo bytes differ from what the generator wrote", s.Key, v)
			}
			if a, b := strip(hv[i].entry.GetIndex(), true), strip(rv[i].entry.GetIndex(), false); a != b {
				t.Errorf("%s version %d: SchemaEntry index\n%s\nwant\n%s", s.Key, v, b, a)
			}
			md := rv[i].md
			for k, want := range map[string]string{"application": "pulsar", "component": "schema", "pulsar/schemaId": s.Key} {
				if got, _ := formats.CustomMetadata(md, k); got != want {
					t.Errorf("%s version %d: ledger metadata %s=%q, want %q", s.Key, v, k, got, want)
				}
			}
			if md.GetDigestType() != hv[i].md.GetDigestType() || len(md.GetPassword()) != 0 {
				t.Errorf("%s version %d: digest %v password %q, want %v and empty", s.Key, v, md.GetDigestType(), md.GetPassword(), hv[i].md.GetDigestType())
			}
		}
	}
}

// consumeAll decodes every stored message that carries a registry version with
// the schema its topic's locator gives for that version, and returns how many
// decoded; any message that does not decode fails the test.
func consumeAll(t *testing.T, dir string) int64 {
	t.Helper()
	dd := testutil.OpenReadOnly(t, dir)
	defer dd.Close()
	var n int64
	err := dd.Metadata.Walk(context.Background(), formats.ManagedLedgersRoot+"/", func(node store.Node) error {
		tn, ok := formats.ParseManagedLedgerPath(node.Path)
		if !ok {
			return nil
		}
		n += consumeML(t, dd, tn, node.Value, -1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// consumeTopic decodes the messages of one topic (all partitions) published
// before the reset (history old) and returns how many decoded.
func consumeTopic(t *testing.T, dir, topic, history string) int64 {
	t.Helper()
	dd := testutil.OpenReadOnly(t, dir)
	defer dd.Close()
	base, err := formats.ParseTopic(topic)
	if err != nil {
		t.Fatal(err)
	}
	// The new history was registered after every old message: its version 0's
	// timestamp in the fixture is the split.
	split := int64(-1)
	if history == fixtures.HistoryOld {
		split = resetTime(t, dir, topic)
	}
	var n int64
	err = dd.Metadata.Walk(context.Background(), formats.ManagedLedgersRoot+"/", func(node store.Node) error {
		tn, ok := formats.ParseManagedLedgerPath(node.Path)
		if !ok || tn.Base() != base {
			return nil
		}
		n += consumeML(t, dd, tn, node.Value, split)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func resetTime(t *testing.T, dir, topic string) int64 {
	t.Helper()
	m, err := fixtures.LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Schemas {
		if s.Topic == topic && len(s.NewVersions) > 0 {
			return s.NewVersions[0].Timestamp
		}
	}
	t.Fatalf("%s has no new history", topic)
	return 0
}

// consumeML decodes the entries of one managed ledger (only those published
// before splitMs when it is not -1).
func consumeML(t *testing.T, dd *datadir.DataDir, tn formats.TopicName, value []byte, splitMs int64) int64 {
	t.Helper()
	info, _, err := formats.DecodeManagedLedgerInfo(value)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[int64]*schemapb.SchemaInfo{}
	var n int64
	for _, li := range info.GetLedgerInfo() {
		err := dd.Ledgers.Entries(context.Background(), li.GetLedgerId(), 0, -1, func(entryID int64, v []byte) error {
			e, err := formats.ParseEntry(v)
			if err != nil {
				return fmt.Errorf("ledger %d entry %d: %w", li.GetLedgerId(), entryID, err)
			}
			md := e.Metadata
			if md.SchemaVersion == nil || (splitMs >= 0 && int64(md.GetPublishTime()) >= splitMs) {
				return nil
			}
			ver, err := formats.DecodeSchemaVersion(md.SchemaVersion)
			if err != nil {
				return err
			}
			si := schemas[ver]
			if si == nil {
				si = schemaOf(t, dd, tn.Base().SchemaKey(), ver)
				schemas[ver] = si
			}
			payloads := [][]byte{e.Payload}
			if md.NumMessagesInBatch != nil {
				msgs, err := formats.ParseBatch(e.Payload, int(md.GetNumMessagesInBatch()))
				if err != nil {
					return err
				}
				payloads = payloads[:0]
				for _, bm := range msgs {
					payloads = append(payloads, bm.Payload)
				}
			}
			for _, p := range payloads {
				if err := decodeAs(si, p); err != nil {
					return fmt.Errorf("%s ledger %d entry %d (schema version %d, %s): %w", tn, li.GetLedgerId(), entryID, ver, si.GetType(), err)
				}
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func schemaOf(t *testing.T, dd *datadir.DataDir, key string, v int64) *schemapb.SchemaInfo {
	t.Helper()
	_, vs := readHistory(t, dd, key)
	for _, x := range vs {
		if x.ie.GetVersion() == v {
			info, err := formats.DecodeSchemaInfo(x.info)
			if err != nil {
				t.Fatal(err)
			}
			return info
		}
	}
	t.Fatalf("%s has no version %d", key, v)
	return nil
}

// decodeAs decodes one payload as a Pulsar client of the schema's type does,
// strictly: Avro must re-encode to the same bytes, JSON and protobuf must
// carry exactly the record's fields.
func decodeAs(si *schemapb.SchemaInfo, p []byte) error {
	def := si.GetSchema()
	switch si.GetType() {
	case schemapb.SchemaInfo_STRING:
		if !utf8.Valid(p) {
			return fmt.Errorf("not UTF-8")
		}
		return nil
	case schemapb.SchemaInfo_KEYVALUE:
		_, value, err := formats.SplitKeyValueSchema(def)
		if err != nil {
			return err
		}
		return decodeAvro(value, p)
	case schemapb.SchemaInfo_AVRO:
		return decodeAvro(def, p)
	case schemapb.SchemaInfo_JSON:
		var rec map[string]any
		if err := json.Unmarshal(p, &rec); err != nil {
			return err
		}
		return sameFields(def, len(rec), func(name string) bool { _, ok := rec[name]; return ok })
	case schemapb.SchemaInfo_PROTOBUF:
		seen := map[protowire.Number]bool{}
		for b := p; len(b) > 0; {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b, seen[num] = b[m:], true
		}
		i := 0
		return sameFields(bytes.ReplaceAll(def, []byte("$"), nil), len(seen), func(string) bool { i++; return seen[protowire.Number(i)] })
	}
	return fmt.Errorf("no decoder for %s", si.GetType())
}

func decodeAvro(def, p []byte) error {
	s, err := avro.ParseBytes(def)
	if err != nil {
		return err
	}
	var v any
	if err := avro.Unmarshal(s, p, &v); err != nil {
		return err
	}
	again, err := avro.Marshal(s, v)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, p) {
		return fmt.Errorf("avro: %d bytes re-encode to %d", len(p), len(again))
	}
	return nil
}

// sameFields checks that a decoded record has exactly the fields of the Avro
// record def.
func sameFields(def []byte, have int, has func(name string) bool) error {
	s, err := avro.ParseBytes(def)
	if err != nil {
		return err
	}
	rs, ok := s.(*avro.RecordSchema)
	if !ok {
		return fmt.Errorf("definition is not a record")
	}
	if have != len(rs.Fields()) {
		return fmt.Errorf("%d fields, the schema has %d", have, len(rs.Fields()))
	}
	for _, f := range rs.Fields() {
		if !has(f.Name()) {
			return fmt.Errorf("field %s missing", f.Name())
		}
	}
	return nil
}
