package app

import (
	"encoding/hex"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/schemaid"
)

// maxStdinValue bounds what `schemaid decode -` reads: a schema id is a few
// bytes and a Confluent header needs only the first few of a payload, but a
// whole message payload may be piped in, so allow any sane message size.
const maxStdinValue = 64 << 20

// formatRaw names bytes read verbatim from stdin.
const formatRaw = "raw"

// schemaidCommand is `schemaid decode`: the schemaid codec on the command line.
// It needs no data dir.
func (e *env) schemaidCommand() *cli.Command {
	return &cli.Command{
		Name:  "schemaid",
		Usage: "decode schema ids as stored in MessageMetadata (schema_version, schema_id)",
		Subcommands: []*cli.Command{{
			Name:      "decode",
			Usage:     "decode a schema_version or schema_id value, or the Confluent header of a payload",
			ArgsUsage: "VALUE",
			Description: "VALUE is hex (0x… or bare digits; spaces and colons allowed), base64 (\"base64:…\" to force),\n" +
				"or - to read raw bytes from stdin. Without --field every reading that fits is shown;\n" +
				"bytes that fit several are not guessed. With --payload VALUE is a whole message payload\n" +
				"and its Confluent header (0x00 | i32 id, or 0x01 | 16-byte GUID) is decoded.\n\n" +
				"Exits 0 when the bytes decode, 2 when VALUE cannot be read or the bytes fit no layout.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: flagField, Usage: "the field the bytes came from: version (schema_version) or id (schema_id)"},
				&cli.BoolFlag{Name: flagPayload, Usage: "VALUE is a message payload: decode its Confluent wire-format header"},
			},
			Action: e.schemaidDecode,
		}},
	}
}

// flagField is schemaid decode's --field.
const flagField = "field"

// schemaidOptions are schemaid decode's argument and flags.
type schemaidOptions struct {
	Value   string         // VALUE as given
	Field   schemaid.Field // FieldUnknown: every reading that fits
	Payload bool
}

func parseSchemaidOptions(c *cli.Context) (schemaidOptions, error) {
	if c.NArg() != 1 {
		return schemaidOptions{}, report.BadInputf("schemaid decode: want exactly one VALUE (hex, base64, or - for stdin), got %d arguments", c.NArg())
	}
	field, err := schemaid.ParseField(c.String(flagField))
	if err != nil {
		return schemaidOptions{}, report.BadInput(err)
	}
	o := schemaidOptions{Value: c.Args().First(), Field: field, Payload: c.Bool(flagPayload)}
	if o.Payload && c.IsSet(flagField) {
		return o, report.BadInputf("--payload decodes a payload's Confluent header; --field does not apply")
	}
	return o, nil
}

func (e *env) schemaidDecode(c *cli.Context) error {
	o, err := parseSchemaidOptions(c)
	if err != nil {
		return err
	}
	raw, format, err := e.readValue(o.Value)
	if err != nil {
		return err
	}
	doc := &report.Document{Extra: map[string]any{}}
	doc.Add(inputTable(raw, format))
	switch {
	case o.Payload:
		err = decodePayload(doc, raw)
	case o.Field == schemaid.FieldUnknown:
		err = decodeAll(doc, raw)
	default:
		err = decodeField(doc, o.Field, raw)
	}
	if err != nil {
		return err
	}
	return e.print(c, doc)
}

// readValue turns the VALUE argument into bytes: "-" reads stdin verbatim.
func (e *env) readValue(arg string) ([]byte, string, error) {
	if arg != "-" {
		b, format, err := schemaid.ParseValueFormat(arg)
		if err != nil {
			return nil, "", report.BadInput(err)
		}
		return b, format, nil
	}
	if e.Stdin == nil {
		return nil, "", report.BadInputf("VALUE is - but there is no stdin")
	}
	b, err := io.ReadAll(io.LimitReader(e.Stdin, maxStdinValue+1))
	if err != nil {
		return nil, "", report.BadInputf("read VALUE from stdin: %v", err)
	}
	if len(b) > maxStdinValue {
		return nil, "", report.BadInputf("VALUE on stdin is larger than %d bytes", maxStdinValue)
	}
	return b, formatRaw, nil
}

