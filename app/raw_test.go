package app

// Issue 15, raw bytes: inspect node --raw/--hex, inspect entries --hex and
// --payload, inspect entries --topic --offset/--time, report --out -. Each test
// runs the real binary against a generated fixture and checks the bytes against
// the store itself or the manifest of what the generator wrote.

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// storeBytes reads metadata nodes and ledger entries of a data dir in-process
// (and closes it before the binary runs: the writer lock).
func storeBytes(t *testing.T, dir string, paths []string, entries map[[2]int64]bool) (map[string][]byte, map[[2]int64][]byte) {
	t.Helper()
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	nodes := map[string][]byte{}
	for _, p := range paths {
		n, err := dd.Metadata.Get(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		nodes[p] = bytes.Clone(n.Value)
	}
	got := map[[2]int64][]byte{}
	for k := range entries {
		v, err := dd.Ledgers.Entry(k[0], k[1])
		if err != nil {
			t.Fatalf("entry %d:%d: %v", k[0], k[1], err)
		}
		got[k] = bytes.Clone(v)
	}
	return nodes, got
}

// dumpLine is one line of a hexdump -C style dump: offset, up to 16 bytes.
var dumpLine = regexp.MustCompile(`^([0-9a-f]{8})  ((?:[0-9a-f]{2} {1,2})+) *\|.*\|$`)

// parseDump reads a hex dump back into bytes, checking each line's offset.
func parseDump(t *testing.T, text string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		m := dumpLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a hex dump line: %q", line)
		}
		if want := fmt.Sprintf("%08x", len(out)); m[1] != want {
			t.Fatalf("line %q: offset %s, want %s", line, m[1], want)
		}
		b, err := hex.DecodeString(strings.ReplaceAll(m[2], " ", ""))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, b...)
	}
	return out
}

func TestRawNodeBytesAndHexDump(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 11})
	var paths []string
	for _, ml := range m.ManagedLedgers {
		paths = append(paths, ml.Path) // compressed and plain encodings alike
	}
	for _, s := range m.Schemas {
		if s.History == "" {
			paths = append(paths, s.LocatorPath)
		}
	}
	want, _ := storeBytes(t, dir, paths, nil)
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			out, errOut, code := runBin(t, "-d", dir, "inspect", "node", p, "--raw")
			if code != 0 || errOut != "" {
				t.Fatalf("--raw: exit %d, stderr %q", code, errOut)
			}
			if !bytes.Equal([]byte(out), want[p]) {
				t.Fatalf("--raw wrote %d bytes, the store holds %d (or they differ)", len(out), len(want[p]))
			}
			out, errOut, code = runBin(t, "-d", dir, "inspect", "node", "--hex", p)
			if code != 0 || errOut != "" {
				t.Fatalf("--hex: exit %d, stderr %q", code, errOut)
			}
			if got := parseDump(t, out); !bytes.Equal(got, want[p]) {
				t.Fatalf("--hex dump parses back to %x, the store holds %x", got, want[p])
			}
		})
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"both", []string{"inspect", "node", paths[0], "--raw", "--hex"}, 2},
		{"missing node", []string{"inspect", "node", "/managed-ledgers/no/such", "--raw"}, 2},
	}
	for _, c := range cases {
		out, _, code := runBin(t, append([]string{"-d", dir}, c.args...)...)
		if code != c.want || out != "" {
			t.Errorf("%s: exit %d (want %d), stdout %q (want none)", c.name, code, c.want, out)
		}
	}
}

// entriesDoc is what inspect entries --json prints (the parts tests read).
type entriesDoc struct {
	Entries []struct {
		EntryID       int64  `json:"entry_id"`
		BatchSize     int    `json:"batch_size"`
		SchemaVersion string `json:"schema_version_hex"`
	} `json:"entries"`
	Messages []struct {
		EntryID      int64           `json:"entry_id"`
		LedgerID     int64           `json:"ledger_id"`
		BatchIndex   *int            `json:"batch_index"`
		Key          string          `json:"key"`
		Payload      json.RawMessage `json:"payload"`
		PayloadHex   *string         `json:"payload_hex"`
		PayloadError string          `json:"payload_error"`
	} `json:"messages"`
	EntryBytes []struct {
		LedgerID int64  `json:"ledger_id"`
		EntryID  int64  `json:"entry_id"`
		Hex      string `json:"hex"`
	} `json:"entry_bytes"`
	Notes []string `json:"notes"`
}

