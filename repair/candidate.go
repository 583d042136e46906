package repair

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/ledgermedic/ledgermedic/internal/guard"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

// Input formats a candidate can come from.
const (
	FormatCapture      = "capture"                     // a line of `ledgermedic schema capture`
	FormatAdminGet     = "pulsar-admin schemas get"    // {"version":N,"schemaInfo":{...}}
	FormatAdminInfo    = "pulsar-admin schema info"    // {"name","schema","type","timestamp","properties"} (get --version N)
	FormatRESTResponse = "REST GetSchemaResponse"      // {"version","type","timestamp","data","properties"}
	FormatUpload       = "pulsar-admin schemas upload" // {"type","schema","properties"}
	FormatDataDir      = "data dir"                    // an entry still in the ledger store
)

// Candidate is one schema version offered as the content of a lost one. Inputs
// other than captures may not say which schema key or version they are, and may
// have re-rendered the definition (pulsar-admin pretty-prints Avro as nested
// JSON): Definitions lists every byte form the input can stand for, and the
// locator's SHA-256 decides which, if any, is the lost definition.
type Candidate struct {
	Source     string // file:line
	Format     string
	SchemaKey  string // "" when the input does not say
	Name       string // the local topic name pulsar-admin prints, "" when unknown
	Version    int64
	HasVersion bool
	Type       schemapb.SchemaInfo_SchemaType
	// Definitions are the possible definition bytes, most likely first.
	Definitions  [][]byte
	Properties   Properties
	Timestamp    int64
	HasTimestamp bool
	User         string
	HasUser      bool
	Deleted      bool
	// RecordedHash is the SHA-256 a capture recorded for the definition (nil for
	// other inputs); LedgerID the ledger the version was captured from (0: unknown).
	RecordedHash []byte
	LedgerID     int64
}

// InputError is a record of an input file that is not a usable candidate.
type InputError struct {
	Source string
	Err    error
}

func (e *InputError) Error() string { return e.Source + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// maxInputFile bounds one input file; schema captures are small.
const maxInputFile = 1 << 30

// LoadCandidates reads every path (a file, or a directory whose files are read in
// name order, recursively, skipping dot files). Records that cannot be used are
// returned as InputErrors; an unreadable path is an error.
func LoadCandidates(paths []string) ([]Candidate, []*InputError, error) {
	return LoadCandidatesContext(context.Background(), paths)
}

// LoadCandidatesContext is LoadCandidates that stops, with ctx's error, soon after
// ctx is done (Ctrl-C while a large capture is parsed).
func LoadCandidatesContext(ctx context.Context, paths []string) ([]Candidate, []*InputError, error) {
	var cands []Candidate
	var bad []*InputError
	for _, p := range paths {
		files, err := inputFiles(p)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			data, err := readInput(ctx, f)
			if err != nil {
				return nil, nil, err
			}
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			c, b, err := ParseCandidatesContext(ctx, f, data)
			if err != nil {
				return nil, nil, fmt.Errorf("input %s: %w", f, err)
			}
			cands = append(cands, c...)
			bad = append(bad, b...)
		}
	}
	return cands, bad, nil
}

func inputFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", p, err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != p && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("input directory %s: %w", p, err)
	}
	sort.Strings(files)
	return files, nil
}

func readInput(ctx context.Context, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", path, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size() <= maxInputFile {
		buf.Grow(int(st.Size()) + 1)
	}
	// In chunks, so that Ctrl-C stops a large read too.
	r := io.LimitReader(f, maxInputFile+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := io.CopyN(&buf, r, 4<<20)
		if err == io.EOF || n == 0 && err == nil {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", path, err)
		}
	}
	data := buf.Bytes()
	if len(data) > maxInputFile {
		return nil, fmt.Errorf("input %s: larger than %d bytes", path, maxInputFile)
	}
	return data, nil
}

// ParseCandidates reads one input: JSON Lines, one JSON document, several
// concatenated documents, or JSON arrays of them, in any of the supported shapes.
// name labels the sources ("name:line").
func ParseCandidates(name string, data []byte) ([]Candidate, []*InputError) {
	c, b, _ := ParseCandidatesContext(context.Background(), name, data)
	return c, b
}

// ctxCheckEvery is how many records are parsed between looks at the context:
// often enough to stop within milliseconds, rarely enough to cost nothing.
const ctxCheckEvery = 64

