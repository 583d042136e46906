package inspect

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/report"
)

const payloadTestAvro = `{"type":"record","name":"Ev","fields":[{"name":"id","type":"string"},` +
	`{"name":"n","type":"long"},{"name":"note","type":["null","string"],"default":null}]}`

func kvProps(keyType, valueType, encoding string) []*schemapb.SchemaInfo_KeyValuePair {
	var ps []*schemapb.SchemaInfo_KeyValuePair
	for _, kv := range [][2]string{{"key.schema.type", keyType}, {"value.schema.type", valueType}, {"kv.encoding.type", encoding}} {
		ps = append(ps, &schemapb.SchemaInfo_KeyValuePair{Key: proto.String(kv[0]), Value: proto.String(kv[1])})
	}
	return ps
}

// inlineKV frames key and value as KeyValue INLINE payloads are: i32 len | bytes, twice.
func inlineKV(key, value []byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
	return append(b, value...)
}

func TestPayloadDecode(t *testing.T) {
	schema := avro.MustParse(payloadTestAvro)
	rec, err := avro.Marshal(schema, map[string]any{"id": "a-1", "n": int64(42), "note": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	kvDef := formats.JoinKeyValueSchema([]byte{}, []byte(payloadTestAvro))
	cases := []struct {
		name    string
		info    *schemapb.SchemaInfo
		payload []byte
		sepKey  []byte
		want    string // JSON, compared after normalising
		err     string // substring of the error instead
	}{
		{"avro", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_AVRO.Enum(), Schema: []byte(payloadTestAvro)},
			rec, nil, `{"id":"a-1","n":42,"note":"hi"}`, ""},
		{"json as is", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_JSON.Enum()},
			[]byte(`{"b":1,"a":[true]}`), nil, `{"b":1,"a":[true]}`, ""},
		{"string", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_STRING.Enum()},
			[]byte("user=x \"q\""), nil, `"user=x \"q\""`, ""},
		{"kv separated", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_KEYVALUE.Enum(), Schema: kvDef, Props: kvProps("STRING", "AVRO", "SEPARATED")},
			rec, []byte("INV-1"), `{"key":"INV-1","value":{"id":"a-1","n":42,"note":"hi"}}`, ""},
		{"kv separated without key", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_KEYVALUE.Enum(), Schema: kvDef, Props: kvProps("STRING", "AVRO", "SEPARATED")},
			rec, nil, `{"key":null,"value":{"id":"a-1","n":42,"note":"hi"}}`, ""},
		{"kv inline", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_KEYVALUE.Enum(), Schema: kvDef, Props: kvProps("STRING", "AVRO", "INLINE")},
			inlineKV([]byte("k"), rec), nil, `{"key":"k","value":{"id":"a-1","n":42,"note":"hi"}}`, ""},
		{"kv inline truncated", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_KEYVALUE.Enum(), Schema: kvDef, Props: kvProps("STRING", "AVRO", "INLINE")},
			inlineKV([]byte("k"), rec)[:9], nil, "", "KEY_VALUE INLINE payload"},
		{"kv unknown part type", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_KEYVALUE.Enum(), Schema: kvDef, Props: kvProps("STRING", "THRIFT", "INLINE")},
			rec, nil, "", "not known"},
		{"protobuf is hex", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_PROTOBUF.Enum()}, rec, nil, "", "PROTOBUF is not decoded"},
		{"avro schema broken", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_AVRO.Enum(), Schema: []byte(`{"type":"record"`)},
			rec, nil, "", "AVRO schema does not parse"},
		{"avro payload short", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_AVRO.Enum(), Schema: []byte(payloadTestAvro)},
			rec[:3], nil, "", "AVRO payload does not decode"},
		{"json not json", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_JSON.Enum()}, []byte("{nope"), nil, "", "not valid JSON"},
		{"string not utf-8", &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_STRING.Enum()}, []byte{0xff, 0xfe}, nil, "", "not UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodePayload(c.info, c.payload, c.sepKey)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q (got %s)", err, c.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("%s is not JSON: %v", got, err)
			}
			if err := json.Unmarshal([]byte(c.want), &w); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(g)
			wb, _ := json.Marshal(w)
			if !bytes.Equal(gb, wb) {
				t.Fatalf("decoded %s, want %s", got, c.want)
			}
		})
	}
}

// A decoded value is embedded in JSON as JSON and printed as its text in tables.
func TestPayloadJSONValueForms(t *testing.T) {
	v := JSONValue(`{"a":1}`)
	b, err := json.Marshal(map[string]any{"payload": v})
	if err != nil || string(b) != `{"payload":{"a":1}}` {
		t.Fatalf("JSON %s (%v)", b, err)
	}
	if c := report.Cell(v); c != `{"a":1}` {
		t.Fatalf("table cell %q", c)
	}
}

// FuzzPayloadDecode: no input makes the decoder panic, and what decodes is JSON.
func FuzzPayloadDecode(f *testing.F) {
	schema := avro.MustParse(payloadTestAvro)
	rec, _ := avro.Marshal(schema, map[string]any{"id": "x", "n": int64(1), "note": nil})
	kvDef := formats.JoinKeyValueSchema([]byte{}, []byte(payloadTestAvro))
	f.Add(int32(schemapb.SchemaInfo_AVRO), []byte(payloadTestAvro), rec, "")
	f.Add(int32(schemapb.SchemaInfo_KEYVALUE), kvDef, inlineKV([]byte("k"), rec), "INLINE")
	f.Add(int32(schemapb.SchemaInfo_KEYVALUE), kvDef, rec, "SEPARATED")
	f.Add(int32(schemapb.SchemaInfo_JSON), []byte{}, []byte(`{"a":1}`), "")
	f.Add(int32(schemapb.SchemaInfo_STRING), []byte{}, []byte("s"), "")
	f.Add(int32(schemapb.SchemaInfo_AVRO), []byte(`{"type":"array","items":"long"}`), []byte{0x02, 0x02, 0x00}, "")
	f.Fuzz(func(t *testing.T, typ int32, def, payload []byte, enc string) {
		info := &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_SchemaType(typ).Enum(), Schema: def,
			Props: kvProps("STRING", "AVRO", enc)}
		got, err := DecodePayload(info, payload, []byte("key"))
		if err == nil && !json.Valid(got) {
			t.Fatalf("decoded to %q, not JSON", got)
		}
	})
}

// A length field that claims more than the payload holds is an error, not an allocation.
func TestPayloadAvroHugeLengthIsAnError(t *testing.T) {
	info := &schemapb.SchemaInfo{Type: schemapb.SchemaInfo_AVRO.Enum(), Schema: []byte(`{"type":"array","items":"null"}`)}
	// block count 2^40 (zig-zag varint), then nothing.
	payload := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x40}
	if got, err := DecodePayload(info, payload, nil); err == nil {
		t.Fatalf("decoded %d bytes of JSON from a 6-byte payload claiming 2^39 items", len(got))
	}
}
