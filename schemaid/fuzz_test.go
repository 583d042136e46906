package schemaid

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecode: no input panics, every successful decode re-encodes to exactly
// its input, and String/JSON/MapKey work on whatever comes out.
func FuzzDecode(f *testing.F) {
	for _, v := range vectors {
		f.Add(byte(v.field), v.in)
	}
	f.Add(byte(0), []byte{0, 0, 0, 0, 42, 'd', 'a', 't', 'a'})
	f.Fuzz(func(t *testing.T, fieldSel byte, b []byte) {
		field := []Field{FieldUnknown, FieldSchemaVersion, FieldSchemaID}[int(fieldSel)%3]
		id, err := Decode(field, b)
		if err == nil {
			checkReencodes(t, id, b)
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrAmbiguous) {
			t.Fatalf("Decode(%s, %x): unexpected error kind %v", field, b, err)
		}
		_ = id.String()
		_ = id.MapKey()
		if _, err := json.Marshal(id); err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}

		rs := DecodeAll(b)
		if len(rs) == 0 {
			t.Fatalf("DecodeAll(%x) gave no reading", b)
		}
		for _, r := range rs {
			checkReencodes(t, r.ID, b)
		}

		if id, off, err := DecodeConfluentPayload(b); err == nil {
			checkReencodes(t, id, b[:off])
		}
	})
}

func checkReencodes(t *testing.T, id ID, want []byte) {
	t.Helper()
	enc, err := id.Encode()
	if err != nil {
		t.Fatalf("Encode(%v): %v", id, err)
	}
	if !bytes.Equal(enc, want) || !bytes.Equal(id.Raw, want) {
		t.Fatalf("%v: Encode = %x, Raw = %x, want %x", id, enc, id.Raw, want)
	}
}

// FuzzParseValue: no input panics, and hex output parses back from its hex.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"0102", "0x0102", "fe:00 01", "/wECAw==", "_wECAw", "b64:AAAA", "hex:", "", "0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, format, err := ParseValueFormat(s)
		if err != nil {
			return
		}
		back, err := ParseValue(hex.EncodeToString(b))
		if err != nil || !bytes.Equal(back, b) {
			t.Fatalf("%q (%s) -> %x; its hex reads back as %x, %v", s, format, b, back, err)
		}
	})
}
