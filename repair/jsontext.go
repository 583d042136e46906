package repair

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// orderedObject is a JSON object whose member order is kept.
type orderedObject struct {
	keys []string
	vals []json.RawMessage
}

func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("want a JSON object, got %v", t)
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		k, ok := kt.(string)
		if !ok {
			return fmt.Errorf("object key %v is not a string", kt)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("member %q: %w", k, err)
		}
		o.keys = append(o.keys, k)
		o.vals = append(o.vals, v)
	}
	_, err = dec.Token()
	return err
}

// get returns the raw value of the first member named key.
func (o *orderedObject) get(key string) (json.RawMessage, bool) {
	for i, k := range o.keys {
		if k == key {
			return o.vals[i], true
		}
	}
	return nil, false
}

// jacksonCompact re-renders a JSON document the way Jackson writes it (Avro's
// Schema.toString and Gson's JsonElement.toString do the same): no whitespace,
// member order kept, numbers as written, strings escaped only where JSON
// requires. pulsar-admin pretty-prints Avro definitions as nested JSON; this
// recovers the compact text the registry stored, and the hash proves it.
func jacksonCompact(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out bytes.Buffer
	if err := writeCompact(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("JSON offset %d: data after the document", dec.InputOffset())
	}
	return out.Bytes(), nil
}

// maxJSONDepth bounds recursion on hostile input.
const maxJSONDepth = 256

func writeCompact(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("JSON offset %d: nested deeper than %d", dec.InputOffset(), maxJSONDepth)
	}
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("JSON offset %d: %w", dec.InputOffset(), err)
	}
	switch v := t.(type) {
	case json.Delim:
		closing := byte('}')
		if v == '[' {
			closing = ']'
		}
		out.WriteByte(byte(v))
		for first := true; dec.More(); first = false {
			if !first {
				out.WriteByte(',')
			}
			if v == '{' {
				kt, err := dec.Token()
				if err != nil {
					return fmt.Errorf("JSON offset %d: %w", dec.InputOffset(), err)
				}
				writeJacksonString(out, kt.(string))
				out.WriteByte(':')
			}
			if err := writeCompact(dec, out, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("JSON offset %d: %w", dec.InputOffset(), err)
		}
		out.WriteByte(closing)
	case string:
		writeJacksonString(out, v)
	case json.Number:
		out.WriteString(v.String())
	case bool:
		fmt.Fprint(out, v)
	case nil:
		out.WriteString("null")
	}
	return nil
}

const hexDigits = "0123456789ABCDEF"

// writeJacksonString quotes s as Jackson does: \" \\ and the short escapes for
// \b \f \n \r \t, \u00XX for other control characters, everything else raw.
func writeJacksonString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			if r < 0x20 {
				out.WriteString(`\u00`)
				out.WriteByte(hexDigits[r>>4])
				out.WriteByte(hexDigits[r&0xf])
				continue
			}
			out.WriteRune(r)
		}
	}
	out.WriteByte('"')
}
