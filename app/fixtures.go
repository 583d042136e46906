package app

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
)

// fixturesCommand generates realistic data dirs for tests, demos and drills.
func (e *env) fixturesCommand() *cli.Command {
	return &cli.Command{
		Name:  "fixtures",
		Usage: "generate realistic Pulsar data dirs for tests and drills",
		Subcommands: []*cli.Command{{
			Name:  "generate",
			Usage: "write a new data dir holding a realistic cluster (optionally with faults) and its manifest",
			Description: "The cluster has several tenants and namespaces, partitioned and plain topics, cursors,\n" +
				"AVRO, JSON, PROTOBUF, STRING and KEY_VALUE schema histories (with tombstones), messages\n" +
				"referencing them by registry version and by PIP-420 and Confluent ids, batches, markers,\n" +
				"broker entry indexes, checksums, every ManagedLedgerInfo codec and an offloaded ledger.\n" +
				"The same seed and options always give the same bytes. What was written, and where each\n" +
				"fault is, goes to DIR/" + fixtures.ManifestFile + ".",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "out", Required: true, Usage: "new data dir to create (must not exist or be empty)"},
				&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
				&cli.IntFlag{Name: "topics", Usage: "number of topics (default: one per built-in template, 7)"},
				&cli.IntFlag{Name: "partitions", Usage: "partitions of each partitioned topic (default 3)"},
				&cli.IntFlag{Name: "ledgers", Usage: "ledgers per managed ledger, the last one open (default 3)"},
				&cli.IntFlag{Name: "entries", Usage: "entries per closed ledger (default 20)"},
				&cli.IntFlag{Name: "max-batch", Usage: "largest batch on batching topics (default 5)"},
				&cli.BoolFlag{Name: "first-entry-index", Usage: "store each ledger's first broker index as a LedgerInfo property"},
				&cli.StringFlag{Name: "index-key", Usage: "LedgerInfo property key for --first-entry-index (default " + fixtures.DefaultIndexKey + ")"},
				&cli.IntFlag{Name: "lose-schema-ledgers", Usage: "fault: delete node and entry of N schema version ledgers"},
				&cli.IntFlag{Name: "lose-schema-entries", Usage: "fault: delete the entry (keep the node) of N more schema ledgers"},
				&cli.BoolFlag{Name: "lose-topic-ledger", Usage: "fault: delete node and entries of one topic ledger"},
				&cli.BoolFlag{Name: "lose-entries-only", Usage: "fault: delete the entries (keep the node) of another topic ledger"},
				&cli.BoolFlag{Name: "orphan-ledger", Usage: "fault: add a schema ledger and a topic ledger that nothing references"},
				&cli.BoolFlag{Name: "corrupt-crc", Usage: "fault: flip one payload byte of an entry that has a checksum"},
			},
			Action: e.fixturesGenerate,
		}},
	}
}

func (e *env) fixturesGenerate(c *cli.Context) error {
	out := c.String("out")
	if err := checkEmptyDir(out); err != nil {
		return err
	}
	opts := fixtures.Options{
		Seed:                c.Uint64("seed"),
		Topics:              c.Int("topics"),
		Partitions:          c.Int("partitions"),
		LedgersPerTopic:     c.Int("ledgers"),
		EntriesPerLedger:    c.Int("entries"),
		MaxBatchSize:        c.Int("max-batch"),
		WithFirstEntryIndex: c.Bool("first-entry-index"),
		IndexKey:            c.String("index-key"),
		LoseSchemaLedgers:   c.Int("lose-schema-ledgers"),
		LoseSchemaEntries:   c.Int("lose-schema-entries"),
		LoseTopicLedger:     c.Bool("lose-topic-ledger"),
		LoseEntriesOnly:     c.Bool("lose-entries-only"),
		OrphanLedger:        c.Bool("orphan-ledger"),
		CorruptCRC:          c.Bool("corrupt-crc"),
	}
	if err := fixtures.CheckOptions(opts); err != nil {
		return report.BadInput(err)
	}
	m, err := fixtures.Generate(c.Context, out, opts, e.progress(c))
	if err != nil {
		return report.CannotOpen(err)
	}
	return e.print(c, fixturesDocument(out, m))
}

// checkEmptyDir refuses an --out that exists and holds anything: generating into
// a real data dir would mix fixture data into it.
func checkEmptyDir(dir string) error {
	if dir == "" {
		return report.BadInputf("--out must not be empty")
	}
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return report.CannotOpen(fmt.Errorf("--out %s: %w", dir, err))
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err == nil {
		return report.BadInputf("--out %s is not empty; fixtures are only written to a new or empty directory", dir)
	} else if !errors.Is(err, io.EOF) {
		return report.BadInputf("--out %s: not a usable directory: %v", dir, err)
	}
	return nil
}

func fixturesDocument(dir string, m *fixtures.Manifest) *report.Document {
	summary := report.NewTable("summary", "Generated "+dir, "WHAT", "what", "COUNT", "count")
	t := m.Totals
	summary.Add("topics", t.Topics)
	summary.Add("managed ledgers", t.ManagedLedgers)
	summary.Add("topic ledgers", t.TopicLedgers)
	summary.Add("entries", t.Entries)
	summary.Add("messages", t.Messages)
	summary.Add("schema keys", t.SchemaKeys)
	summary.Add("schema versions", t.SchemaVersions)
	summary.Add("faults", t.Faults)
	summary.Add("orphan ledgers", t.Orphans)

	faults := report.NewTable("faults", "Faults", "KIND", "kind", "LEDGER", "ledger", "ENTRIES", "entries",
		"WHERE", "where", "NODE LOST", "node_lost")
	for _, f := range m.Faults {
		where := f.ManagedLedgerPath
		if f.SchemaKey != "" {
			where = fmt.Sprintf("%s version %d", f.LocatorPath, *f.Version)
			if f.Deleted {
				where += " (tombstone)"
			}
		}
		entries := fmt.Sprintf("%d-%d", f.FirstEntry, f.LastEntry)
		if f.FirstEntry == f.LastEntry {
			entries = fmt.Sprint(f.FirstEntry)
		}
		faults.Add(f.Kind, f.Ledger, entries, where, f.NodeLost)
	}
	for _, o := range m.Orphans {
		where := "managed ledger " + o.ManagedLedger
		if o.Kind == fixtures.OrphanSchema {
			where = fmt.Sprintf("schema %s version %d", o.SchemaKey, *o.Version)
		}
		faults.Add("orphan-ledger", o.Ledger, fmt.Sprintf("0-%d", o.Entries-1), where, false)
	}
	doc := &report.Document{}
	doc.Add(summary, faults)
	doc.Note("manifest: %s", fixtures.ManifestPath(dir))
	return doc
}
