package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/testutil/golden"
)

// schemaidRun runs the app in-process and returns the exit code, stdout and stderr.
func schemaidRun(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append([]string{"ledgermedic"}, args...),
		Env{Stdout: &out, Stderr: &errOut, Stdin: stdin})
	return code, out.String(), errOut.String()
}

func TestSchemaidDecode(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin []byte
		code  int
		// want are substrings of stdout (exit 0) or stderr (otherwise), so the
		// test says what matters besides the golden file.
		want []string
	}{
		{name: "external-value", args: []string{"ff010203"}, code: 0,
			want: []string{"schema_id", "external-value", "external:0x010203"}},
		{name: "external-kv-ok", args: []string{"--field", "id", "fe00000003010203000000030405 06"}, code: 0,
			want: []string{"external-kv", "| java ", "kv(key=0x010203, value=0x040506)"}},
		// pulsar-rs writes no value length: the rest after the key is the value id.
		{name: "kv-rust-layout", args: []string{"--field", "id", "fe000000040000000100000007"}, code: 0,
			want: []string{"external-kv", "| rust ", "kv(key=0x00000001, value=0x00000007, layout=rust)"}},
		// A value length that does not match the rest is no length: the Rust layout.
		{name: "kv-length-mismatch-is-rust", args: []string{"--field", "id", "0xfe000000030102030000000304050607"}, code: 0,
			want: []string{"| rust ", "value=0x0000000304050607, layout=rust"}},
		// A Rust value opening with its own length is byte-for-byte a Java id.
		{name: "kv-ambiguous-reads-java", args: []string{"--field", "id", "fe000000010900000002aabb"}, code: 0,
			want: []string{"| java ", "kv(key=0x09, value=0xaabb)"}},
		{name: "json-kv-rust", args: []string{"--field", "id", "fe000000040000000100000007"}, code: 0,
			want: []string{`"layout": "rust"`, `"value_hex": "00000007"`}},
		{name: "version", args: []string{"--field", "version", "0000000000000003"}, code: 0,
			want: []string{"schema_version", "pulsar:v3"}},
		{name: "ambiguous", args: []string{"ff00000000000007"}, code: 0,
			want: []string{"pulsar:v-72057594037927929", "external:0x00000000000007", "fit 2 readings"}},
		{name: "base64", args: []string{"base64:/wECAw=="}, code: 0,
			want: []string{"base64", "external:0x010203"}},
		{name: "confluent-payload", args: []string{"--payload", "0x000000002a68656c6c6f"}, code: 0,
			want: []string{"confluent:42", "| 5 ", "| 5 "}},
		{name: "confluent-id", args: []string{"--field", "id", "000000002a"}, code: 0,
			want: []string{"confluent-id", "confluent:42"}},
		{name: "stdin-raw", args: []string{"-"}, stdin: []byte{0, 0, 0, 0, 0, 0, 0, 3}, code: 0,
			want: []string{"raw", "pulsar:v3"}},
		{name: "stdin-payload", args: []string{"--payload", "-"}, stdin: append([]byte{0, 0, 0, 0, 42}, "{\"a\":1}"...), code: 0,
			want: []string{"confluent:42", "| 7 "}},
		{name: "empty", args: []string{""}, code: 0, want: []string{"empty"}},
		{name: "bad-hex", args: []string{"0xzz"}, code: 2, want: []string{"not hex"}},
		{name: "not-hex-nor-base64", args: []string{"hello!"}, code: 2, want: []string{"neither hex nor base64"}},
		{name: "fits-nothing", args: []string{"0102"}, code: 2,
			want: []string{"fits no schema id layout", "as schema_version", "as schema_id"}},
		{name: "kv-truncated", args: []string{"--field", "id", "fe00000009"}, code: 2,
			want: []string{"byte offset 1", "truncated"}},
		{name: "payload-not-confluent", args: []string{"--payload", "7b7d"}, code: 2,
			want: []string{"byte offset 0", "no Confluent header"}},
		{name: "payload-truncated", args: []string{"--payload", "000000"}, code: 2,
			want: []string{"byte offset 1", "truncated"}},
		{name: "bad-field", args: []string{"--field", "nope", "00"}, code: 2, want: []string{"unknown schema field"}},
		{name: "no-value", args: []string{}, code: 2, want: []string{"exactly one VALUE"}},
		{name: "payload-and-field", args: []string{"--payload", "--field", "id", "00"}, code: 2,
			want: []string{"--field does not apply"}},
		{name: "json-ambiguous", args: []string{"--field", "any", "ff00000000000007"}, code: 0,
			want: []string{`"kind": "pulsar-version"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"schemaid", "decode"}, tt.args...)
			if strings.HasPrefix(tt.name, "json-") {
				args = append([]string{"--json"}, args...)
			}
			code, stdout, stderr := schemaidRun(t, bytes.NewReader(tt.stdin), args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			where := stdout
			if code != 0 {
				where = stderr
				if stdout != "" {
					t.Errorf("exit %d but stdout is not empty:\n%s", code, stdout)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(where, w) {
					t.Errorf("output lacks %q:\n%s", w, where)
				}
			}
			transcript := fmt.Sprintf("$ ledgermedic %s\nexit %d\n--- stdout\n%s--- stderr\n%s",
				strings.Join(args, " "), code, stdout, stderr)
			golden.CheckString(t, filepath.Join("testdata", "schemaid", tt.name+".golden"), transcript)
		})
	}
}

// The JSON document is one object with the structured ids under "decoded".
func TestSchemaidDecodeJSON(t *testing.T) {
	code, stdout, stderr := schemaidRun(t, nil, "--json", "schemaid", "decode", "ff00000000000007")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Input    []map[string]any `json:"input"`
		Readings []map[string]any `json:"readings"`
		Decoded  []struct {
			Field string         `json:"field"`
			ID    map[string]any `json:"id"`
		} `json:"decoded"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, stdout)
	}
	if len(doc.Readings) != 2 || len(doc.Decoded) != 2 {
		t.Fatalf("want 2 readings, got %d rows and %d decoded:\n%s", len(doc.Readings), len(doc.Decoded), stdout)
	}
	if doc.Decoded[0].Field != "schema_version" || doc.Decoded[1].Field != "schema_id" {
		t.Errorf("fields %q, %q; want schema_version then schema_id", doc.Decoded[0].Field, doc.Decoded[1].Field)
	}
	if doc.Decoded[1].ID["value_hex"] != "00000000000007" {
		t.Errorf("schema_id value_hex = %v, want 00000000000007", doc.Decoded[1].ID["value_hex"])
	}
	if doc.Input[0]["bytes"] != float64(8) {
		t.Errorf("input bytes = %v, want 8", doc.Input[0]["bytes"])
	}
}

