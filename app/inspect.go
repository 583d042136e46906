package app

import (
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/index"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// inspectCommand groups the read-only views. Each subcommand builds one table and
// prints it; more views are added by appending to Subcommands.
func (e *env) inspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "read-only views of the data dir (never writes a byte)",
		Subcommands: []*cli.Command{
			{
				Name:   "topics",
				Usage:  "every managed ledger: ledgers, entries, size, node encoding, indexed, firstEntryIndex coverage",
				Flags:  []cli.Flag{indexKeyFlag()},
				Action: e.inspectTopics,
			},
			{
				Name:   "ledgers",
				Usage:  "every LedgerInfo of a topic (all partitions of a partitioned topic) beside its node and stored entries",
				Flags:  []cli.Flag{&cli.StringFlag{Name: flagTopic, Required: true, Usage: "persistent://tenant/ns/topic or tenant/ns/topic"}},
				Action: e.inspectLedgers,
			},
			{
				Name:   "schemas",
				Usage:  "every schema version of every locator (or of one topic): where it is stored and whether it is intact",
				Flags:  []cli.Flag{&cli.StringFlag{Name: flagTopic, Usage: "only this topic's schema"}},
				Action: e.inspectSchemas,
			},
			{
				Name:      "node",
				Usage:     "decode one metadata node by what its path is (managed ledger, cursor, schema locator, ledger metadata; raw hex otherwise); exits 1 when a known kind does not decode",
				ArgsUsage: "PATH",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: flagHex, Usage: "print a hex dump of the node's stored bytes (offset, hex, text) instead of decoding"},
					&cli.BoolFlag{Name: flagRaw, Usage: "write the node's stored bytes to stdout exactly, nothing else"},
				},
				Action: e.inspectNode,
			},
			{
				Name: "entries",
				Usage: "one row per entry of a ledger: broker index, publish time, producer, sequence id, batch size, schema ids, CRC; " +
					"for a schema ledger: schema, type, deleted, definition size and SHA-256, index entries",
				Description: "Name the entries by --ledger L (with --from/--to), or by --topic T with --offset N or --time T:\n" +
					"the entry index find names, and --count K entries after it (in its ledger).\n" +
					"--payload decodes each message with the schema version its entry names (AVRO, JSON, STRING,\n" +
					"KEY_VALUE of those); anything else, or a schema that is lost, is shown as hex with the reason.\n" +
					"--hex adds each entry's stored bytes as a hex dump.",
				Flags: []cli.Flag{
					&cli.Int64Flag{Name: flagLedger, Value: -1, Usage: "ledger id"},
					&cli.StringFlag{Name: flagTopic, Usage: "topic of the entries: with --offset/--time to find them, or with --ledger for --payload"},
					&cli.Int64Flag{Name: flagOffset, Value: -1, Usage: "with --topic: the entry holding this broker offset (as index find)"},
					&cli.StringFlag{Name: flagTime, Usage: "with --topic: the first entry at or after this time: " + timeSyntax},
					&cli.IntFlag{Name: flagCount, Value: 0, Usage: "with --offset/--time: also show this many following entries of the ledger"},
					indexKeyFlag(),
					&cli.BoolFlag{Name: flagPayload, Usage: "decode every message's payload with its schema version (a messages table)"},
					&cli.BoolFlag{Name: flagHex, Usage: "add each entry's stored bytes as a hex dump"},
					&cli.Int64Flag{Name: flagFromEntry, Value: 0, Usage: "first entry id"},
					&cli.Int64Flag{Name: flagToEntry, Value: -1, Usage: "last entry id (inclusive); -1 for the end"},
					&cli.IntFlag{Name: flagLimit, Value: inspect.DefaultEntriesLimit, Usage: "at most this many entries"},
				},
				Action: e.inspectEntries,
			},
			e.schemaUsageCommand(),
		},
	}
}

// withDataDir opens the stores read-only for the length of fn; the metadata must
// be a Pulsar cluster's (openReadOnly).
func (e *env) withDataDir(c *cli.Context, fn func(dd *datadir.DataDir) error) error {
	return e.withStores(c, true, fn)
}

// withStores is withDataDir; pulsar false accepts any metadata store (openAnyReadOnly).
func (e *env) withStores(c *cli.Context, pulsar bool, fn func(dd *datadir.DataDir) error) error {
	dd, err := e.openStores(c, true, pulsar)
	if err != nil {
		return err
	}
	err = fn(dd)
	if cerr := dd.Close(); err == nil && cerr != nil {
		err = report.CannotOpen(cerr)
	}
	return err
}