func entriesJSON(t *testing.T, dir string, args ...string) entriesDoc {
	t.Helper()
	out, errOut, code := runBin(t, append([]string{"-d", dir, "inspect", "entries", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("inspect entries %v: exit %d\n%s", args, code, errOut)
	}
	var doc entriesDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("inspect entries %v: %v\n%s", args, err, out)
	}
	return doc
}

// storedLedgers are the ledgers of a managed ledger whose entries are in the store.
func storedLedgers(ml fixtures.ManagedLedger) []fixtures.MLLedger {
	var out []fixtures.MLLedger
	for _, l := range ml.Ledgers {
		if !l.Offloaded && l.Lost == "" {
			out = append(out, l)
		}
	}
	return out
}

func TestHexEntriesEqualStoredBytes(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 12})
	l := storedLedgers(m.ManagedLedgers[0])[0]
	doc := entriesJSON(t, dir, "--ledger", fmt.Sprint(l.ID), "--to", "3", "--hex")
	want := map[[2]int64]bool{}
	for i := int64(0); i <= 3; i++ {
		want[[2]int64{l.ID, i}] = true
	}
	_, stored := storeBytes(t, dir, nil, want)
	if len(doc.EntryBytes) != 4 {
		t.Fatalf("entry_bytes has %d entries, want 4", len(doc.EntryBytes))
	}
	for _, eb := range doc.EntryBytes {
		if got := eb.Hex; got != hex.EncodeToString(stored[[2]int64{eb.LedgerID, eb.EntryID}]) {
			t.Errorf("entry %d:%d: JSON hex differs from the stored bytes", eb.LedgerID, eb.EntryID)
		}
	}
	// The table form: each dump, after its "entry L:E, N bytes" line, parses back.
	out, errOut, code := runBin(t, "-d", dir, "inspect", "entries", "--ledger", fmt.Sprint(l.ID), "--to", "3", "--hex")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	parts := regexp.MustCompile(`(?m)^entry (\d+):(\d+), (\d+) bytes\n`).FindAllStringSubmatchIndex(out, -1)
	if len(parts) != 4 {
		t.Fatalf("%d entry dumps, want 4:\n%s", len(parts), out)
	}
	for i, p := range parts {
		end := len(out)
		if i+1 < len(parts) {
			end = parts[i+1][0]
		}
		var ledger, entry int64
		fmt.Sscan(out[p[2]:p[3]], &ledger)
		fmt.Sscan(out[p[4]:p[5]], &entry)
		got := parseDump(t, strings.TrimRight(out[p[1]:end], "\n"))
		if !bytes.Equal(got, stored[[2]int64{ledger, entry}]) {
			t.Errorf("entry %d:%d: the dump parses back to other bytes than stored", ledger, entry)
		}
	}
}

// reencode turns a decoded JSON value back into what hamba/avro marshals for
// schema s (JSON numbers to the field's type, unions to their non-null branch).
func reencode(s avro.Schema, v any) (any, error) {
	switch s := s.(type) {
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("record %s: got %T", s.Name(), v)
		}
		out := map[string]any{}
		for _, f := range s.Fields() {
			fv, err := reencode(f.Type(), m[f.Name()])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name(), err)
			}
			out[f.Name()] = fv
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil {
			return nil, nil
		}
		for _, b := range s.Types() {
			if b.Type() != avro.Null {
				return reencode(b, v)
			}
		}
	case *avro.MapSchema:
		m, _ := v.(map[string]any)
		out := map[string]any{}
		for k, x := range m {
			var err error
			if out[k], err = reencode(s.Values(), x); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *avro.PrimitiveSchema:
		n, isNum := v.(json.Number)
		switch s.Type() {
		case avro.Long:
			if isNum {
				return n.Int64()
			}
		case avro.Int:
			if isNum {
				i, err := n.Int64()
				return int(i), err
			}
		case avro.Double, avro.Float:
			if isNum {
				return n.Float64()
			}
		}
	}
	return v, nil
}

// splitPayloads returns the message payloads of a stored entry, as the broker wrote them.
func splitPayloads(t *testing.T, v []byte) [][]byte {
	t.Helper()
	e, err := formats.ParseEntry(v)
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.DecompressPayload(e.Metadata.GetCompression(), e.Payload, int(e.Metadata.GetUncompressedSize()))
	if err != nil {
		t.Fatal(err)
	}
	if e.Metadata.NumMessagesInBatch == nil {
		return [][]byte{p}
	}
	msgs, err := formats.ParseBatch(p, int(e.Metadata.GetNumMessagesInBatch()))
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.Payload
	}
	return out
}

