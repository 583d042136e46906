package inspect

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/hamba/avro/v2"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/internal/guard"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// JSONValue is a decoded payload: printed as JSON text in tables and embedded
// as JSON (not as a string) in -o json. It is not a []byte on purpose: report
// cells print []byte as hex.
type JSONValue []byte

// MarshalJSON embeds the value as is.
func (v JSONValue) MarshalJSON() ([]byte, error) { return v, nil }

// Format prints the JSON text (tables use fmt.Sprint for unknown types).
func (v JSONValue) Format(f fmt.State, _ rune) { _, _ = f.Write(v) }

// Message is one message of an entry, its payload decoded or the reason not.
type Message struct {
	Index   int       // position in the batch; -1 when the entry is not batched
	Key     string    // partition key as stored (base64 when the producer said so)
	Value   JSONValue // nil when not decoded
	Raw     []byte    // the payload bytes, when not decoded
	Problem string    // why not decoded
}

// PayloadDecoder decodes the messages of one topic with the schema version each
// entry names. Versions are read from the schema ledger once each.
type PayloadDecoder struct {
	dd       *datadir.DataDir
	topic    formats.TopicName
	loaded   bool
	locator  *schemapb.SchemaLocator
	locError string
	versions map[int64]schemaOrReason
}

type schemaOrReason struct {
	info   *schemapb.SchemaInfo
	reason string
}

// NewPayloadDecoder decodes payloads of topic (any partition: the schema is the
// base topic's).
func NewPayloadDecoder(dd *datadir.DataDir, topic formats.TopicName) *PayloadDecoder {
	return &PayloadDecoder{dd: dd, topic: topic, versions: map[int64]schemaOrReason{}}
}

// Entry splits an entry frame into its messages and decodes each. An entry
// that does not parse is an error naming the byte offset.
func (d *PayloadDecoder) Entry(v []byte) ([]Message, error) {
	e, err := formats.ParseEntry(v)
	if err != nil {
		return nil, err
	}
	md := e.Metadata
	hexOnly := func(reason string) []Message {
		return []Message{{Index: -1, Key: md.GetPartitionKey(), Raw: e.Payload, Problem: reason}}
	}
	if md.GetEncryptionAlgo() != "" || len(md.GetEncryptionParam()) > 0 {
		return hexOnly("encrypted payload"), nil
	}
	if md.GetNumChunksFromMsg() > 1 {
		return hexOnly("one chunk of a chunked message"), nil
	}
	payload, err := formats.DecompressPayload(md.GetCompression(), e.Payload, int(md.GetUncompressedSize()))
	if err != nil {
		return hexOnly(fmt.Sprintf("payload does not decompress (%s): %v", md.GetCompression(), err)), nil
	}
	info, reason := d.schema(md.GetSchemaVersion())
	if md.NumMessagesInBatch == nil {
		return []Message{d.message(-1, md.GetPartitionKey(), md.GetPartitionKeyB64Encoded(), payload, info, reason)}, nil
	}
	msgs, err := formats.ParseBatch(payload, int(md.GetNumMessagesInBatch()))
	if err != nil {
		return []Message{{Index: -1, Raw: payload, Problem: "batch does not split: " + err.Error()}}, nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = d.message(i, m.Meta.GetPartitionKey(), m.Meta.GetPartitionKeyB64Encoded(), m.Payload, info, reason)
	}
	return out, nil
}

func (d *PayloadDecoder) message(i int, key string, keyB64 bool, payload []byte, info *schemapb.SchemaInfo, reason string) Message {
	m := Message{Index: i, Key: key}
	if info == nil {
		m.Raw, m.Problem = payload, reason
		return m
	}
	// SEPARATED KEY_VALUE sends the key in the partition key, base64 when flagged.
	var sepKey []byte
	if key != "" {
		sepKey = []byte(key)
		if b, err := base64.StdEncoding.DecodeString(key); keyB64 && err == nil {
			sepKey = b
		}
	}
	v, err := DecodePayload(info, payload, sepKey)
	if err != nil {
		m.Raw, m.Problem = payload, err.Error()
		return m
	}
	m.Value = v
	return m
}

// schema returns the SchemaInfo of the version an entry names, or why there is none.
func (d *PayloadDecoder) schema(raw []byte) (*schemapb.SchemaInfo, string) {
	if len(raw) == 0 {
		return nil, "the entry names no schema version"
	}
	ver, err := formats.DecodeSchemaVersion(raw)
	if err != nil {
		return nil, fmt.Sprintf("schema version %x: %v", raw, err)
	}
	if s, ok := d.versions[ver]; ok {
		return s.info, s.reason
	}
	s := d.load(ver)
	d.versions[ver] = s
	return s.info, s.reason
}

