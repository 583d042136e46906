package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
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
				"fault is, goes to DIR/" + fixtures.ManifestFile + ".\n" +
				"Global --metadata zk://... or etcd://... also loads the metadata into that live store; with the\n" +
				"global --ledgers bk: before the command, the ledgers also go to that ZooKeeper cluster's bookies\n" +
				"(at the fixture's own ids; the cluster's ledger id generator is then moved past them).",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: flagOut, Required: true, Usage: "new data dir to create (must not exist or be empty)"},
				&cli.Uint64Flag{Name: fxSeed, Value: 1, Usage: "random seed"},
				&cli.IntFlag{Name: fxTopics, Usage: "number of topics (default: one per built-in template, 7)"},
				&cli.IntFlag{Name: fxPartitions, Usage: "partitions of each partitioned topic (default 3)"},
				// --ledgers stays an alias here: generate opens no store, so the global
				// --ledgers URL means nothing to it (give it before the command if at all).
				&cli.IntFlag{Name: fxLedgersPerTopic, Aliases: []string{"ledgers"}, Usage: "ledgers per managed ledger, the last one open (default 3)"},
				&cli.IntFlag{Name: fxEntries, Usage: "entries per closed ledger (default 20)"},
				&cli.IntFlag{Name: fxMaxBatch, Usage: "largest batch on batching topics (default 5)"},
				&cli.BoolFlag{Name: fxFirstEntryIndex, Usage: "store each ledger's first broker index as a LedgerInfo property"},
				&cli.BoolFlag{Name: fxRustProducers, Usage: "pulsar-rs producers on the external-schema-id topic: some key/value schema ids in the Rust client's layout (no value length)"},
				indexKeyFlag(),
				&cli.IntFlag{Name: fxLoseSchemaLedgers, Usage: "fault: delete node and entry of N schema version ledgers"},
				&cli.IntFlag{Name: fxLoseSchemaEntries, Usage: "fault: delete the entry (keep the node) of N more schema ledgers"},
				&cli.BoolFlag{Name: fxLoseTopicLedger, Usage: "fault: delete node and entries of one topic ledger"},
				&cli.BoolFlag{Name: fxLoseEntriesOnly, Usage: "fault: delete the entries (keep the node) of another topic ledger"},
				&cli.BoolFlag{Name: fxOrphanLedger, Usage: "fault: add a schema ledger and a topic ledger that nothing references"},
				&cli.BoolFlag{Name: fxCorruptCrc, Usage: "fault: flip one payload byte of an entry that has a checksum"},
				&cli.IntFlag{Name: fxDeleteSchemaHistory, Usage: "fault: the broker deleted N topics' schema histories (locator and version ledgers gone, messages kept)"},
				&cli.IntFlag{Name: fxResetSchemaHistory, Usage: "fault: N more topics' histories deleted, then a different schema registered as a new version 0, with new messages using it"},
				// Bookie dirs (fixtures/bookie.go).
				&cli.IntFlag{Name: fxBookies, Usage: "also write the entries as N bookie dirs under OUT/bookies (entry logs, journals; 5 gives one dir per ensemble member)"},
				&cli.IntFlag{Name: fxBookieLogs, Usage: "entry logs per bookie, the newest left unclosed (default 3)"},
				&cli.IntFlag{Name: fxBookieJournalOnly, Usage: "newest entries per bookie only in the journal, after lastMark (default 2, -1 none)"},
				&cli.BoolFlag{Name: fxBookieCutLog, Usage: "bookie fault: bookie-1's newest entry log ends inside an entry"},
				&cli.BoolFlag{Name: fxBookieUnclosedLog, Usage: "bookie fault: bookie-1's oldest entry log left unclosed (no ledgers map)"},
				&cli.BoolFlag{Name: fxBookieFlipByte, Usage: "bookie fault: flip a payload byte of one replica on bookie-1"},
				&cli.BoolFlag{Name: fxBookieMissing, Usage: "bookie fault: do not write bookie-N"},
			},
			Action: e.fixturesGenerate,
		}},
	}
}