// schema-usage through the command line: a clean fixture exits 0, lost schema
// ledgers that messages use exit 1 with findings, an unknown topic exits 2.
func TestSchemaUsageCommand(t *testing.T) {
	ctx := context.Background()
	clean := filepath.Join(t.TempDir(), "clean")
	m, err := fixtures.Generate(ctx, clean, fixtures.Options{Seed: 21}, nil)
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken")
	if _, err := fixtures.Generate(ctx, broken, fixtures.Options{Seed: 21, LoseSchemaLedgers: 2}, nil); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := schemaidRun(t, nil, "--json", "--data-dir", clean, "inspect", "schema-usage", "--workers", "2")
	if code != 0 {
		t.Fatalf("clean: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var doc struct {
		Topics []struct {
			Topic    string `json:"topic"`
			Messages int64  `json:"messages"`
		} `json:"topics"`
		Usage []struct {
			Topic    string `json:"topic"`
			SchemaID string `json:"schema_ref"`
			Messages int64  `json:"messages"`
			Status   string `json:"status"`
		} `json:"schema_usage"`
		Findings []report.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, stdout)
	}
	want := map[string]int64{}
	for _, tu := range m.Topics {
		for _, u := range tu.Usage {
			want[tu.Topic+" "+u.ID] = u.Messages
		}
	}
	got := map[string]int64{}
	for _, u := range doc.Usage {
		if u.Status != "no-schema" {
			got[u.Topic+" "+u.SchemaID] = u.Messages
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("usage rows %v\nwant (manifest) %v", got, want)
	}

	code, stdout, stderr = schemaidRun(t, nil, "--data-dir", broken, "inspect", "schema-usage")
	if code != 1 {
		t.Fatalf("broken: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "used-schema-version-lost") || !strings.Contains(stdout, "ledgermedic -d "+broken+" schema repair --from schemas.jsonl --topic") {
		t.Errorf("broken: no lost-version finding with its hint:\n%s", stdout)
	}

	topic := m.Topics[0].Topic
	code, stdout, _ = schemaidRun(t, nil, "--data-dir", clean, "inspect", "schema-usage", "--topic", topic)
	if code != 0 || !strings.Contains(stdout, topic) {
		t.Errorf("--topic %s: exit %d\n%s", topic, code, stdout)
	}
	for _, other := range m.Topics[1:] {
		if strings.Contains(stdout, other.Topic+" ") {
			t.Errorf("--topic %s also shows %s", topic, other.Topic)
		}
	}

	code, _, stderr = schemaidRun(t, nil, "--data-dir", clean, "inspect", "schema-usage", "--topic", "acme/orders/nope")
	if code != 2 || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown topic: exit %d, want 2: %s", code, stderr)
	}
	code, _, _ = schemaidRun(t, nil, "--data-dir", clean, "inspect", "schema-usage", "--topic", "not a//topic")
	if code != 2 {
		t.Errorf("bad topic: exit %d, want 2", code)
	}
}

// A cluster whose external-id topic has pulsar-rs producers (fixtures generate
// --rust-producers): schema-usage lists the key/value ids of both layouts, the
// table naming the Rust one, the JSON giving schema_id.layout. The golden is the
// topic's JSON (the table's widths are the renderer's business).
func TestSchemaUsageRustLayoutCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dd")
	code, stdout, stderr := schemaidRun(t, nil, "fixtures", "generate", "--out", dir, "--seed", "7", "--rust-producers")
	if code != 0 {
		t.Fatalf("fixtures generate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	const topic = "persistent://public/default/device-events~v2"
	args := []string{"--data-dir", dir, "inspect", "schema-usage", "--topic", topic}
	code, stdout, stderr = schemaidRun(t, nil, args...)
	if code != 0 {
		t.Fatalf("schema-usage: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, w := range []string{"kv(key=0x00000001, value=0x00000007)", "kv(key=0x00000001, value=0x00000007, layout=rust)",
		`value=0x6465766963652d74656c656d657472792d7633 "device-telemetry-v3", layout=rust)`} {
		if !strings.Contains(stdout, w) {
			t.Errorf("schema-usage lacks %s:\n%s", w, stdout)
		}
	}
	if strings.Contains(stdout, "unknown:") {
		t.Errorf("schema-usage reads an id as unknown:\n%s", stdout)
	}
	code, stdout, stderr = schemaidRun(t, nil, append([]string{"--json"}, args...)...)
	if code != 0 {
		t.Fatalf("schema-usage --json: exit %d\n%s", code, stderr)
	}
	transcript := fmt.Sprintf("$ ledgermedic --json %s\nexit %d\n--- stdout\n%s--- stderr\n%s",
		strings.ReplaceAll(strings.Join(args, " "), dir, "DIR"), code, strings.ReplaceAll(stdout, dir, "DIR"), stderr)
	golden.CheckString(t, filepath.Join("testdata", "schemaid", "schema-usage-rust-producers.golden"), transcript)
	var doc struct {
		Usage []struct {
			ID struct {
				Kind   string `json:"kind"`
				Layout string `json:"layout"`
			} `json:"schema_id"`
			Messages int64 `json:"messages"`
		} `json:"schema_usage"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	layouts := map[string]int{}
	for _, u := range doc.Usage {
		if u.ID.Kind == "external-kv" && u.Messages > 0 {
			layouts[u.ID.Layout]++
		}
	}
	if layouts["java"] != 1 || layouts["rust"] != 2 {
		t.Errorf("key/value ids per layout %v, want java 1, rust 2", layouts)
	}
}