func (d *PayloadDecoder) load(ver int64) schemaOrReason {
	at := schemaLoc(d.topic.SchemaKey(), ver)
	if !d.loaded {
		d.loaded = true
		path := d.topic.SchemaLocatorPath()
		n, err := d.dd.Metadata.Get(path)
		if err == nil {
			d.locator, err = formats.DecodeSchemaLocator(n.Value)
		}
		if err != nil {
			d.locError = fmt.Sprintf("schema locator %s: %v", path, err)
		}
	}
	if d.locator == nil {
		return schemaOrReason{reason: at + ": " + d.locError}
	}
	ie := findVersion(d.locator, ver)
	if ie == nil {
		return schemaOrReason{reason: fmt.Sprintf("%s: the locator has no such version (%s)", at, locatorRange(d.locator))}
	}
	sv := schemaVersion{key: d.topic.SchemaKey(), version: ver,
		ledger: ie.GetPosition().GetLedgerId(), entry: ie.GetPosition().GetEntryId(), hash: ie.GetHash()}
	f, err := ledgerPresence(d.dd, sv.ledger)
	if err != nil {
		return schemaOrReason{reason: fmt.Sprintf("%s: %v", at, err)}
	}
	state, detail, info, err := schemaState(d.dd.Ledgers, f, sv)
	switch {
	case err != nil:
		return schemaOrReason{reason: fmt.Sprintf("%s: %v", at, err)}
	case info == nil:
		return schemaOrReason{reason: fmt.Sprintf("%s (ledger %d entry %d): %s: %s", at, sv.ledger, sv.entry, state, detail)}
	case info.GetDeleted():
		return schemaOrReason{reason: at + ": the version is a deletion tombstone"}
	}
	return schemaOrReason{info: info}
}

// DecodePayload decodes one message payload with its schema as JSON: AVRO (via
// hamba/avro, guarded: definitions come from users), JSON as is, STRING, and
// KEY_VALUE of those (INLINE: key and value in the payload; SEPARATED: the
// value in the payload, the key in sepKey). Other types are an error.
func DecodePayload(info *schemapb.SchemaInfo, payload, sepKey []byte) (JSONValue, error) {
	return decodeAs(info.GetType(), info.GetSchema(), info.GetProps(), payload, sepKey)
}

func decodeAs(typ schemapb.SchemaInfo_SchemaType, def []byte, props []*schemapb.SchemaInfo_KeyValuePair, payload, sepKey []byte) (JSONValue, error) {
	switch typ {
	case schemapb.SchemaInfo_AVRO:
		return decodeAvro(def, payload)
	case schemapb.SchemaInfo_JSON:
		if !json.Valid(payload) {
			return nil, errors.New("JSON schema: the payload is not valid JSON")
		}
		return JSONValue(bytes.Clone(payload)), nil
	case schemapb.SchemaInfo_STRING:
		if !utf8.Valid(payload) {
			return nil, errors.New("STRING schema: the payload is not UTF-8")
		}
		b, err := json.Marshal(string(payload))
		return JSONValue(b), err
	case schemapb.SchemaInfo_KEYVALUE:
		return decodeKeyValue(def, props, payload, sepKey)
	}
	return nil, fmt.Errorf("schema type %s is not decoded here", cluster.SchemaTypeName(typ))
}

// avroAPI bounds what a payload may make the decoder allocate: a damaged length
// must not ask for gigabytes. Pulsar's largest message is 5 MiB by default.
var avroAPI = avro.Config{MaxByteSliceSize: 8 << 20, MaxSliceAllocSize: 1 << 20}.Freeze()

