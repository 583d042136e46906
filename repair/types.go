package repair

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

// typeNames maps stored schema types to the Java SchemaType names pulsar-admin
// prints and capture files use (stored = Java + 1, docs/formats.md §5.3).
var typeNames = map[schemapb.SchemaInfo_SchemaType]string{
	schemapb.SchemaInfo_NONE:           "NONE",
	schemapb.SchemaInfo_STRING:         "STRING",
	schemapb.SchemaInfo_JSON:           "JSON",
	schemapb.SchemaInfo_PROTOBUF:       "PROTOBUF",
	schemapb.SchemaInfo_AVRO:           "AVRO",
	schemapb.SchemaInfo_BOOLEAN:        "BOOLEAN",
	schemapb.SchemaInfo_INT8:           "INT8",
	schemapb.SchemaInfo_INT16:          "INT16",
	schemapb.SchemaInfo_INT32:          "INT32",
	schemapb.SchemaInfo_INT64:          "INT64",
	schemapb.SchemaInfo_FLOAT:          "FLOAT",
	schemapb.SchemaInfo_DOUBLE:         "DOUBLE",
	schemapb.SchemaInfo_DATE:           "DATE",
	schemapb.SchemaInfo_TIME:           "TIME",
	schemapb.SchemaInfo_TIMESTAMP:      "TIMESTAMP",
	schemapb.SchemaInfo_KEYVALUE:       "KEY_VALUE",
	schemapb.SchemaInfo_INSTANT:        "INSTANT",
	schemapb.SchemaInfo_LOCALDATE:      "LOCAL_DATE",
	schemapb.SchemaInfo_LOCALTIME:      "LOCAL_TIME",
	schemapb.SchemaInfo_LOCALDATETIME:  "LOCAL_DATE_TIME",
	schemapb.SchemaInfo_PROTOBUFNATIVE: "PROTOBUF_NATIVE",
	schemapb.SchemaInfo_EXTERNAL:       "EXTERNAL",
}

// typeByName is the reverse of typeNames, plus spellings seen in the wild.
var typeByName = func() map[string]schemapb.SchemaInfo_SchemaType {
	m := make(map[string]schemapb.SchemaInfo_SchemaType, len(typeNames)+8)
	for t, n := range typeNames {
		m[n] = t
		m[strings.ReplaceAll(n, "_", "")] = t // KEYVALUE, PROTOBUFNATIVE: the proto enum names
	}
	// BYTES means "no schema"; the registry stores such a put as NONE.
	m["BYTES"] = schemapb.SchemaInfo_NONE
	return m
}()

// TypeName returns the Java SchemaType name of a stored type, or TYPE_<n> for a
// number this tool does not know (kept so it survives a capture round trip).
func TypeName(t schemapb.SchemaInfo_SchemaType) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return "TYPE_" + strconv.Itoa(int(t))
}

// ParseTypeName reads a Java SchemaType name (any case) or TYPE_<n>.
func ParseTypeName(s string) (schemapb.SchemaInfo_SchemaType, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if t, ok := typeByName[u]; ok {
		return t, nil
	}
	if n, ok := strings.CutPrefix(u, "TYPE_"); ok {
		if v, err := strconv.ParseInt(n, 10, 32); err == nil {
			return schemapb.SchemaInfo_SchemaType(v), nil
		}
	}
	return 0, fmt.Errorf("unknown schema type %q", s)
}

// isTextType reports whether a type's definition is text (an Avro/JSON/protobuf
// document or a string) rather than bytes.
func isTextType(t schemapb.SchemaInfo_SchemaType) bool {
	switch t {
	case schemapb.SchemaInfo_AVRO, schemapb.SchemaInfo_JSON, schemapb.SchemaInfo_PROTOBUF,
		schemapb.SchemaInfo_PROTOBUFNATIVE, schemapb.SchemaInfo_STRING, schemapb.SchemaInfo_NONE:
		return true
	}
	return false
}

// isAvroType reports whether a type's definition is an Avro schema: Pulsar's JSON
// schema type carries an Avro definition too.
func isAvroType(t schemapb.SchemaInfo_SchemaType) bool {
	return t == schemapb.SchemaInfo_AVRO || t == schemapb.SchemaInfo_JSON
}

// Property is one schema property. Properties keep their stored order, so a
// restored SchemaInfo equals the lost one field for field.
type Property struct {
	Key   string
	Value string
}

// Properties marshal as a JSON object in their order.
type Properties []Property

// MarshalJSON writes the properties as one JSON object, in order.
func (ps Properties) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(p.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.Value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a JSON object of strings (null is empty), keeping its order.
// Non-string values are kept as their JSON text.
func (ps *Properties) UnmarshalJSON(b []byte) error {
	var raw orderedObject
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("properties: %w", err)
	}
	out := make(Properties, 0, len(raw.keys))
	for i, k := range raw.keys {
		var s string
		if err := json.Unmarshal(raw.vals[i], &s); err != nil {
			s = string(raw.vals[i])
		}
		out = append(out, Property{Key: k, Value: s})
	}
	*ps = out
	return nil
}

func propsFromInfo(kvs []*schemapb.SchemaInfo_KeyValuePair) Properties {
	out := make(Properties, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, Property{Key: kv.GetKey(), Value: kv.GetValue()})
	}
	return out
}

func (ps Properties) toInfo() []*schemapb.SchemaInfo_KeyValuePair {
	out := make([]*schemapb.SchemaInfo_KeyValuePair, 0, len(ps))
	for _, p := range ps {
		out = append(out, &schemapb.SchemaInfo_KeyValuePair{Key: ptr(p.Key), Value: ptr(p.Value)})
	}
	return out
}

// Get returns the value of key.
func (ps Properties) Get(key string) (string, bool) {
	for _, p := range ps {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

func ptr[T any](v T) *T { return &v }