// ParseCandidatesContext is ParseCandidates that returns ctx's error soon after
// ctx is done.
func ParseCandidatesContext(ctx context.Context, name string, data []byte) ([]Candidate, []*InputError, error) {
	var cands []Candidate
	var bad []*InputError
	dec := json.NewDecoder(bytes.NewReader(data))
	var lines lineCounter
	for n := 0; ; n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		start := int(dec.InputOffset())
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		src := fmt.Sprintf("%s:%d", name, lines.lineAt(data, start))
		if err != nil {
			bad = append(bad, &InputError{src, fmt.Errorf("not JSON: %w", err)})
			break // the decoder cannot resynchronise after a syntax error
		}
		c, b := parseDocument(src, raw)
		cands = append(cands, c...)
		bad = append(bad, b...)
	}
	return cands, bad, nil
}

// lineCounter turns byte offsets that only grow into line numbers, counting each
// byte once (recounting from the start made large inputs quadratic).
type lineCounter struct {
	off, newlines int
}

// lineAt returns the 1-based line of the first non-space byte at or after off.
func (lc *lineCounter) lineAt(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
		off++
	}
	off = min(off, len(data))
	if off < lc.off {
		lc.off, lc.newlines = 0, 0
	}
	lc.newlines += bytes.Count(data[lc.off:off], []byte{'\n'})
	lc.off = off
	return 1 + lc.newlines
}

func parseDocument(src string, raw json.RawMessage) ([]Candidate, []*InputError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		// pulsar-admin schemas get --all-version prints a list of schema infos.
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, []*InputError{{src, err}}
		}
		var cands []Candidate
		var bad []*InputError
		for i, it := range items {
			c, err := parseObject(fmt.Sprintf("%s[%d]", src, i), it)
			if err != nil {
				bad = append(bad, &InputError{fmt.Sprintf("%s[%d]", src, i), err})
				continue
			}
			cands = append(cands, c)
		}
		return cands, bad
	}
	c, err := parseObject(src, raw)
	if err != nil {
		return nil, []*InputError{{src, err}}
	}
	return []Candidate{c}, nil
}

// parseObject recognises the shape of one object by its members.
func parseObject(src string, raw json.RawMessage) (Candidate, error) {
	var o orderedObject
	if err := json.Unmarshal(raw, &o); err != nil {
		return Candidate{}, err
	}
	has := func(k string) bool { _, ok := o.get(k); return ok }
	switch {
	case has("schema_key") || has("definition_encoding"):
		return parseCaptureRecord(src, raw)
	case has("schemaInfo"):
		return parseWithVersion(src, &o)
	case has("data") && has("type"):
		return parseRESTResponse(src, &o)
	case has("schema") && has("type"):
		return parseSchemaInfoJSON(src, &o)
	}
	return Candidate{}, fmt.Errorf("unrecognised input: want a capture record, pulsar-admin schemas get output, "+
		"a REST GetSchemaResponse or a schemas upload file (members found: %s)", strings.Join(o.keys, ", "))
}

func parseCaptureRecord(src string, raw json.RawMessage) (Candidate, error) {
	var r CaptureRecord
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Candidate{}, fmt.Errorf("capture record: %w", err)
	}
	if r.SchemaKey == "" {
		return Candidate{}, errors.New("capture record: no schema_key")
	}
	if _, ok := formats.ParseSchemaLocatorPath(formats.SchemasRoot + "/" + r.SchemaKey); !ok {
		return Candidate{}, fmt.Errorf("capture record: schema_key %q is not tenant/namespace/encoded-topic", r.SchemaKey)
	}
	t, err := cluster.ParseSchemaType(r.Type)
	if err != nil {
		return Candidate{}, fmt.Errorf("capture record: %w", err)
	}
	var def []byte
	switch r.DefinitionEncoding {
	case EncodingText:
		def = []byte(r.Definition)
	case EncodingBase64:
		if def, err = base64.StdEncoding.DecodeString(r.Definition); err != nil {
			return Candidate{}, fmt.Errorf("capture record: definition: %w", err)
		}
	default:
		return Candidate{}, fmt.Errorf("capture record: definition_encoding %q: want text or base64", r.DefinitionEncoding)
	}
	// The record's own hash guards against a damaged or hand-edited capture.
	if got := hex.EncodeToString(formats.SchemaHash(def)); r.Hash != "" && !strings.EqualFold(got, r.Hash) {
		return Candidate{}, fmt.Errorf("capture record of %s version %d: hash %s does not match its definition (sha256 %s): the file was changed",
			r.SchemaKey, r.Version, r.Hash, got)
	}
	recorded, err := hex.DecodeString(r.Hash)
	if err != nil {
		return Candidate{}, fmt.Errorf("capture record of %s version %d: hash: %w", r.SchemaKey, r.Version, err)
	}
	return Candidate{
		Source: src, Format: FormatCapture, SchemaKey: r.SchemaKey, Version: r.Version, HasVersion: true,
		Type: t, Definitions: [][]byte{def}, Properties: r.Properties, Timestamp: r.Timestamp, HasTimestamp: true,
		User: r.User, HasUser: true, Deleted: r.Deleted, RecordedHash: recorded, LedgerID: r.LedgerID,
	}, nil
}