// notFound turns a missing topic, node or ledger into bad input (exit 2).
func notFound(err error) error {
	if errors.Is(err, inspect.ErrNoSuchTopic) || errors.Is(err, store.ErrNotFound) {
		return report.BadInput(err)
	}
	return err
}

func (e *env) printTable(c *cli.Context, t *report.Table, notes ...string) error {
	doc := &report.Document{}
	doc.Add(t)
	doc.Notes = notes
	return e.print(c, doc)
}

func (e *env) inspectTopics(c *cli.Context) error {
	key := indexKeyOf(c)
	return e.withDataDir(c, func(dd *datadir.DataDir) error {
		return e.printTable(c, inspect.TopicsTable(c.Context, dd, key))
	})
}

func (e *env) inspectLedgers(c *cli.Context) error {
	topic, err := topicArg(c.String(flagTopic))
	if err != nil {
		return err
	}
	return e.withDataDir(c, func(dd *datadir.DataDir) error {
		t, err := inspect.Ledgers(c.Context, dd, topic)
		if err != nil {
			return notFound(err)
		}
		return e.printTable(c, t)
	})
}

func (e *env) inspectSchemas(c *cli.Context) error {
	topic, err := topicOption(c)
	if err != nil {
		return err
	}
	return e.withDataDir(c, func(dd *datadir.DataDir) error {
		if topic == nil {
			return e.printTable(c, inspect.SchemasTable(c.Context, dd))
		}
		t, err := inspect.Schemas(c.Context, dd, topic)
		if err != nil {
			return notFound(err)
		}
		return e.printTable(c, t)
	})
}

func (e *env) inspectNode(c *cli.Context) error {
	// urfave stops parsing flags at PATH; take --hex/--raw after it too.
	var args []string
	hexOut, rawOut := c.Bool(flagHex), c.Bool(flagRaw)
	for _, a := range c.Args().Slice() {
		switch a {
		case "--hex", "-hex":
			hexOut = true
		case "--raw", "-raw":
			rawOut = true
		default:
			args = append(args, a)
		}
	}
	if len(args) != 1 {
		return report.BadInputf("inspect node: want exactly one PATH, got %d arguments", len(args))
	}
	if hexOut && rawOut {
		return report.BadInputf("inspect node: give --hex or --raw, not both")
	}
	// A node is named by its path: any store, chroot or not, can be looked into.
	return e.withStores(c, false, func(dd *datadir.DataDir) error {
		path := args[0]
		if hexOut || rawOut {
			return e.nodeBytes(dd, path, rawOut)
		}
		t, undecodable, err := inspect.Node(dd, path)
		if err != nil {
			return notFound(err)
		}
		doc := &report.Document{}
		doc.Add(t)
		if err := e.print(c, doc); err != nil {
			return err
		}
		if undecodable {
			return report.ErrFindings // the table shows the error and the raw bytes
		}
		return nil
	})
}

// nodeBytes writes a node's stored bytes as they are (raw) or as a hex dump.
func (e *env) nodeBytes(dd *datadir.DataDir, path string, raw bool) error {
	n, err := dd.Metadata.Get(path)
	if err != nil {
		return notFound(err)
	}
	if raw {
		_, err = e.Stdout.Write(n.Value)
	} else {
		err = inspect.HexDump(e.Stdout, n.Value)
	}
	if err != nil {
		return report.CannotOpen(fmt.Errorf("write %s to stdout: %w", path, err))
	}
	return nil
}

// inspect entries' own flags (and inspect node's --raw).
const (
	flagRaw       = "raw"
	flagLedger    = "ledger"
	flagOffset    = "offset"
	flagTime      = "time"
	flagCount     = "count"
	flagFromEntry = "from"
	flagToEntry   = "to"
	flagLimit     = "limit"
)

// entriesOptions are inspect entries' flags: the entries by ledger (Entries),
// or found by --topic with --offset or --time.
type entriesOptions struct {
	Entries  inspect.EntriesOptions
	Topic    *formats.TopicName
	Find     bool   // --offset or --time
	ByOffset bool   // --offset (else --time)
	Offset   int64  // --offset
	TimeMs   int64  // --time, epoch ms
	Count    int    // entries after the one found
	IndexKey string // the firstEntryIndex property find uses
	Payload  bool
	Hex      bool
}