// fixtures generate's flags.
const (
	fxSeed                = "seed"
	fxTopics              = "topics"
	fxPartitions          = "partitions"
	fxLedgersPerTopic     = "ledgers-per-topic"
	fxEntries             = "entries"
	fxMaxBatch            = "max-batch"
	fxFirstEntryIndex     = "first-entry-index"
	fxRustProducers       = "rust-producers"
	fxLoseSchemaLedgers   = "lose-schema-ledgers"
	fxLoseSchemaEntries   = "lose-schema-entries"
	fxLoseTopicLedger     = "lose-topic-ledger"
	fxLoseEntriesOnly     = "lose-entries-only"
	fxOrphanLedger        = "orphan-ledger"
	fxCorruptCrc          = "corrupt-crc"
	fxDeleteSchemaHistory = "delete-schema-history"
	fxResetSchemaHistory  = "reset-schema-history"
	fxBookies             = "bookies"
	fxBookieLogs          = "bookie-logs"
	fxBookieJournalOnly   = "bookie-journal-only"
	fxBookieCutLog        = "bookie-cut-log"
	fxBookieUnclosedLog   = "bookie-unclosed-log"
	fxBookieFlipByte      = "bookie-flip-byte"
	fxBookieMissing       = "bookie-missing"
)

// fixturesOptions are fixtures generate's flags.
type fixturesOptions struct {
	Out        string
	OutExisted bool // --out was an empty directory (left as one when generate fails)
	Cluster    fixtures.Options
	Bookies    fixtures.BookieOptions // Bookies 0: no bookie dirs
	OnBookies  *store.URL             // the global --ledgers bk:: the ledgers also go to its live bookies
}

func parseFixturesOptions(c *cli.Context) (fixturesOptions, error) {
	o := fixturesOptions{Out: c.String(flagOut),
		Cluster: fixtures.Options{
			Seed:                c.Uint64(fxSeed),
			Topics:              c.Int(fxTopics),
			Partitions:          c.Int(fxPartitions),
			LedgersPerTopic:     c.Int(fxLedgersPerTopic),
			EntriesPerLedger:    c.Int(fxEntries),
			MaxBatchSize:        c.Int(fxMaxBatch),
			WithFirstEntryIndex: c.Bool(fxFirstEntryIndex),
			IndexKey:            indexKeyOf(c),
			LoseSchemaLedgers:   c.Int(fxLoseSchemaLedgers),
			LoseSchemaEntries:   c.Int(fxLoseSchemaEntries),
			LoseTopicLedger:     c.Bool(fxLoseTopicLedger),
			LoseEntriesOnly:     c.Bool(fxLoseEntriesOnly),
			OrphanLedger:        c.Bool(fxOrphanLedger),
			CorruptCRC:          c.Bool(fxCorruptCrc),
			DeleteSchemaHistory: c.Int(fxDeleteSchemaHistory),
			ResetSchemaHistory:  c.Int(fxResetSchemaHistory),
			RustProducers:       c.Bool(fxRustProducers),
		},
		Bookies: fixtures.BookieOptions{
			Bookies:       c.Int(fxBookies),
			LogsPerBookie: c.Int(fxBookieLogs),
			JournalOnly:   c.Int(fxBookieJournalOnly),
			CutLog:        c.Bool(fxBookieCutLog),
			UnclosedLog:   c.Bool(fxBookieUnclosedLog),
			FlipByte:      c.Bool(fxBookieFlipByte),
			MissingBookie: c.Bool(fxBookieMissing),
		},
	}
	if err := checkEmptyDir(o.Out); err != nil {
		return o, err
	}
	var err error
	if o.OnBookies, err = fixtureBookies(c); err != nil {
		return o, err
	}
	if _, err := os.Stat(o.Out); err == nil {
		o.OutExisted = true
	}
	if err := fixtures.CheckOptions(o.Cluster); err != nil {
		return o, report.BadInput(err)
	}
	return o, nil
}

