package schemaid

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Value formats reported by ParseValueFormat.
const (
	FormatEmpty     = "empty"
	FormatHex       = "hex"
	FormatBase64    = "base64"
	FormatBase64URL = "base64url"
)

// ParseValue reads bytes typed by a user; see ParseValueFormat.
func ParseValue(s string) ([]byte, error) {
	b, _, err := ParseValueFormat(s)
	return b, err
}

// ParseValueFormat reads bytes typed by a user and says which notation they
// were in (FormatHex, FormatBase64, FormatBase64URL, FormatEmpty).
//
//   - "hex:…" forces hex, "base64:…" or "b64:…" forces base64 (std or URL).
//   - "0x…" is hex.
//   - Hex may contain spaces, tabs and colons between digits ("01:02 03").
//   - Otherwise a string that is valid hex IS hex, even when it is also valid
//     base64 ("0102" gives {0x01, 0x02}, not base64's {0xd3, 0x5d, 0x36}); use
//     the "base64:" prefix to mean base64.
//   - Otherwise base64: standard, then URL alphabet, padded or not, with
//     canonical (strict) padding bits.
//
// An empty (or all-space) string is zero bytes.
func ParseValueFormat(s string) ([]byte, string, error) {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s)
	switch {
	case s == "":
		return []byte{}, FormatEmpty, nil
	case strings.HasPrefix(lower, "hex:"):
		b, err := parseHex(s[len("hex:"):])
		return b, FormatHex, err
	case strings.HasPrefix(lower, "base64:"):
		return parseBase64(s[len("base64:"):])
	case strings.HasPrefix(lower, "b64:"):
		return parseBase64(s[len("b64:"):])
	case strings.HasPrefix(lower, "0x"):
		b, err := parseHex(s[2:])
		return b, FormatHex, err
	}
	if b, err := parseHex(s); err == nil {
		return b, FormatHex, nil
	}
	b, format, err := parseBase64(s)
	if err != nil {
		return nil, "", fmt.Errorf("value %q is neither hex nor base64", s)
	}
	return b, format, nil
}

func parseHex(s string) ([]byte, error) {
	digits := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == ':' {
			return -1
		}
		return r
	}, s)
	b, err := hex.DecodeString(digits)
	if err != nil {
		return nil, fmt.Errorf("value %q is not hex: %w", s, err)
	}
	return b, nil
}

var base64Encodings = []struct {
	enc    *base64.Encoding
	format string
}{
	{base64.StdEncoding.Strict(), FormatBase64},
	{base64.RawStdEncoding.Strict(), FormatBase64},
	{base64.URLEncoding.Strict(), FormatBase64URL},
	{base64.RawURLEncoding.Strict(), FormatBase64URL},
}

func parseBase64(s string) ([]byte, string, error) {
	s = strings.Join(strings.Fields(s), "")
	if s == "" {
		return nil, "", errors.New("empty base64 value")
	}
	for _, e := range base64Encodings {
		if b, err := e.enc.DecodeString(s); err == nil {
			return b, e.format, nil
		}
	}
	return nil, "", fmt.Errorf("value %q is not base64 (standard or URL alphabet)", s)
}