func parseEntriesOptions(c *cli.Context) (entriesOptions, error) {
	o := entriesOptions{
		Entries: inspect.EntriesOptions{Ledger: c.Int64(flagLedger), From: c.Int64(flagFromEntry), To: c.Int64(flagToEntry),
			Limit: c.Int(flagLimit)},
		Find: c.IsSet(flagOffset) || c.IsSet(flagTime), ByOffset: c.IsSet(flagOffset), Count: c.Int(flagCount),
		IndexKey: indexKeyOf(c), Payload: c.Bool(flagPayload), Hex: c.Bool(flagHex),
	}
	switch {
	case o.Find && c.IsSet(flagOffset) && c.IsSet(flagTime):
		return o, report.BadInputf("inspect entries: give one of --offset and --time")
	case o.Find && (c.IsSet(flagLedger) || c.IsSet(flagFromEntry) || c.IsSet(flagToEntry)):
		return o, report.BadInputf("inspect entries: --offset/--time find the entry: give --topic, not --ledger/--from/--to")
	case o.Find && !c.IsSet(flagTopic):
		return o, report.BadInputf("inspect entries: --offset/--time need --topic")
	case !o.Find && !c.IsSet(flagLedger):
		return o, missingFlag(c, "--ledger L (or --topic T with --offset N or --time T)")
	case !o.Find && c.IsSet(flagCount):
		return o, report.BadInputf("inspect entries: --count goes with --offset/--time; with --ledger use --from/--to")
	case o.Count < 0:
		return o, report.BadInputf("inspect entries: --count %d: not negative", o.Count)
	}
	topic, err := topicOption(c)
	if err != nil {
		return o, err
	}
	o.Topic = topic
	if !o.Find {
		e := o.Entries
		if e.Ledger < 0 {
			return o, report.BadInputf("inspect entries: --ledger %d: ledger ids are not negative", e.Ledger)
		}
		if e.From < 0 || (e.To >= 0 && e.To < e.From) {
			return o, report.BadInputf("inspect entries: --from %d --to %d is not a range", e.From, e.To)
		}
	}
	if o.Entries.Limit < 1 {
		return o, report.BadInputf("inspect entries: --limit %d: want at least 1", o.Entries.Limit)
	}
	switch {
	case o.Find && o.ByOffset:
		if o.Offset = c.Int64(flagOffset); o.Offset < 0 {
			return o, report.BadInputf("--offset %d: offsets are not negative", o.Offset)
		}
	case o.Find:
		if o.TimeMs, err = timeFlagMillis(c, flagTime); err != nil {
			return o, err
		}
	}
	return o, nil
}

func (e *env) inspectEntries(c *cli.Context) error {
	eo, err := parseEntriesOptions(c)
	if err != nil {
		return err
	}
	o, find, topic := eo.Entries, eo.Find, eo.Topic
	// Entries by ledger id need no metadata; a topic is found through Pulsar's.
	return e.withStores(c, topic != nil, func(dd *datadir.DataDir) error {
		var notes []string
		if find {
			note, err := e.findEntry(c, dd, eo, &o)
			if err != nil {
				return err
			}
			notes = append(notes, note)
		}
		t, more, err := inspect.Entries(c.Context, dd, o)
		if err != nil {
			return notFound(err)
		}
		if more {
			notes = append(notes, "stopped at --limit; use --from or a larger --limit for more")
		}
		if find && len(t.Rows) < eo.Count+1 {
			notes = append(notes, fmt.Sprintf("ledger %d ends after %d of the %d entries asked for: the following entries are in the next ledger",
				o.Ledger, len(t.Rows), eo.Count+1))
		}
		doc := &report.Document{Notes: notes}
		doc.Add(t)
		if eo.Payload {
			if t.Name == "schema_entries" {
				notes = append(notes, fmt.Sprintf("--payload: ledger %d is a schema ledger: its entries are schemas, not messages", o.Ledger))
			} else if msgs, err := e.payloadTable(c, dd, topic, o.Ledger, t); err != nil {
				return err
			} else {
				doc.Add(msgs)
			}
			doc.Notes = notes
		}
		if !eo.Hex {
			return e.print(c, doc)
		}
		return e.printWithHex(c, dd, doc, o.Ledger, t)
	})
}