// parseWithVersion reads what `pulsar-admin schemas get TOPIC` prints (no --version):
// SchemaInfoWithVersion, {"version":N,"schemaInfo":{...}}.
func parseWithVersion(src string, o *orderedObject) (Candidate, error) {
	rawInfo, _ := o.get("schemaInfo")
	var inner orderedObject
	if err := json.Unmarshal(rawInfo, &inner); err != nil {
		return Candidate{}, fmt.Errorf("schemaInfo: %w", err)
	}
	c, err := parseSchemaInfoJSON(src, &inner)
	if err != nil {
		return Candidate{}, fmt.Errorf("schemaInfo: %w", err)
	}
	c.Format = FormatAdminGet
	if err := optionalVersion(o, &c); err != nil {
		return Candidate{}, err
	}
	return c, nil
}

// parseSchemaInfoJSON reads a SchemaInfo as pulsar-admin prints it
// (`schemas get TOPIC --version N`: name, schema, type, timestamp, properties)
// or a schemas upload file (type, schema, properties). A "version" member, which
// neither has, is honoured when a user added it.
func parseSchemaInfoJSON(src string, o *orderedObject) (Candidate, error) {
	c := Candidate{Source: src, Format: FormatAdminInfo}
	if err := commonMembers(o, &c); err != nil {
		return Candidate{}, err
	}
	if _, ok := o.get("name"); !ok {
		if _, ok := o.get("timestamp"); !ok {
			c.Format = FormatUpload
		}
	}
	rawSchema, _ := o.get("schema")
	defs, err := definitionVariants(c.Type, rawSchema, 0)
	if err != nil {
		return Candidate{}, fmt.Errorf("schema: %w", err)
	}
	c.Definitions = defs
	if err := optionalVersion(o, &c); err != nil {
		return Candidate{}, err
	}
	return c, nil
}

// parseRESTResponse reads the REST GetSchemaResponse:
// {"version","type","timestamp","data","properties"}; data is the definition as a string.
func parseRESTResponse(src string, o *orderedObject) (Candidate, error) {
	c := Candidate{Source: src, Format: FormatRESTResponse}
	if err := commonMembers(o, &c); err != nil {
		return Candidate{}, err
	}
	rawData, _ := o.get("data")
	defs, err := definitionVariants(c.Type, rawData, 0)
	if err != nil {
		return Candidate{}, fmt.Errorf("data: %w", err)
	}
	c.Definitions = defs
	if err := optionalVersion(o, &c); err != nil {
		return Candidate{}, err
	}
	return c, nil
}

// commonMembers reads type, name, timestamp, properties, user and deleted.
func commonMembers(o *orderedObject, c *Candidate) error {
	var typeName string
	rawType, _ := o.get("type")
	if err := json.Unmarshal(rawType, &typeName); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	t, err := cluster.ParseSchemaType(typeName)
	if err != nil {
		return err
	}
	c.Type = t
	if raw, ok := o.get("name"); ok {
		if err := json.Unmarshal(raw, &c.Name); err != nil {
			return fmt.Errorf("name: %w", err)
		}
	}
	if raw, ok := o.get("timestamp"); ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c.Timestamp); err != nil {
			return fmt.Errorf("timestamp: %w", err)
		}
		c.HasTimestamp = true
	}
	if raw, ok := o.get("properties"); ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c.Properties); err != nil {
			return err
		}
	}
	if raw, ok := o.get("user"); ok {
		if err := json.Unmarshal(raw, &c.User); err != nil {
			return fmt.Errorf("user: %w", err)
		}
		c.HasUser = true
	}
	if raw, ok := o.get("deleted"); ok {
		if err := json.Unmarshal(raw, &c.Deleted); err != nil {
			return fmt.Errorf("deleted: %w", err)
		}
	}
	return nil
}

func optionalVersion(o *orderedObject, c *Candidate) error {
	raw, ok := o.get("version")
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, &c.Version); err != nil {
		return fmt.Errorf("version: %w", err)
	}
	if c.Version < 0 {
		return fmt.Errorf("version %d is negative", c.Version)
	}
	c.HasVersion = true
	return nil
}

// maxVariants bounds the renderings one input may stand for.
const maxVariants = 32