func TestPayloadDecodesAvroAndKeyValueTopics(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 13})
	schemas := map[string]fixtures.Schema{}
	for _, s := range m.Schemas {
		schemas[s.Topic] = s
	}
	checked := map[string]int{}
	for _, ml := range m.ManagedLedgers {
		s, ok := schemas[ml.BaseTopic]
		if !ok || s.History != "" || (s.Versions[0].Type != "AVRO" && s.Versions[0].Type != "KEY_VALUE") {
			continue
		}
		for _, l := range storedLedgers(ml) {
			doc := entriesJSON(t, dir, "--ledger", fmt.Sprint(l.ID), "--payload", "--hex")
			raw := map[int64][]byte{}
			for _, eb := range doc.EntryBytes {
				raw[eb.EntryID], _ = hex.DecodeString(eb.Hex)
			}
			versions := map[int64]string{}
			var messages int
			for _, e := range doc.Entries {
				versions[e.EntryID] = e.SchemaVersion
				messages += max(e.BatchSize, 1)
			}
			if len(doc.Messages) != messages {
				t.Fatalf("ledger %d: %d messages decoded, the entries hold %d", l.ID, len(doc.Messages), messages)
			}
			for _, msg := range doc.Messages {
				where := fmt.Sprintf("%s ledger %d entry %d message %v", ml.Topic, l.ID, msg.EntryID, msg.BatchIndex)
				if msg.PayloadError != "" || msg.Payload == nil || string(msg.Payload) == "null" {
					t.Fatalf("%s: not decoded: %s", where, msg.PayloadError)
				}
				vb, _ := hex.DecodeString(versions[msg.EntryID])
				ver, err := formats.DecodeSchemaVersion(vb)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				def := s.Versions[ver].Definition
				payload := splitPayloads(t, raw[msg.EntryID])[max(0, derefInt(msg.BatchIndex))]
				value := msg.Payload
				if s.Versions[ver].Type == "KEY_VALUE" {
					var kv struct {
						Key   string          `json:"key"`
						Value json.RawMessage `json:"value"`
					}
					if err := json.Unmarshal(msg.Payload, &kv); err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					if key, _ := base64.StdEncoding.DecodeString(msg.Key); kv.Key != string(key) {
						t.Errorf("%s: key %q, the partition key says %q", where, kv.Key, key)
					}
					if _, def, err = formats.SplitKeyValueSchema(def); err != nil {
						t.Fatal(err)
					}
					value = kv.Value
				}
				schema, err := avro.ParseBytes(def)
				if err != nil {
					t.Fatal(err)
				}
				dec := json.NewDecoder(bytes.NewReader(value))
				dec.UseNumber()
				var v any
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				rv, err := reencode(schema, v)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				again, err := avro.Marshal(schema, rv)
				if err != nil {
					t.Fatalf("%s: re-encode %s: %v", where, value, err)
				}
				if !bytes.Equal(again, payload) {
					t.Fatalf("%s: %s re-encodes to %x, the message is %x", where, value, again, payload)
				}
				checked[s.Versions[ver].Type]++
			}
		}
	}
	if checked["AVRO"] == 0 || checked["KEY_VALUE"] == 0 {
		t.Fatalf("messages checked per schema type: %v; want AVRO and KEY_VALUE", checked)
	}
	t.Logf("messages decoded and re-encoded to their stored bytes: %v", checked)
}

func derefInt(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func TestPayloadOfALostSchemaVersionIsHexWithTheReason(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 14, LoseSchemaLedgers: 3})
	lost := map[string]int64{} // "key version N" → version
	topics := map[string]bool{}
	for _, s := range m.Schemas {
		for _, v := range s.Versions {
			if v.Lost != "" && s.History == "" {
				lost[fmt.Sprintf("schema %s version %d ", s.Key, v.Version)] = v.Version
				topics[s.Topic] = true
			}
		}
	}
	if len(lost) == 0 {
		t.Fatal("the fixture lost no schema version")
	}
	var shown int
	for _, ml := range m.ManagedLedgers {
		if !topics[ml.BaseTopic] {
			continue
		}
		for _, l := range storedLedgers(ml) {
			doc := entriesJSON(t, dir, "--ledger", fmt.Sprint(l.ID), "--payload")
			for _, msg := range doc.Messages {
				for prefix := range lost {
					if !strings.HasPrefix(msg.PayloadError, prefix) {
						continue
					}
					shown++
					if msg.PayloadHex == nil || *msg.PayloadHex == "" || (msg.Payload != nil && string(msg.Payload) != "null") {
						t.Errorf("ledger %d entry %d: a message of a lost version is not shown as hex", l.ID, msg.EntryID)
					}
					if !strings.Contains(msg.PayloadError, "ledger-lost") && !strings.Contains(msg.PayloadError, "entry-lost") {
						t.Errorf("the reason %q does not say the version is lost", msg.PayloadError)
					}
				}
			}
		}
	}
	if shown == 0 {
		t.Fatalf("no message of a lost version (%v) was shown with the reason", lost)
	}
}

