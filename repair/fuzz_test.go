package repair

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

func addInputSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "inputs", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schema_key":"a/b/c","version":3,"type":"KEY_VALUE","definition":"AAAAAP////8=","definition_encoding":"base64","properties":{"k":"v"},"timestamp":1,"user":"u","deleted":false,"hash":"","ledger_id":1,"entry_id":0,"captured_at":""}` + "\n"))
	f.Add([]byte(`[{"type":"KEY_VALUE","schema":"{\"key\":\"\",\"value\":{\"type\":\"string\"}}"}]`))
	f.Add([]byte(`{"type":"KEY_VALUE","schema":{"key":{"type":"KEY_VALUE","schema":{"key":"","value":""}},"value":[1,2]}}`))
}

// FuzzParseCandidates: no input makes the parsers panic, and every candidate
// has at least one rendering and a source.
func FuzzParseCandidates(f *testing.F) {
	addInputSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		cands, _ := ParseCandidates("fuzz", data)
		for _, c := range cands {
			if len(c.Definitions) == 0 || c.Source == "" || len(c.Definitions) > maxVariants {
				t.Fatalf("candidate %+v", c)
			}
			for _, d := range c.Definitions {
				_ = validateDefinition(c.Type, d, c.Properties)
			}
		}
	})
}

// FuzzJacksonCompact: the compact rendering of valid JSON is valid JSON with the
// same value, and is a fixed point.
func FuzzJacksonCompact(f *testing.F) {
	addInputSeeds(f)
	f.Add([]byte(`{"a":"\u003d\n\u0001\"\\/","b":[1.0,-2e10,true,null,{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := jacksonCompact(data)
		if !json.Valid(data) {
			return
		}
		if err != nil {
			if bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) > maxJSONDepth {
				return
			}
			t.Fatalf("valid JSON refused: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q", out)
		}
		if !reflect.DeepEqual(decodeAny(t, data), decodeAny(t, out)) {
			t.Fatalf("value changed:\n%s\n%s", data, out)
		}
		again, err := jacksonCompact(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q -> %q (%v)", out, again, err)
		}
	})
}

func decodeAny(t *testing.T, b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJacksonCompactMatchesAvroText(t *testing.T) {
	pretty := "{\n  \"doc\": \"a \\u003d b\\n\\u0001\",\n  \"x\": [\n    1.0,\n    \"é\"\n  ]\n}"
	got, err := jacksonCompact([]byte(pretty))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"doc":"a = b\n\u0001","x":[1.0,"é"]}`
	if string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// FuzzRemapLocator: any node bytes a push meets as a locator's after-image
// either fail to decode or are remapped: every position naming a remapped
// ledger names its new id, every other position is kept.
func FuzzRemapLocator(f *testing.F) {
	f.Add([]byte{0x0a, 0x0c, 0x08, 0x00, 0x12, 0x04, 0x08, 0x05, 0x10, 0x00, 0x1a, 0x02, 0xab, 0xcd})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		before, err := formats.DecodeSchemaLocator(data)
		out, rerr := remapLocator(data, map[int64]int64{5: 77})
		if err != nil {
			if rerr == nil {
				t.Fatal("remapLocator accepted bytes that do not decode")
			}
			return
		}
		if rerr != nil {
			return // decodes, but does not re-encode (a required field missing)
		}
		after, err := formats.DecodeSchemaLocator(out)
		if err != nil {
			t.Fatalf("remapped locator does not decode: %v", err)
		}
		all := func(l *schemapb.SchemaLocator) []*schemapb.IndexEntry {
			return append([]*schemapb.IndexEntry{l.GetInfo()}, l.GetIndex()...)
		}
		b, a := all(before), all(after)
		if len(a) != len(b) {
			t.Fatalf("%d index entries, was %d", len(a), len(b))
		}
		for i := range b {
			want := b[i].GetPosition().GetLedgerId()
			if want == 5 {
				want = 77
			}
			if got := a[i].GetPosition().GetLedgerId(); got != want {
				t.Fatalf("entry %d: ledger %d, want %d", i, got, want)
			}
		}
	})
}
