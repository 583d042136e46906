package schemaid

import (
	"bytes"
	"encoding/binary"
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
	f.Add(byte(2), EncodeRustKV([]byte{0, 0, 0, 1}, []byte{0, 0, 0, 7}))
	f.Add(byte(2), EncodeRustKV([]byte{9}, []byte{0, 0, 0, 2, 0xaa, 0xbb})) // reads as Java
	f.Fuzz(func(t *testing.T, fieldSel byte, b []byte) {
		field := []Field{FieldUnknown, FieldSchemaVersion, FieldSchemaID}[int(fieldSel)%3]
		id, err := Decode(field, b)
		if err == nil {
			checkReencodes(t, id, b)
			checkLayout(t, id)
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

// checkLayout: a key/value id has a layout, and it is Java exactly when the
// bytes after the key are `i32 len | value` with len the length of value.
func checkLayout(t *testing.T, id ID) {
	t.Helper()
	if id.Kind != KindExternalKV {
		if id.Layout != "" {
			t.Fatalf("%v: layout %q on a %s id", id, id.Layout, id.Kind)
		}
		return
	}
	after := id.Raw[5+len(id.Key):]
	java := len(after) >= 4 && int64(int32(binary.BigEndian.Uint32(after))) == int64(len(after)-4)
	if want := map[bool]KVLayout{true: LayoutJava, false: LayoutRust}[java]; id.Layout != want {
		t.Fatalf("%v: layout %q, want %q", id, id.Layout, want)
	}
}

// FuzzKVLayouts: whatever the key and value ids, the Java encoding reads back
// as Java with the same ids, and the Rust encoding as Rust with the same ids
// unless its value opens with its own length, when it reads as that Java id.
func FuzzKVLayouts(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1}, []byte{0, 0, 0, 7})
	f.Add([]byte{}, []byte{})
	f.Add([]byte("k"), []byte{0, 0, 0, 0})
	f.Add([]byte{9}, []byte{0, 0, 0, 2, 0xaa, 0xbb})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		java, err := Decode(FieldSchemaID, EncodeExternalKV(key, value))
		if err != nil || java.Layout != LayoutJava || !bytes.Equal(java.Key, key) || !bytes.Equal(java.Value, value) {
			t.Fatalf("Java %x/%x reads as %v, %v", key, value, java, err)
		}
		b := EncodeRustKV(key, value)
		rust, err := Decode(FieldSchemaID, b)
		if err != nil || !bytes.Equal(rust.Key, key) {
			t.Fatalf("Rust %x/%x reads as %v, %v", key, value, rust, err)
		}
		checkReencodes(t, rust, b)
		if rust.Layout == LayoutJava {
			if !javaValueAt(value, 0) || !bytes.Equal(rust.Value, value[4:]) {
				t.Fatalf("Rust %x/%x reads as %v", key, value, rust)
			}
		} else if !bytes.Equal(rust.Value, value) {
			t.Fatalf("Rust %x/%x reads as %v", key, value, rust)
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