// findEntry points o at the entry index find names for --offset/--time and
// returns a note saying so; a target that no stored entry holds ends with exit 1.
func (e *env) findEntry(c *cli.Context, dd *datadir.DataDir, eo entriesOptions, o *inspect.EntriesOptions) (string, error) {
	t, byOffset, target := *eo.Topic, eo.ByOffset, eo.TimeMs
	if byOffset {
		target = eo.Offset
	}
	node, err := dd.Metadata.Get(t.ManagedLedgerPath())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", missingTopic(c.Context, dd, t)
	case errors.Is(err, store.ErrTruncatedValue):
		return "", findingsError(fmt.Errorf("%s: %w", t, err))
	case err != nil:
		return "", report.CannotOpen(err)
	}
	info, _, err := formats.DecodeManagedLedgerInfo(node.Value)
	if err != nil {
		return "", findingsError(fmt.Errorf("%s: managed-ledger node %s does not decode: %w", t, node.Path, err))
	}
	opts := index.FindOptions{Key: eo.IndexKey}
	var a *index.Answer
	if byOffset {
		a, err = index.FindOffset(c.Context, dd.Ledgers, info, target, opts)
	} else {
		a, err = index.FindTime(c.Context, dd.Ledgers, info, target, opts)
	}
	if err != nil {
		return "", findError(t, byOffset, err)
	}
	what := fmt.Sprintf("offset %d", target)
	if !byOffset {
		what = fmt.Sprintf("time %s", time.UnixMilli(target).UTC().Format(time.RFC3339Nano))
	}
	switch {
	case a.PastEnd:
		return "", findingsError(fmt.Errorf("%s: %s is past the last entry (the next entry goes to %d:%d)", t, what, a.Position.LedgerID, a.Position.EntryID))
	case a.NotLocal:
		return "", findingsError(fmt.Errorf("%s: %s is in ledger %d, which is offloaded: its entries are not in the ledger store", t, what, a.Position.LedgerID))
	case a.Lost:
		return "", findingsError(fmt.Errorf("%s: %s is in ledger %d, whose entries are lost", t, what, a.Position.LedgerID))
	case !a.Found:
		return "", findingsError(fmt.Errorf("%s: %s: no entry holds it", t, what))
	}
	o.Ledger, o.From, o.To = a.Position.LedgerID, a.Position.EntryID, a.Position.EntryID+int64(eo.Count)
	return fmt.Sprintf("%s of %s is in entry %d:%d (index find, %s)", what, t, a.Position.LedgerID, a.Position.EntryID, a.Method), nil
}

// payloadTable decodes the messages of the entries listed in t. The schema is
// that of topic, or of the topic whose managed ledger lists the ledger.
func (e *env) payloadTable(c *cli.Context, dd *datadir.DataDir, topic *formats.TopicName, ledger int64, t *report.Table) (*report.Table, error) {
	if topic == nil {
		owner, ok, err := inspect.LedgerOwner(c.Context, dd, ledger)
		if err != nil {
			return nil, report.CannotOpen(err)
		}
		if !ok {
			return nil, report.BadInputf("inspect entries --payload: no managed ledger lists ledger %d: name its topic with --topic", ledger)
		}
		topic = &owner
	}
	d := inspect.NewPayloadDecoder(dd, *topic)
	msgs := []inspect.MessageRow{}
	for _, id := range entryIDs(t) {
		v, err := dd.Ledgers.Entry(ledger, id)
		if err != nil {
			continue // the entries table shows why it cannot be read
		}
		msgs = append(msgs, d.Messages(ledger, id, v)...)
	}
	return inspect.MessagesTable(msgs), nil
}

// entryIDs are the entry ids of an entries table's rows (column 0).
func entryIDs(t *report.Table) []int64 {
	var ids []int64
	for _, r := range t.Rows {
		if id, ok := r[0].(int64); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// printWithHex prints doc, then each listed entry's stored bytes: as a hex dump
// per entry for people, as an "entry_bytes" list (hex strings) in JSON.
func (e *env) printWithHex(c *cli.Context, dd *datadir.DataDir, doc *report.Document, ledger int64, t *report.Table) error {
	type entryBytes struct {
		Ledger int64  `json:"ledger_id"`
		Entry  int64  `json:"entry_id"`
		Hex    string `json:"hex,omitempty"`
		Error  string `json:"error,omitempty"`
	}
	var all []entryBytes
	var raw [][]byte
	for _, id := range entryIDs(t) {
		v, err := dd.Ledgers.Entry(ledger, id)
		eb := entryBytes{Ledger: ledger, Entry: id, Hex: hex.EncodeToString(v)}
		if err != nil {
			eb.Error = err.Error()
		}
		all, raw = append(all, eb), append(raw, v)
	}
	if e.machineOutput(c) {
		if doc.Extra == nil {
			doc.Extra = map[string]any{}
		}
		doc.Extra["entry_bytes"] = all
		return e.print(c, doc)
	}
	if err := e.print(c, doc); err != nil || globalBool(c, "quiet") {
		return err
	}
	for i, eb := range all {
		fmt.Fprintf(e.Stdout, "\nentry %d:%d, %d bytes\n", eb.Ledger, eb.Entry, len(raw[i]))
		if eb.Error != "" {
			fmt.Fprintf(e.Stdout, "  cannot read: %s\n", eb.Error)
			continue
		}
		if err := inspect.HexDump(e.Stdout, raw[i]); err != nil {
			return report.CannotOpen(fmt.Errorf("write output: %w", err))
		}
	}
	return nil
}