func decodeAvro(def, payload []byte) (JSONValue, error) {
	v, err := guard.Value("Avro payload", func() (any, error) {
		s, err := avro.ParseBytes(def)
		if err != nil {
			return nil, fmt.Errorf("AVRO schema does not parse: %w", err)
		}
		var v any
		if err := avroAPI.Unmarshal(s, payload, &v); err != nil {
			return nil, fmt.Errorf("AVRO payload does not decode: %w", err)
		}
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("AVRO payload: %w", err)
	}
	return JSONValue(b), nil
}

// decodeKeyValue splits the definition into key and value schemas; their types
// are in the key.schema.type and value.schema.type properties (as
// KeyValueSchemaInfo writes them).
func decodeKeyValue(def []byte, props []*schemapb.SchemaInfo_KeyValuePair, payload, sepKey []byte) (JSONValue, error) {
	keyDef, valueDef, err := formats.SplitKeyValueSchema(def)
	if err != nil {
		return nil, err
	}
	prop := func(k string) string {
		for _, p := range props {
			if p.GetKey() == k {
				return p.GetValue()
			}
		}
		return ""
	}
	// The properties hold Pulsar's type names (KeyValueSchemaInfo), not the enum's.
	keyType, kerr := cluster.ParseSchemaType(prop("key.schema.type"))
	valueType, verr := cluster.ParseSchemaType(prop("value.schema.type"))
	if kerr != nil || verr != nil {
		return nil, fmt.Errorf("KEY_VALUE schema: key.schema.type %q / value.schema.type %q not known",
			prop("key.schema.type"), prop("value.schema.type"))
	}
	keyBytes, valueBytes := sepKey, payload
	if prop("kv.encoding.type") != "SEPARATED" {
		// INLINE: `i32 keyLen | key | i32 valueLen | value`, the definition's framing.
		if keyBytes, valueBytes, err = formats.SplitKeyValueSchema(payload); err != nil {
			return nil, fmt.Errorf("KEY_VALUE INLINE payload: %w", err)
		}
	}
	var out struct {
		Key   JSONValue `json:"key"`
		Value JSONValue `json:"value"`
	}
	out.Key, out.Value = JSONValue("null"), JSONValue("null")
	if keyBytes != nil {
		if out.Key, err = decodeAs(keyType, keyDef, nil, keyBytes, nil); err != nil {
			return nil, fmt.Errorf("KEY_VALUE key: %w", err)
		}
	}
	if valueBytes != nil {
		if out.Value, err = decodeAs(valueType, valueDef, nil, valueBytes, nil); err != nil {
			return nil, fmt.Errorf("KEY_VALUE value: %w", err)
		}
	}
	b, err := json.Marshal(out)
	return JSONValue(b), err
}

// MessageRow is one decoded message of the entries view (--payload).
type MessageRow struct {
	EntryID    int64     `json:"entry_id" table:"ENTRY"`
	LedgerID   int64     `json:"ledger_id" table:"LEDGER"`
	BatchIndex *int      `json:"batch_index,omitempty" table:"MESSAGE"` // absent: the entry is not batched
	Key        string    `json:"key,omitempty" table:"KEY"`
	Payload    JSONValue `json:"payload,omitempty" table:"PAYLOAD"` // the decoded value, JSON
	Raw        []byte    `json:"-" table:"PAYLOAD HEX"`
	PayloadHex string    `json:"payload_hex,omitempty"` // when not decoded
	Error      string    `json:"payload_error,omitempty" table:"WHY HEX"`
}

// MessagesTable is the table of decoded messages: one row per message.
func MessagesTable(rows []MessageRow) *report.Table { return report.Rows("messages", "", rows) }

// Messages decodes an entry's messages.
func (d *PayloadDecoder) Messages(ledger, entry int64, v []byte) []MessageRow {
	msgs, err := d.Entry(v)
	if err != nil {
		return []MessageRow{{EntryID: entry, LedgerID: ledger, Error: "entry does not parse: " + err.Error()}}
	}
	rows := make([]MessageRow, len(msgs))
	for i, m := range msgs {
		r := MessageRow{EntryID: entry, LedgerID: ledger, Key: m.Key, Payload: m.Value, Raw: nilIfEmpty(m.Raw),
			PayloadHex: hex.EncodeToString(m.Raw), Error: m.Problem}
		if m.Index >= 0 {
			r.BatchIndex = report.Ptr(m.Index)
		}
		rows[i] = r
	}
	return rows
}

// HexDump writes b as a hex dump: offset, 16 bytes in hex, the printable
// characters (hexdump -C, as encoding/hex.Dump writes it).
func HexDump(w io.Writer, b []byte) error {
	d := hex.Dumper(w)
	if _, err := d.Write(b); err != nil {
		return err
	}
	return d.Close()
}

// LedgerOwner returns the topic whose managed ledger lists ledger id.
func LedgerOwner(ctx context.Context, dd *datadir.DataDir, id int64) (formats.TopicName, bool, error) {
	var owner formats.TopicName
	found := false
	errFound := errors.New("found")
	err := walkNodes(ctx, dd.Metadata, formats.ManagedLedgersRoot+"/", func(n store.Node) error {
		topic, ok := formats.ParseManagedLedgerPath(n.Path)
		if !ok {
			return nil
		}
		info, _, err := formats.DecodeManagedLedgerInfo(n.Value)
		if err != nil {
			return nil // check reports it
		}
		for _, li := range info.GetLedgerInfo() {
			if li.GetLedgerId() == id {
				owner, found = topic, true
				return errFound
			}
		}
		return nil
	}, func(*store.TruncatedError) error { return nil })
	if err != nil && !errors.Is(err, errFound) {
		return owner, false, fmt.Errorf("find the topic of ledger %d: %w", id, err)
	}
	return owner, found, nil
}