func (e *env) fixturesGenerate(c *cli.Context) error {
	o, err := parseFixturesOptions(c)
	if err != nil {
		return err
	}
	out := o.Out
	defer limitGeneratorMemory()()
	m, err := e.generateInPlace(c, out, o)
	if err != nil {
		return err
	}
	doc := fixturesDocument(out, m)
	if o.Bookies.Bookies > 0 {
		if err := writeFixtureBookies(c, out, o.Bookies, doc); err != nil {
			// All or nothing: a retry must find --out as it was (absent or empty).
			if rerr := os.RemoveAll(out); rerr == nil && o.OutExisted {
				_ = os.Mkdir(out, 0o755)
			}
			return err
		}
	}
	if c.IsSet(flagMetadata) {
		note, err := e.loadFixture(c, out, o.OnBookies)
		if err != nil {
			return err
		}
		doc.Note("%s", note)
	}
	return e.print(c, doc)
}

// generateInPlace writes the data dir into a temp dir beside out and renames it
// to out once whole, so a failed or interrupted generate leaves no half-made
// --out that the retry refuses as not empty (a kill -9 leaves only a hidden
// .NAME.partial-* beside it). The bookie dirs come after the rename: their
// manifest records the paths they were written at.
func (e *env) generateInPlace(c *cli.Context, out string, o fixturesOptions) (*fixtures.Manifest, error) {
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, report.CannotOpen(fmt.Errorf("--out %s: %w", out, err))
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(out))+".partial-")
	if err != nil {
		return nil, report.CannotOpen(fmt.Errorf("--out %s: %w", out, err))
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, report.CannotOpen(fmt.Errorf("--out %s: %w", out, err))
	}
	m, err := fixtures.GenerateStream(c.Context, tmp, o.Cluster, e.progress(c))
	if err != nil {
		return nil, report.CannotOpen(fmt.Errorf("fixtures generate --out %s: %w", out, err))
	}
	// os.Rename does not replace a directory, even an empty one: remove the empty
	// --out first (os.Remove removes nothing else).
	if o.OutExisted {
		if err := os.Remove(out); err != nil {
			return nil, report.CannotOpen(fmt.Errorf("fixtures generate --out %s: %w", out, err))
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		if o.OutExisted {
			_ = os.Mkdir(out, 0o755)
		}
		return nil, report.CannotOpen(fmt.Errorf("fixtures generate --out %s: move the finished data dir into place: %w", out, err))
	}
	return m, nil
}

// generatorMemoryLimit is the Go heap's soft limit while fixtures generate runs,
// unless GOMEMLIMIT says otherwise: a cap on the garbage the GC lets pile up over
// the live heap (GOGC). It was set when Badger's flushes and compactions made
// that garbage (40,000 topics: peak RSS 420 MB without, 323 MB with); since the
// data dir is written by badgerdir.Loader, whose memory is bounded, the peak of a
// 100,000-topic run is the same with it and without (212 and 209 MB;
// docs/benchmarks.md, "Measured decisions"), and it stays as a cap.
const generatorMemoryLimit = 384 << 20

// limitGeneratorMemory sets the limit and returns what puts the previous one back
// (the process may go on: tests run commands in one process).
func limitGeneratorMemory() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(generatorMemoryLimit)
	return func() { debug.SetMemoryLimit(prev) }
}

func writeFixtureBookies(c *cli.Context, out string, opts fixtures.BookieOptions, doc *report.Document) error {
	dir := filepath.Join(out, "bookies")
	bm, err := fixtures.WriteBookies(c.Context, out, dir, opts)
	if err != nil {
		return report.CannotOpen(err)
	}
	doc.Note("bookie dirs: %s/bookie-1..%d (%d replicas of %d entries, %d bookie faults); manifest %s",
		dir, opts.Bookies, bm.Replicas, bm.Entries, len(bm.Faults), filepath.Join(dir, fixtures.BookieManifestFile))
	return nil
}