// definitionVariants lists the byte forms a printed definition can stand for.
// A string is the definition itself, or (pulsar-admin prints non-text types that
// way) base64 of it; nested JSON is re-rendered compactly; a KEY_VALUE
// definition is printed as {"key":..,"value":..} and rebuilt in binary form.
func definitionVariants(t schemapb.SchemaInfo_SchemaType, raw json.RawMessage, depth int) ([][]byte, error) {
	if depth > 2 {
		return nil, errors.New("key/value schemas nested too deeply")
	}
	raw = bytes.TrimSpace(raw)
	var out [][]byte
	add := func(b []byte) {
		for _, have := range out {
			if bytes.Equal(have, b) && (have == nil) == (b == nil) {
				return
			}
		}
		if len(out) < maxVariants {
			out = append(out, b)
		}
	}
	switch {
	case len(raw) == 0 || string(raw) == "null":
		add([]byte{})
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if t == schemapb.SchemaInfo_KEYVALUE {
			if kv, err := keyValueVariants(json.RawMessage(s), depth); err == nil {
				for _, v := range kv {
					add(v)
				}
			}
		}
		add([]byte(s))
		if c, err := jacksonCompact([]byte(s)); err == nil && (isTextType(t) || t == schemapb.SchemaInfo_KEYVALUE) {
			add(c)
		}
		if b, err := base64.StdEncoding.DecodeString(s); err == nil && s != "" {
			add(b)
		}
	case raw[0] == '{' || raw[0] == '[':
		if t == schemapb.SchemaInfo_KEYVALUE {
			kv, err := keyValueVariants(raw, depth)
			if err != nil {
				return nil, err
			}
			for _, v := range kv {
				add(v)
			}
			break
		}
		c, err := jacksonCompact(raw)
		if err != nil {
			return nil, err
		}
		add(c)
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err == nil {
			add(buf.Bytes())
		}
	default:
		return nil, fmt.Errorf("want a string or JSON, got %.20s", raw)
	}
	return out, nil
}

// keyValueVariants rebuilds `i32 keyLen | key | i32 valueLen | value` from the
// JSON form pulsar-admin prints: {"key": <side>, "value": <side>}, each side a
// printed SchemaInfo ({"type","schema",...}), a schema document, or "" for a
// primitive (empty) schema.
func keyValueVariants(raw json.RawMessage, depth int) ([][]byte, error) {
	var o orderedObject
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("key/value schema: %w", err)
	}
	keyRaw, okK := o.get("key")
	valRaw, okV := o.get("value")
	if !okK || !okV {
		return nil, errors.New("key/value schema: want members key and value")
	}
	keys, err := sideVariants(keyRaw, depth)
	if err != nil {
		return nil, fmt.Errorf("key/value schema: key: %w", err)
	}
	vals, err := sideVariants(valRaw, depth)
	if err != nil {
		return nil, fmt.Errorf("key/value schema: value: %w", err)
	}
	var out [][]byte
	for _, k := range keys {
		for _, v := range vals {
			if len(out) < maxVariants {
				out = append(out, formats.JoinKeyValueSchema(k, v))
			}
		}
	}
	return out, nil
}

func sideVariants(raw json.RawMessage, depth int) ([][]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var o orderedObject
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, err
		}
		rawType, hasType := o.get("type")
		rawSchema, hasSchema := o.get("schema")
		var typeName string
		if hasType && hasSchema && json.Unmarshal(rawType, &typeName) == nil {
			if t, err := cluster.ParseSchemaType(typeName); err == nil {
				return withNull(definitionVariants(t, rawSchema, depth+1))
			}
		}
	}
	return withNull(definitionVariants(schemapb.SchemaInfo_NONE, raw, depth+1))
}

// withNull adds the null (-1 length) form next to an empty side: the printed JSON
// cannot tell them apart.
func withNull(vs [][]byte, err error) ([][]byte, error) {
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		if len(v) == 0 {
			return append(vs, nil), nil
		}
	}
	return vs, nil
}

// validateDefinition parses Avro (and JSON, which Pulsar defines in Avro) schemas
// with a real Avro parser; for KEY_VALUE each Avro or JSON side is checked.
func validateDefinition(t schemapb.SchemaInfo_SchemaType, def []byte, props Properties) error {
	switch {
	case isAvroType(t):
		_, err := guard.Value("Avro parser", func() (avro.Schema, error) {
			return avro.ParseBytesWithCache(def, "", &avro.SchemaCache{})
		})
		if err != nil {
			return fmt.Errorf("invalid %s schema (Avro): %w", cluster.SchemaTypeName(t), err)
		}
	case t == schemapb.SchemaInfo_KEYVALUE:
		key, value, err := formats.SplitKeyValueSchema(def)
		if err != nil {
			return err
		}
		for _, side := range []struct {
			name string
			def  []byte
		}{{"key", key}, {"value", value}} {
			typeName, ok := props.Get(side.name + ".schema.type")
			if !ok {
				continue
			}
			st, err := cluster.ParseSchemaType(typeName)
			if err != nil || !isAvroType(st) || len(side.def) == 0 {
				continue
			}
			if err := validateDefinition(st, side.def, nil); err != nil {
				return fmt.Errorf("key/value %s: %w", side.name, err)
			}
		}
	}
	return nil
}
