package app

import (
	"encoding/json"

	"errors"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/formats"
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
				Flags:  []cli.Flag{firstEntryIndexKeyFlag()},
				Action: e.inspectTopics,
			},
			{
				Name:   "ledgers",
				Usage:  "every LedgerInfo of a topic (all partitions of a partitioned topic) beside its node and stored entries",
				Flags:  []cli.Flag{&cli.StringFlag{Name: "topic", Required: true, Usage: "persistent://tenant/ns/topic or tenant/ns/topic"}},
				Action: e.inspectLedgers,
			},
			{
				Name:   "schemas",
				Usage:  "every schema version of every locator (or of one topic): where it is stored and whether it is intact",
				Flags:  []cli.Flag{&cli.StringFlag{Name: "topic", Usage: "only this topic's schema"}},
				Action: e.inspectSchemas,
			},
			{
				Name:      "node",
				Usage:     "decode one metadata node by what its path is (managed ledger, cursor, schema locator, ledger metadata; raw hex otherwise); exits 1 when a known kind does not decode",
				ArgsUsage: "PATH",
				Action:    e.inspectNode,
			},
			{
				Name: "entries",
				Usage: "one row per entry of a ledger: broker index, publish time, producer, sequence id, batch size, schema ids, CRC; " +
					"for a schema ledger: schema, type, deleted, definition size and SHA-256, index entries",
				Flags: []cli.Flag{
					&cli.Int64Flag{Name: "ledger", Required: true, Usage: "ledger id"},
					&cli.Int64Flag{Name: "from", Value: 0, Usage: "first entry id"},
					&cli.Int64Flag{Name: "to", Value: -1, Usage: "last entry id (inclusive); -1 for the end"},
					&cli.IntFlag{Name: "limit", Value: inspect.DefaultEntriesLimit, Usage: "at most this many entries"},
				},
				Action: e.inspectEntries,
			},
			e.schemaUsageCommand(),
		},
	}
}

func firstEntryIndexKeyFlag() cli.Flag {
	return &cli.StringFlag{Name: "first-entry-index-key", Value: inspect.DefaultFirstEntryIndexKey,
		Usage: "LedgerInfo property holding firstEntryIndex (e.g. kafka.base.offset)"}
}

// withDataDir opens the data dir read-only for the length of fn.
func (e *env) withDataDir(c *cli.Context, fn func(dd *store.DataDir) error) error {
	dd, err := e.openReadOnly(c)
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
	return e.withDataDir(c, func(dd *store.DataDir) error {
		t, err := inspect.Topics(c.Context, dd, c.String("first-entry-index-key"))
		if err != nil {
			return err
		}
		return e.printTable(c, t)
	})
}

func (e *env) inspectLedgers(c *cli.Context) error {
	topic, err := topicArg(c.String("topic"))
	if err != nil {
		return err
	}
	return e.withDataDir(c, func(dd *store.DataDir) error {
		t, err := inspect.Ledgers(c.Context, dd, topic)
		if err != nil {
			return notFound(err)
		}
		return e.printTable(c, t)
	})
}

func (e *env) inspectSchemas(c *cli.Context) error {
	topic, err := optionalTopic(c)
	if err != nil {
		return err
	}
	return e.withDataDir(c, func(dd *store.DataDir) error {
		t, err := inspect.Schemas(c.Context, dd, topic)
		if err != nil {
			return notFound(err)
		}
		return e.printTable(c, t)
	})
}

func (e *env) inspectNode(c *cli.Context) error {
	if c.NArg() != 1 {
		return report.BadInputf("inspect node: want exactly one PATH, got %d arguments", c.NArg())
	}
	return e.withDataDir(c, func(dd *store.DataDir) error {
		path := c.Args().First()
		t, undecodable, err := inspect.Node(dd, path)
		if err != nil {
			return notFound(err)
		}
		doc := &report.Document{}
		doc.Add(t)
		if c.Bool("json") && !undecodable {
			// Machines get the decoded message itself, not only the flattened rows.
			if msg, err := nodeMessageJSON(dd, path); err == nil && msg != nil {
				doc.Extra = map[string]any{"message": msg}
			}
		}
		if err := e.print(c, doc); err != nil {
			return err
		}
		if undecodable {
			return report.ErrFindings // the table shows the error and the raw bytes
		}
		return nil
	})
}

func (e *env) inspectEntries(c *cli.Context) error {
	o := inspect.EntriesOptions{Ledger: c.Int64("ledger"), From: c.Int64("from"), To: c.Int64("to"), Limit: c.Int("limit")}
	if o.Ledger < 0 {
		return report.BadInputf("inspect entries: --ledger %d: ledger ids are not negative", o.Ledger)
	}
	if o.Limit < 1 {
		return report.BadInputf("inspect entries: --limit %d: want at least 1", o.Limit)
	}
	if o.From < 0 || (o.To >= 0 && o.To < o.From) {
		return report.BadInputf("inspect entries: --from %d --to %d is not a range", o.From, o.To)
	}
	return e.withDataDir(c, func(dd *store.DataDir) error {
		t, more, err := inspect.Entries(c.Context, dd, o)
		if err != nil {
			return notFound(err)
		}
		var notes []string
		if more {
			notes = append(notes, "stopped at --limit; use --from or a larger --limit for more")
		}
		return e.printTable(c, t, notes...)
	})
}

// nodeMessageJSON is the node's decoded protobuf message as JSON (protojson,
// original field names), or nil for nodes of no known kind.
func nodeMessageJSON(dd *store.DataDir, path string) (json.RawMessage, error) {
	n, err := dd.Metadata.Get(path)
	if err != nil {
		return nil, err
	}
	d, err := formats.DecodeNode(path, n.Value)
	if err != nil || d.Message == nil {
		return nil, err
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(d.Message)
	return json.RawMessage(b), err
}
