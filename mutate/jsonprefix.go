package mutate

import (
	"bytes"
	"errors"
)

// objectPrefix finds, in data that starts with a JSON object, the part before its
// top-level key stop, and returns it closed as an object of its own (the fields
// before stop), with the top-level keys it passed. It reads no value: it only
// finds where each ends (strings, with their escapes, and nesting), so the caller
// decodes the prefix with one json.Unmarshal, which checks its syntax, instead of
// streaming tokens (encoding/json's Decoder allocates an error per value it reads
// that way). The journal's records and update lines put their items last, and
// recovery needs only what comes before them.
//
// value is where stop's value starts in data, or -1 when the object ends without
// stop. errShortPrefix: data ends before stop or the object's end (read more of
// the file). Any other error: data is not such an object, or a key is not a plain
// string (an escape in a key is never written by the journal).
func objectPrefix(data []byte, stop string) (prefix []byte, keys []string, value int, err error) {
	i := skipSpace(data, 0)
	if i == len(data) {
		return nil, nil, -1, errShortPrefix
	}
	if data[i] != '{' {
		return nil, nil, -1, errNotObject
	}
	end := i + 1 // just after the last complete field (or the brace)
	for i = end; ; {
		i = skipSpace(data, i)
		if i == len(data) {
			return nil, nil, -1, errShortPrefix
		}
		if data[i] == '}' {
			return closedPrefix(data[:end]), keys, -1, nil
		}
		if len(keys) > 0 {
			if data[i] != ',' {
				return nil, nil, -1, errNotObject
			}
			if i = skipSpace(data, i+1); i == len(data) {
				return nil, nil, -1, errShortPrefix
			}
		}
		if data[i] != '"' {
			return nil, nil, -1, errNotObject
		}
		keyLen := bytes.IndexAny(data[i+1:], `"\`)
		if keyLen < 0 {
			return nil, nil, -1, errShortPrefix
		}
		if data[i+1+keyLen] == '\\' {
			return nil, nil, -1, errNotObject
		}
		key := string(data[i+1 : i+1+keyLen])
		if i = skipSpace(data, i+keyLen+2); i == len(data) {
			return nil, nil, -1, errShortPrefix
		}
		if data[i] != ':' {
			return nil, nil, -1, errNotObject
		}
		if key == stop {
			return closedPrefix(data[:end]), keys, i + 1, nil
		}
		keys = append(keys, key)
		if i, err = skipValue(data, skipSpace(data, i+1)); err != nil {
			return nil, nil, -1, err
		}
		end = i
	}
}

var (
	errShortPrefix = errors.New("JSON object ends after the data read")
	errNotObject   = errors.New("not a JSON object of plain keys")
	errNotArray    = errors.New("not a JSON array")
)

// arrayLen counts the elements of the JSON array (or null) whose value starts at
// data[at], finding where each ends as objectPrefix does, without decoding any:
// List counts a run's items from its update line this way.
func arrayLen(data []byte, at int) (int, error) {
	i := skipSpace(data, at)
	if bytes.HasPrefix(data[i:], []byte("null")) {
		return 0, nil
	}
	if i == len(data) || data[i] != '[' {
		return 0, errNotArray
	}
	if i = skipSpace(data, i+1); i < len(data) && data[i] == ']' {
		return 0, nil
	}
	for n := 1; ; n++ {
		j, err := skipValue(data, i)
		if err != nil {
			return 0, err
		}
		if j == i {
			return 0, errNotArray // an empty element
		}
		if i = skipSpace(data, j); i == len(data) {
			return 0, errShortPrefix
		}
		switch data[i] {
		case ']':
			return n, nil
		case ',':
			i = skipSpace(data, i+1)
		default:
			return 0, errNotArray
		}
	}
}

// closedPrefix is fields (an object's opening brace and its first fields) closed
// with a brace, in a new slice.
func closedPrefix(fields []byte) []byte {
	out := make([]byte, len(fields)+1)
	copy(out, fields)
	out[len(fields)] = '}'
	return out
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns where the value starting at data[i] ends. It does not check
// the value's syntax beyond strings and brackets: json.Unmarshal of the prefix does.
func skipValue(data []byte, i int) (int, error) {
	depth := 0
	for ; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			j, err := skipString(data, i)
			if err != nil {
				return 0, err
			}
			i = j - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i, nil // the end of the enclosing object: the caller checks it
			}
			depth--
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i, nil
			}
		}
		if depth == 0 && (data[i] == '}' || data[i] == ']' || data[i] == '"') {
			return i + 1, nil
		}
	}
	return 0, errShortPrefix
}

// skipString returns the index just after the string whose opening quote is data[i].
func skipString(data []byte, i int) (int, error) {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++ // the escaped byte (a \u escape's hex digits need no care)
		case '"':
			return i + 1, nil
		}
	}
	return 0, errShortPrefix
}