// fixtureBookies reads the global --ledgers (fixtures generate's own --ledgers
// is --ledgers-per-topic): bk: puts the generated ledgers on the live bookies of
// the --metadata cluster; any other ledger store is another program's files,
// which ledgermedic never writes.
func fixtureBookies(c *cli.Context) (*store.URL, error) {
	s := globalString(c.Lineage()[1], flagLedgers)
	if s == "" {
		return nil, nil
	}
	u, err := store.ParseLedgersURL(s)
	if err != nil {
		return nil, report.BadInput(err)
	}
	if u.Scheme != store.SchemeBK || u.Meta != nil {
		return nil, report.BadInputf("fixtures generate: --ledgers %s: only bk: (the live bookies of the --metadata cluster) "+
			"is written; without --ledgers the entries stay in OUT/ledgers", u.String())
	}
	ms := globalString(c, flagMetadata)
	if m, err := store.ParseMetadataURL(ms); ms == "" || err != nil || m.Scheme != store.SchemeZK {
		return nil, report.BadInputf("fixtures generate --ledgers bk: needs --metadata zk://... (the live cluster whose bookies get the ledgers)")
	}
	return &u, nil
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
	t := m.Totals
	summary := []fixtureCount{
		{"topics", int64(t.Topics)}, {"managed ledgers", int64(t.ManagedLedgers)}, {"topic ledgers", int64(t.TopicLedgers)},
		{"entries", t.Entries}, {"messages", t.Messages}, {"schema keys", int64(t.SchemaKeys)},
		{"schema versions", int64(t.SchemaVersions)}, {"faults", int64(t.Faults)}, {"orphan ledgers", int64(t.Orphans)},
	}
	var faults []fixtureFault
	for _, f := range m.Faults {
		row := fixtureFault{Kind: f.Kind, Ledger: f.Ledger, FirstEntry: f.FirstEntry, LastEntry: f.LastEntry,
			Entries: entryRange(f.FirstEntry, f.LastEntry), Where: f.ManagedLedgerPath, NodeLost: f.NodeLost,
			ManagedLedgerPath: f.ManagedLedgerPath, LocatorPath: f.LocatorPath, SchemaVersion: f.Version, Tombstone: f.Deleted}
		if f.SchemaKey != "" {
			row.Where = fmt.Sprintf("%s version %d", f.LocatorPath, *f.Version)
			if f.Deleted {
				row.Where += " (tombstone)"
			}
		}
		faults = append(faults, row)
	}
	for _, o := range m.Orphans {
		row := fixtureFault{Kind: "orphan-ledger", Ledger: o.Ledger, FirstEntry: 0, LastEntry: o.Entries - 1,
			Entries: entryRange(0, o.Entries-1), Where: "managed ledger " + o.ManagedLedger, ManagedLedger: o.ManagedLedger}
		if o.Kind == fixtures.OrphanSchema {
			row.Where = fmt.Sprintf("schema %s version %d", o.SchemaKey, *o.Version)
			row.ManagedLedger, row.SchemaKey, row.SchemaVersion = "", o.SchemaKey, o.Version
		}
		faults = append(faults, row)
	}
	doc := &report.Document{}
	doc.Add(report.Rows("summary", "Generated "+dir, summary), report.Rows("faults", "Faults", faults))
	doc.Note("manifest: %s", fixtures.ManifestPath(dir))
	return doc
}

// fixtureCount is one total of a generated cluster.
type fixtureCount struct {
	What  string `json:"what" table:"WHAT"`
	Count int64  `json:"count" table:"COUNT"`
}

// fixtureFault is one injected fault (or orphan ledger) of a generated cluster.
type fixtureFault struct {
	Kind              string `json:"kind" table:"KIND"`
	Ledger            int64  `json:"ledger_id" table:"LEDGER"`
	Entries           string `json:"-" table:"ENTRIES"`
	FirstEntry        int64  `json:"first_entry_id"`
	LastEntry         int64  `json:"last_entry_id"`
	Where             string `json:"-" table:"WHERE"`
	NodeLost          bool   `json:"node_lost" table:"NODE LOST"`
	ManagedLedgerPath string `json:"managed_ledger_path,omitempty"`
	ManagedLedger     string `json:"managed_ledger,omitempty"`
	LocatorPath       string `json:"locator_path,omitempty"`
	SchemaKey         string `json:"schema_key,omitempty"`
	SchemaVersion     *int64 `json:"schema_version,omitempty"`
	Tombstone         bool   `json:"tombstone,omitempty"`
}

// entryRange is "first-last", or one id.
func entryRange(first, last int64) string {
	if first == last {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d-%d", first, last)
}