// schemaidInput is the VALUE as read: its format and bytes (the table shows
// the first 64 bytes, the JSON all of them).
type schemaidInput struct {
	Format string `json:"format" table:"FORMAT"`
	Bytes  int    `json:"bytes" table:"BYTES"`
	Hex    string `json:"hex"`
	Shown  string `json:"-" table:"HEX"`
}

// schemaidReading is one way the bytes read; the structured id is under "decoded".
type schemaidReading struct {
	Field  string            `json:"field" table:"FIELD"`
	Kind   schemaid.Kind     `json:"kind" table:"KIND"`
	Layout schemaid.KVLayout `json:"layout,omitempty" table:"LAYOUT"` // key/value ids: java or rust
	ID     string            `json:"id" table:"SCHEMA ID"`
	Note   string            `json:"note,omitempty" table:"NOTE"`
}

// schemaidPayload is the Confluent header of a payload.
type schemaidPayload struct {
	Kind       schemaid.Kind `json:"kind" table:"KIND"`
	ID         string        `json:"id" table:"SCHEMA ID"`
	HeaderHex  string        `json:"header_hex" table:"HEADER"`
	DataOffset int           `json:"data_offset" table:"DATA OFFSET"`
	DataLength int           `json:"data_length" table:"DATA LENGTH"`
}

func inputTable(raw []byte, format string) *report.Table {
	h := hex.EncodeToString(raw)
	shown := h
	if len(raw) > 64 {
		shown = hex.EncodeToString(raw[:64]) + "…"
	}
	return report.Rows("input", "", []schemaidInput{{Format: format, Bytes: len(raw), Hex: h, Shown: shown}})
}

func readingsTable(rs []schemaid.Reading) *report.Table {
	rows := make([]schemaidReading, len(rs))
	for i, r := range rs {
		rows[i] = schemaidReading{Field: r.Field.String(), Kind: r.ID.Kind, Layout: r.ID.Layout, ID: r.ID.String(), Note: note(r.ID)}
	}
	return report.Rows("readings", "", rows)
}

// note is the reason of an odd-but-valid id; unknown and legacy ids already
// carry their reason in String.
func note(id schemaid.ID) string {
	if id.Kind == schemaid.KindUnknown || id.Kind == schemaid.KindPulsarVersionLegacy {
		return ""
	}
	return id.Reason
}

// decodeAll shows every reading of bare bytes; it fails only when none fits.
func decodeAll(doc *report.Document, raw []byte) error {
	rs := schemaid.DecodeAll(raw)
	if len(rs) == 1 && rs[0].ID.Kind == schemaid.KindUnknown {
		return report.BadInputf("0x%x fits no schema id layout: %s", raw, rs[0].ID.Reason)
	}
	doc.Add(readingsTable(rs))
	doc.Extra["decoded"] = rs
	if len(rs) > 1 {
		doc.Note("the bytes fit %d readings; give --field version or --field id to choose", len(rs))
	}
	return nil
}

// decodeField reads the bytes as the content of one field.
func decodeField(doc *report.Document, field schemaid.Field, raw []byte) error {
	id, err := schemaid.Decode(field, raw)
	if err != nil {
		return report.BadInputf("0x%x as %s: %v", raw, field, err)
	}
	if id.Kind == schemaid.KindUnknown {
		return report.BadInputf("0x%x as %s: fits no layout: %s", raw, field, id.Reason)
	}
	rs := []schemaid.Reading{{Field: field, ID: id}}
	doc.Add(readingsTable(rs))
	doc.Extra["decoded"] = rs
	return nil
}

// decodePayload reads the Confluent header of a whole payload.
func decodePayload(doc *report.Document, payload []byte) error {
	id, off, err := schemaid.DecodeConfluentPayload(payload)
	if err != nil {
		return report.BadInput(fmt.Errorf("payload: %w", err))
	}
	doc.Add(report.Rows("payload", "", []schemaidPayload{{Kind: id.Kind, ID: id.String(),
		HeaderHex: hex.EncodeToString(id.Raw), DataOffset: off, DataLength: len(payload) - off}}))
	doc.Extra["decoded"] = id
	return nil
}