func TestEntriesTopicOffsetShowsTheEntryIndexFindNames(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 15})
	var ml fixtures.ManagedLedger
	for _, x := range m.ManagedLedgers {
		// The first ledger stored: a time before every entry names its entry 0 (an
		// offloaded first ledger would be the answer, in offloaded ledger N).
		if x.Indexed && len(storedLedgers(x)) > 0 && storedLedgers(x)[0].ID == x.Ledgers[0].ID {
			ml = x
			break
		}
	}
	if ml.Topic == "" {
		t.Fatal("no indexed topic in the fixture")
	}
	l := storedLedgers(ml)[0]
	for _, target := range [][]string{
		{"--offset", fmt.Sprint(l.FirstIndex)},
		{"--offset", fmt.Sprint((l.FirstIndex + l.LastIndex) / 2)},
		{"--offset", fmt.Sprint(l.LastIndex)},
		{"--time", "2024-06-10T00:00:00Z"},
	} {
		out, errOut, code := runBin(t, append([]string{"-d", dir, "index", "find", "--topic", ml.Topic, "-o", "json"}, target...)...)
		if code != 0 {
			t.Fatalf("index find %v: exit %d\n%s", target, code, errOut)
		}
		pos := regexp.MustCompile(`"ledger_id":\s*(\d+),\s*"entry_id":\s*(\d+)`).FindStringSubmatch(out)
		if pos == nil {
			t.Fatalf("index find %v names no position:\n%s", target, out)
		}
		doc := entriesJSON(t, dir, append([]string{"--topic", ml.Topic, "--count", "2"}, target...)...)
		if len(doc.Entries) == 0 || fmt.Sprint(doc.Entries[0].EntryID) != pos[2] {
			t.Fatalf("%v: inspect entries shows %+v, index find names %s:%s", target, doc.Entries, pos[1], pos[2])
		}
		if len(doc.Notes) == 0 || !strings.Contains(doc.Notes[0], "entry "+pos[1]+":"+pos[2]) {
			t.Errorf("%v: the note %q does not name entry %s:%s", target, doc.Notes, pos[1], pos[2])
		}
		for i, e := range doc.Entries {
			if fmt.Sprint(e.EntryID-doc.Entries[0].EntryID) != fmt.Sprint(i) {
				t.Errorf("%v: --count: entry %d at row %d", target, e.EntryID, i)
			}
		}
	}
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"--topic", ml.Topic, "--offset", "999999999"}, 1}, // past the end
		{[]string{"--topic", ml.Topic, "--offset", "1", "--time", "-1h"}, 2},
		{[]string{"--offset", "1"}, 2},
		{[]string{"--topic", ml.Topic, "--offset", "1", "--ledger", "3"}, 2},
		{[]string{"--ledger", "3", "--count", "2"}, 2},
	}
	for _, c := range cases {
		out, errOut, code := runBin(t, append([]string{"-d", dir, "inspect", "entries"}, c.args...)...)
		if code != c.want || errOut == "" {
			t.Errorf("%v: exit %d (want %d), stderr %q, stdout %q", c.args, code, c.want, errOut, out)
		}
	}
}

func TestReportStdoutIsTheHTMLAlone(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 16})
	out, errOut, code := runBin(t, "-d", dir, "report", "--out", "-", "--skip-message-scan")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.HasPrefix(strings.ToLower(out), "<!doctype html>") {
		t.Fatalf("stdout starts with %q, want <!doctype html>", out[:min(len(out), 40)])
	}
	if !strings.HasSuffix(strings.TrimSpace(out), "</html>") {
		t.Errorf("stdout does not end with </html>: something else was printed after the page")
	}
	if strings.Count(strings.ToLower(out), "<!doctype html>") != 1 {
		t.Errorf("stdout holds more than one page")
	}
	if !strings.Contains(errOut, "wrote the report to stdout") {
		t.Errorf("stderr %q does not say where the report went", errOut)
	}
}
