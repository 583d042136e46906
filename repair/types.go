package repair

import (
	"encoding/json"
	"fmt"

	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

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
