package inspect

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/internal/spill"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/schemaid"
	"github.com/ledgermedic/ledgermedic/store"
)

// Finding kinds of SchemaUsage. Unreadable entries reuse Check's kinds
// (KindEntryUndecodable, KindEntryCRCMismatch, KindValueTruncated).
const (
	// Stored messages use a registry schema version whose ledger or entry is lost:
	// the versions a repair must restore first.
	KindUsedSchemaVersionLost = "used-schema-version-lost"
	// Stored messages use a registry schema version the topic's locator does not
	// list (the history was deleted, or there is no locator at all).
	KindUsedSchemaVersionMissing = "used-schema-version-missing"
	// Stored messages carry a schema reference this tool cannot check: an external
	// registry id (PIP-420, Confluent), a pre-2.4 version, or unrecognised bytes.
	KindSchemaRefUnchecked = "schema-ref-unchecked"
	// More unreadable entries than the report lists.
	KindBadEntriesNotListed = "bad-entries-not-listed"
)

// Status of one schema reference after the join with the locator.
const (
	UseOK        = "ok"              // the locator lists the version and its entry is stored
	UseLost      = "lost"            // listed, but its ledger or entry is gone
	UseMissing   = "not-in-locator"  // not listed (history deleted), or no locator
	UseUnchecked = "unchecked"       // external id, legacy version or unknown bytes
	UseNoSchema  = "no-schema"       // the messages carry no schema reference
	UseNoLocator = "locator-damaged" // the locator cannot be read
)

// DefaultMaxListedBadEntries bounds the unreadable entries listed one by one.
const DefaultMaxListedBadEntries = 20

// UsageOptions configures SchemaUsage.
type UsageOptions struct {
	// Topic limits the scan to one topic; a partitioned topic's base name takes all
	// its partitions. nil scans every topic.
	Topic *formats.TopicName
	// Workers decode entries in parallel; 0 means GOMAXPROCS.
	Workers int
	// MaxListedBadEntries bounds the unreadable entries listed as findings (the
	// rest are counted in one more finding); 0 means DefaultMaxListedBadEntries.
	MaxListedBadEntries int
	// SpillDir is where the count keeps what it learns per topic and ledger
	// (internal/spill); "" is $TMPDIR.
	SpillDir string
}

// Position is one entry, ledger:entry.
type Position = cluster.Position

// SchemaUse counts the stored messages of one topic that carry one schema
// reference: a schema_version or a schema_id value (a message carrying both
// counts under each). Messages without either are one use with Field
// FieldUnknown and an empty ID.
type SchemaUse struct {
	Field    schemaid.Field
	ID       schemaid.ID
	Messages int64 // num_messages_in_batch summed
	Entries  int64
	// First and Last are the entries with the lowest and highest publish time
	// (ties go to the lower position); the publish times are in milliseconds.
	First, Last                   Position
	FirstPublishMs, LastPublishMs uint64
	Status                        string // Use* constants
	Detail                        string // why, for lost and missing versions

	raw                 []byte // the reference's bytes, as stored
	firstPart, lastPart int    // the partitions of First and Last (-1: not partitioned)
}

// TopicUsage is the schema usage of one base topic, partitions together.
type TopicUsage struct {
	Topic          string // base topic, persistent://tenant/ns/name
	SchemaKey      string // tenant/ns/<encoded base name>, as in the locator path
	ManagedLedgers int    // the topic's managed ledgers scanned (partitions)
	Entries        int64  // entries read, unreadable ones included
	Messages       int64  // messages in readable entries
	BadEntries     int64  // entries that did not parse or failed their CRC
	Uses           []SchemaUse
}

// partitionPtr is a use's first or last partition as the view shows it: nil
// for a topic that is not partitioned.
func partitionPtr(p int) *int {
	if p < 0 {
		return nil
	}
	return &p
}

// usagePlace is a first or last use in the table: the entry, and its partition
// when the topic is partitioned (one row counts every partition).
func usagePlace(pos Position, partition *int) string {
	if partition == nil {
		return pos.String()
	}
	return fmt.Sprintf("%s (partition %d)", pos, *partition)
}

// UsageReport is what SchemaUsage found, all of it in memory.
type UsageReport struct {
	Topics     []TopicUsage // by topic name
	Findings   []report.Finding
	Entries    int64
	BadEntries int64
}

// UsageRun is a finished schema-usage count whose per-topic results and
// findings stay on disk (a million topics are a million rows) until Close.
type UsageRun struct {
	Entries    int64
	BadEntries int64
	topics     *spill.File // TopicUsage by base topic
	needs      *spill.File // messages by schema key and registry version
	out        *findingSink
	dd         *datadir.DataDir
	own        *spill.Dir // nil when the run is part of a check's
}

// Topics calls fn with every topic's usage, by topic name.
func (r *UsageRun) Topics(ctx context.Context, fn func(*TopicUsage) error) error {
	var tu TopicUsage
	return r.topics.Scan(ctx, nil, func(_, v []byte) error {
		if err := decodeTopicUsage(v, &tu); err != nil {
			return err
		}
		return fn(&tu)
	})
}

// Findings calls fn with every finding: by severity, kind, then location. The
// run of a check has none of its own (they are the check's).
func (r *UsageRun) Findings(ctx context.Context, fn func(report.Finding) error) error {
	if r.out == nil {
		return nil
	}
	return r.out.each(ctx, r.dd.Damage, fn)
}

// Actionable reports whether any finding is an error or a warning.
func (r *UsageRun) Actionable() bool { return r.out != nil && r.out.counted().Actionable() }

// Counts is how many findings there are of each kind and severity.
func (r *UsageRun) Counts() report.Counts {
	if r.out == nil {
		return report.Counts{}
	}
	return r.out.counted()
}

// Close removes what the run keeps on disk.
func (r *UsageRun) Close() error {
	if r == nil || r.own == nil {
		return nil
	}
	return r.own.Close()
}

// TopicUses calls fn with every use of registry version version by the stored
// messages of topic (a base topic, persistent://tenant/ns/name).
func (r *UsageRun) TopicUses(topic string, version int64, fn func(SchemaUse)) error {
	v, ok, err := r.topics.Get([]byte(topic))
	if err != nil || !ok {
		return err
	}
	var tu TopicUsage
	if err := decodeTopicUsage(v, &tu); err != nil {
		return err
	}
	for _, u := range tu.Uses {
		if isRegistryVersion(u, version) {
			fn(u)
		}
	}
	return nil
}

// MessagesNeeding returns how many stored messages of the topics with this
// schema key carry registry version version: what a repair of that version
// brings back to life.
func (r *UsageRun) MessagesNeeding(schemaKey string, version int64) (int64, error) {
	v, ok, err := r.needs.Get(needsKey(schemaKey, version))
	if err != nil || !ok {
		return 0, err
	}
	d := dec{b: v}
	n := int64(d.uint())
	return n, d.done("messages needing a version")
}

func isRegistryVersion(u SchemaUse, version int64) bool {
	return u.Field == schemaid.FieldSchemaVersion && u.ID.Kind == schemaid.KindPulsarVersion && u.ID.Version == version
}

func needsKey(schemaKey string, version int64) []byte {
	return idKey(append([]byte(schemaKey), 0), version)
}

// TopicUses is UsageRun.TopicUses of a report in memory.
func (r *UsageReport) TopicUses(topic string, version int64, fn func(SchemaUse)) {
	for _, tu := range r.Topics {
		if tu.Topic != topic {
			continue
		}
		for _, u := range tu.Uses {
			if isRegistryVersion(u, version) {
				fn(u)
			}
		}
	}
}

// MessagesNeeding is UsageRun.MessagesNeeding of a report in memory.
func (r *UsageReport) MessagesNeeding(schemaKey string, version int64) int64 {
	var n int64
	for _, tu := range r.Topics {
		if tu.SchemaKey != schemaKey {
			continue
		}
		for _, u := range tu.Uses {
			if isRegistryVersion(u, version) {
				n += u.Messages
			}
		}
	}
	return n
}

// UsageRow is one schema reference of one topic in the schema-usage view.
type UsageRow struct {
	Topic    string      `json:"topic" table:"TOPIC"`
	Field    string      `json:"field,omitempty" table:"FIELD"` // schema_version or schema_id; absent: no schema
	ID       schemaid.ID `json:"schema_id"`                     // the id, decoded
	Ref      string      `json:"schema_ref" table:"SCHEMA ID"`  // its text form (pulsar:v3, confluent:7, ...)
	Messages int64       `json:"messages" table:"MESSAGES"`
	Entries  int64       `json:"entries" table:"ENTRIES"`
	// First and Last are the entries with the lowest and highest publish time
	// across the topic's partitions; FirstPartition and LastPartition say which
	// partition each is in (partitioned topics only).
	First          Position    `json:"first"`
	FirstPartition *int        `json:"first_partition,omitempty"`
	FirstAt        string      `json:"-" table:"FIRST"`
	Last           Position    `json:"last"`
	LastPartition  *int        `json:"last_partition,omitempty"`
	LastAt         string      `json:"-" table:"LAST"`
	FirstPublish   report.Time `json:"first_publish_time,omitzero" table:"FIRST PUBLISH"`
	FirstPublishMs *uint64     `json:"first_publish_time_ms,omitempty"`
	LastPublish    report.Time `json:"last_publish_time,omitzero" table:"LAST PUBLISH"`
	LastPublishMs  *uint64     `json:"last_publish_time_ms,omitempty"`
	Status         string      `json:"status" table:"STATUS"`
	Detail         string      `json:"detail,omitempty"`
}

// usageRows are one topic's rows of the schema-usage view.
func usageRows(tu *TopicUsage) []UsageRow {
	rows := make([]UsageRow, 0, len(tu.Uses))
	for _, u := range tu.Uses {
		row := UsageRow{Topic: tu.Topic, ID: u.ID, Ref: u.ID.String(), Messages: u.Messages, Entries: u.Entries,
			First: u.First, FirstPartition: partitionPtr(u.firstPart),
			Last: u.Last, LastPartition: partitionPtr(u.lastPart),
			FirstPublish: report.Millis(int64(u.FirstPublishMs)), LastPublish: report.Millis(int64(u.LastPublishMs)),
			Status: u.Status, Detail: u.Detail}
		row.FirstAt, row.LastAt = usagePlace(row.First, row.FirstPartition), usagePlace(row.Last, row.LastPartition)
		if u.Field != schemaid.FieldUnknown {
			row.Field = u.Field.String()
		}
		if u.FirstPublishMs != 0 {
			row.FirstPublishMs = report.Ptr(u.FirstPublishMs)
		}
		if u.LastPublishMs != 0 {
			row.LastPublishMs = report.Ptr(u.LastPublishMs)
		}
		rows = append(rows, row)
	}
	return rows
}

// Table is the per-topic, per-reference usage view.
func (r *UsageReport) Table() *report.Table {
	var rows []UsageRow
	for i := range r.Topics {
		rows = append(rows, usageRows(&r.Topics[i])...)
	}
	return report.Rows("schema_usage", "Schema usage", rows)
}

// UsageTopicRow is one topic's totals in the schema-usage view.
type UsageTopicRow struct {
	Topic          string `json:"topic" table:"TOPIC"`
	ManagedLedgers int    `json:"managed_ledgers" table:"MANAGED LEDGERS"`
	Entries        int64  `json:"entries" table:"ENTRIES"`
	Messages       int64  `json:"messages" table:"MESSAGES"`
	SchemaRefs     int    `json:"schema_refs" table:"SCHEMA REFS"`
	BadEntries     int64  `json:"bad_entries" table:"BAD ENTRIES"`
}

func topicRow(tu *TopicUsage) UsageTopicRow {
	return UsageTopicRow{tu.Topic, tu.ManagedLedgers, tu.Entries, tu.Messages, len(tu.Uses), tu.BadEntries}
}

// TopicsTable is one row per topic, totals, read from disk as it prints.
func (r *UsageRun) TopicsTable(ctx context.Context) *report.Table {
	return report.Stream("topics", "Topics", func(yield func(UsageTopicRow) error) error {
		return r.Topics(ctx, func(tu *TopicUsage) error { return yield(topicRow(tu)) })
	})
}

// Table is the per-topic, per-reference usage view, read from disk as it prints.
func (r *UsageRun) Table(ctx context.Context) *report.Table {
	return report.Stream("schema_usage", "Schema usage", func(yield func(UsageRow) error) error {
		return r.Topics(ctx, func(tu *TopicUsage) error {
			for _, row := range usageRows(tu) {
				if err := yield(row); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// TopicsTable is one row per topic: totals.
func (r *UsageReport) TopicsTable() *report.Table {
	rows := make([]UsageTopicRow, len(r.Topics))
	for i := range r.Topics {
		rows[i] = topicRow(&r.Topics[i])
	}
	return report.Rows("topics", "Topics", rows)
}

// SchemaUsage reads every stored entry of the topics' ledgers once and counts,
// per topic and schema reference, the messages and entries that carry it; then
// it joins the registry versions with the topic's schema locator. It holds the
// whole report: for tests and small clusters; RunSchemaUsage keeps it on disk.
func SchemaUsage(ctx context.Context, dd *datadir.DataDir, opts UsageOptions, progress report.Progress) (*UsageReport, error) {
	run, err := RunSchemaUsage(ctx, dd, opts, progress)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	return run.Report(ctx)
}

// Report reads the whole run into memory.
func (run *UsageRun) Report(ctx context.Context) (*UsageReport, error) {
	r := &UsageReport{Entries: run.Entries, BadEntries: run.BadEntries}
	err := run.Topics(ctx, func(tu *TopicUsage) error {
		c := *tu
		c.Uses = slices.Clone(tu.Uses)
		r.Topics = append(r.Topics, c)
		return nil
	})
	if err == nil {
		err = run.Findings(ctx, func(f report.Finding) error { r.Findings = append(r.Findings, f); return nil })
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// RunSchemaUsage is SchemaUsage in memory that does not grow with the
// cluster. Without a topic it is one pass over the whole ledger store
// (entryPass), cut into ranges that Workers read and decode in parallel; with
// one, the topic's ledgers are read one by one the same way. Each worker
// counts the ledger it reads and writes the counts down per topic
// (usagescan.go); finishing adds them up topic by topic.
func RunSchemaUsage(ctx context.Context, dd *datadir.DataDir, opts UsageOptions, progress report.Progress) (*UsageRun, error) {
	if progress == nil {
		progress = report.NoProgress{}
	}
	maxBad := opts.MaxListedBadEntries
	if maxBad <= 0 {
		maxBad = DefaultMaxListedBadEntries
	}
	d, err := spill.Open(opts.SpillDir)
	if err != nil {
		return nil, fmt.Errorf("schema usage: %w", err)
	}
	run, err := runSchemaUsage(ctx, dd, d, opts, maxBad, progress)
	if err != nil {
		d.Close()
		return nil, err
	}
	return run, nil
}

func runSchemaUsage(ctx context.Context, dd *datadir.DataDir, d *spill.Dir, opts UsageOptions, maxBad int, progress report.Progress) (*UsageRun, error) {
	u := newUsageScan(d, maxBad)
	out := newFindingSink(d)
	add := func(f report.Finding) { out.add(f, stepUsage, 0, f.Location) }
	ranges, err := usageWalk(ctx, dd.Metadata, opts.Topic, u, d, add)
	if err != nil {
		return nil, err
	}
	p := &entryPass{dd: dd, workers: scanWorkers(opts.Workers), prog: progress, usage: u}
	if opts.Topic == nil {
		p.feed = wholeStoreRanges(dd, p.workers)
		if n, ok := dd.EstimateEntries(); ok {
			report.StartEstimate(progress, "schema usage", n)
		} else {
			progress.Start("schema usage", 0)
		}
	} else {
		p.feed = ranges
		progress.Start("schema usage", 0)
	}
	err = p.run(ctx)
	progress.Done()
	if err != nil {
		return nil, fmt.Errorf("schema usage: %w", err)
	}
	run, err := u.finish(ctx, dd, d, add)
	if err != nil {
		return nil, err
	}
	for _, f := range StoreDamageFindings(dd) {
		add(f)
	}
	run.out, run.own = out, d
	return run, out.err()
}

// usageWalk reads the managed ledgers (of one topic, or all): each one's
// topic record goes to the usage sort, and which topics count each ledger to
// u.ledgers. Managed-ledger nodes that cannot be read are findings. With a
// topic, it returns the ranges of its ledgers.
func usageWalk(ctx context.Context, ms store.MetadataStore, only *formats.TopicName, u *usageScan, d *spill.Dir, add func(report.Finding)) (*rangeList, error) {
	byID := d.NewSorter("usage-ledgers", usageBudget)
	defer byID.Close()
	var (
		seq uint64
		ids []int64 // of the one topic
	)
	visit := func(n store.Node) error {
		t, ok := formats.ParseManagedLedgerPath(n.Path)
		if !ok {
			return nil
		}
		info, _, err := formats.DecodeManagedLedgerInfo(n.Value)
		if err != nil {
			f := newFinding(KindNodeUndecodable, "node "+n.Path,
				"its ledgers were not scanned; inspect it with: ledgermedic inspect node "+n.Path,
				"managed-ledger info does not decode: %v", err)
			f.Path = n.Path
			add(f)
			return nil
		}
		if err := u.addTopic(t); err != nil {
			return err
		}
		ref := enc(nil).str(t.Base().String()).int(int64(t.PartitionIndex()))
		for _, li := range info.GetLedgerInfo() {
			seq++
			if err := byID.Add(seqKey(idKey(nil, li.GetLedgerId()), seq), ref); err != nil {
				return fmt.Errorf("schema usage: %w", err)
			}
			if only != nil {
				ids = append(ids, li.GetLedgerId())
			}
		}
		return nil
	}
	bad := func(te *store.TruncatedError) error {
		if _, ok := formats.ParseManagedLedgerPath(te.Path); ok {
			f := newFinding(KindValueTruncated, "node "+te.Path, "its ledgers were not scanned",
				"managed-ledger info is unreadable: %v", te)
			f.Path = te.Path
			add(f)
		}
		return nil
	}
	if only != nil {
		mls, err := cluster.TopicManagedLedgers(ctx, ms, *only)
		if err != nil {
			return nil, fmt.Errorf("schema usage: %w", err)
		}
		for _, ml := range mls {
			if ml.Damaged != nil {
				err = bad(ml.Damaged)
			} else {
				err = visit(ml.Node)
			}
			if err != nil {
				return nil, err
			}
		}
	} else if err := walkNodes(ctx, ms, formats.ManagedLedgersRoot+"/", visit, bad); err != nil {
		return nil, fmt.Errorf("schema usage: list managed ledgers: %w", err)
	}
	if err := u.foldLedgers(ctx, d, byID); err != nil {
		return nil, err
	}
	slices.Sort(ids)
	var ranges rangeList
	for _, id := range slices.Compact(ids) {
		ranges = append(ranges, store.OneLedger(id))
	}
	return &ranges, nil
}

// foldLedgers writes u.ledgers: for each ledger id, the topics that count it.
func (u *usageScan) foldLedgers(ctx context.Context, d *spill.Dir, byID *spill.Sorter) error {
	f, err := d.NewFile("usage-ledgers")
	if err != nil {
		return fmt.Errorf("schema usage: %w", err)
	}
	var (
		refs []usageRef
		cur  int64
		have bool
	)
	flush := func() error {
		if !have {
			return nil
		}
		refs = sortedRefs(refs)
		b := enc(nil).uint(uint64(len(refs)))
		for _, r := range refs {
			b = b.str(r.base).int(int64(r.partition))
		}
		return f.Append(idKey(nil, cur), b)
	}
	err = byID.Sorted(ctx, func(k, v []byte) error {
		id := idOfKey(k)
		if have && id != cur {
			if err := flush(); err != nil {
				return err
			}
			refs = refs[:0]
		}
		cur, have = id, true
		d := dec{b: v}
		refs = append(refs, usageRef{base: d.str(), partition: int(d.int())})
		return d.done("usage ledger")
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = f.Finish()
	}
	if err != nil {
		return fmt.Errorf("schema usage: %w", err)
	}
	u.ledgers = f
	return nil
}

// usageLocatorWindow topics' locators are read ahead at once by finish.
const usageLocatorWindow = 100

// finish adds up the workers' counts topic by topic, joins each topic's with
// its locator, and gives the findings to add; the topics' usage goes to the
// run it returns.
func (u *usageScan) finish(ctx context.Context, dd *datadir.DataDir, d *spill.Dir, add func(report.Finding)) (*UsageRun, error) {
	run := &UsageRun{dd: dd}
	topics, err := d.NewFile("topic-usage")
	if err != nil {
		return nil, fmt.Errorf("schema usage: %w", err)
	}
	needs := d.NewSorter("version-needs", usageBudget)
	defer needs.Close()
	// The topics' locators are read ahead a window at a time: a Get per topic
	// (and another per version checked for a collision) cost a round trip each
	// on a live store, and all of them at once would hold every locator.
	var window []TopicUsage
	flush := func() error {
		if err := u.joinWindow(ctx, dd, window, add); err != nil {
			return err
		}
		for i := range window {
			tu := &window[i]
			run.Entries += tu.Entries
			run.BadEntries += tu.BadEntries
			if err := topics.Append([]byte(tu.Topic), encodeTopicUsage(nil, tu)); err != nil {
				return err
			}
			for _, us := range tu.Uses {
				if us.Field == schemaid.FieldSchemaVersion && us.ID.Kind == schemaid.KindPulsarVersion {
					if err := needs.Add(needsKey(tu.SchemaKey, us.ID.Version), enc(nil).uint(uint64(us.Messages))); err != nil {
						return err
					}
				}
			}
		}
		window = window[:0]
		return nil
	}
	err = eachTopicUsage(ctx, u.out, func(tu *TopicUsage) error {
		c := *tu
		c.Uses = slices.Clone(tu.Uses)
		window = append(window, c)
		if len(window) == usageLocatorWindow {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = topics.Finish()
	}
	if err == nil {
		run.needs, err = sumNeeds(ctx, d, needs)
	}
	u.out.Close()
	if err != nil {
		return nil, fmt.Errorf("schema usage: %w", err)
	}
	run.topics = topics
	u.badFindings(run.BadEntries, add)
	return run, nil
}

// joinWindow joins a window of topics with their locators.
func (u *usageScan) joinWindow(ctx context.Context, dd *datadir.DataDir, window []TopicUsage, add func(report.Finding)) error {
	paths := make([]string, 0, len(window))
	names := make([]formats.TopicName, len(window))
	for i := range window {
		t, err := window[i].topicName()
		if err != nil {
			return err
		}
		names[i] = t
		paths = append(paths, t.SchemaLocatorPath())
	}
	locators := store.ReadAhead(dd.Metadata, paths)
	var vs versionSource = storeVersions{dd}
	if u.versions != nil {
		r, err := u.versions.NewReader()
		if err != nil {
			return err
		}
		vs = &versionFile{r: r, store: storeVersions{dd}}
	}
	var collisions []report.Finding
	for i := range window {
		fs, err := joinLocator(vs, locators, &window[i], names[i])
		if err != nil {
			return err
		}
		for _, f := range fs {
			add(f)
		}
		// Versions registered after messages that use them (inspect/collision.go).
		cf, err := topicCollisions(ctx, dd, vs, locators, &window[i])
		if err != nil {
			return err
		}
		collisions = append(collisions, cf...)
	}
	for _, f := range collisions {
		add(f)
	}
	return nil
}

// sumNeeds adds up the messages of each schema key and version.
func sumNeeds(ctx context.Context, d *spill.Dir, needs *spill.Sorter) (*spill.File, error) {
	f, err := d.NewFile("version-needs")
	if err != nil {
		return nil, err
	}
	var (
		key  []byte
		sum  uint64
		have bool
	)
	flush := func() error {
		if !have {
			return nil
		}
		return f.Append(key, enc(nil).uint(sum))
	}
	err = needs.Sorted(ctx, func(k, v []byte) error {
		if have && !bytes.Equal(k, key) {
			if err := flush(); err != nil {
				return err
			}
			sum = 0
		}
		key, have = append(key[:0], k...), true
		d := dec{b: v}
		sum += d.uint()
		return d.done("messages needing a version")
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = f.Finish()
	}
	return f, err
}

// badFindings lists the unreadable entries with the lowest positions, and
// says how many more there are.
func (u *usageScan) badFindings(badTotal int64, add func(report.Finding)) {
	var bad []badEntry
	for _, st := range u.states {
		bad = append(bad, st.bad...)
	}
	bad = lowestBad(bad, u.maxBad)
	for _, e := range bad {
		f := newFinding(e.kind, entryLoc(e.pos.LedgerID, e.pos.EntryID),
			"inspect it with: "+entriesHint(e.pos.LedgerID, e.pos.EntryID), "%s: %s", e.topic, e.detail)
		f.Topic, f.LedgerID, f.EntryID = e.topic, report.Int64(e.pos.LedgerID), report.Int64(e.pos.EntryID)
		add(f)
	}
	if more := badTotal - int64(len(bad)); more > 0 {
		add(newFinding(KindBadEntriesNotListed, "ledger store",
			"list them with: ledgermedic check", "%d more unreadable entries are not listed (%d in all; the %d lowest positions are)",
			more, badTotal, len(bad)))
	}
}

// usageFindings finishes the schema-usage count of Check's pass and adds the
// findings it gives that Check's own scan does not make (it already reports
// unreadable entries).
func (c *checker) usageFindings(ctx context.Context) error {
	c.step = stepUsage
	run, err := c.usage.finish(ctx, c.dd, c.spill, func(f report.Finding) {
		if checkAddsUsage(f.Kind) {
			c.addAt(f, 0, f.Location)
		}
	})
	if err != nil {
		return err
	}
	if c.opts.OnUsage != nil {
		c.opts.OnUsage(run)
	}
	return nil
}

// checkAddsUsage says which kinds of schema-usage findings Check adds to its
// own (it reports unreadable entries itself).
func checkAddsUsage(kind string) bool {
	switch kind {
	case KindUsedSchemaVersionLost, KindUsedSchemaVersionMissing, KindSchemaRefUnchecked, KindSchemaVersionCollision:
		return true
	}
	return false
}

// checkUsageFindings are the findings of a usage report that Check adds.
func checkUsageFindings(r *UsageReport) []report.Finding {
	var out []report.Finding
	for _, f := range r.Findings {
		if checkAddsUsage(f.Kind) {
			out = append(out, f)
		}
	}
	return out
}

// encodeTopicUsage and decodeTopicUsage keep a finished topic's usage on disk.
func encodeTopicUsage(b enc, tu *TopicUsage) []byte {
	b = b.str(tu.Topic).str(tu.SchemaKey).uint(uint64(tu.ManagedLedgers)).uint(uint64(tu.Entries)).
		uint(uint64(tu.Messages)).uint(uint64(tu.BadEntries)).uint(uint64(len(tu.Uses)))
	for _, u := range tu.Uses {
		b = b.uint(uint64(u.Field)).bytes(u.raw).uint(uint64(u.Messages)).uint(uint64(u.Entries)).
			int(u.First.LedgerID).int(u.First.EntryID).int(u.Last.LedgerID).int(u.Last.EntryID).
			uint(u.FirstPublishMs).uint(u.LastPublishMs).str(u.Status).str(u.Detail).
			int(int64(u.firstPart)).int(int64(u.lastPart))
	}
	return b
}

func decodeTopicUsage(v []byte, tu *TopicUsage) error {
	d := dec{b: v}
	*tu = TopicUsage{Uses: tu.Uses[:0]}
	tu.Topic, tu.SchemaKey = d.str(), d.str()
	tu.ManagedLedgers = int(d.uint())
	tu.Entries, tu.Messages, tu.BadEntries = int64(d.uint()), int64(d.uint()), int64(d.uint())
	for n := d.uint(); n > 0 && d.err == nil; n-- {
		field := schemaid.Field(d.uint())
		raw := d.bytes()
		u := newSchemaUse(string(append([]byte{byte(field)}, raw...)), &useCounter{})
		u.Messages, u.Entries = int64(d.uint()), int64(d.uint())
		u.First = Position{LedgerID: d.int(), EntryID: d.int()}
		u.Last = Position{LedgerID: d.int(), EntryID: d.int()}
		u.FirstPublishMs, u.LastPublishMs = d.uint(), d.uint()
		u.Status, u.Detail = d.str(), d.str()
		u.firstPart, u.lastPart = int(d.int()), int(d.int())
		tu.Uses = append(tu.Uses, u)
	}
	return d.done("topic usage")
}

func newSchemaUse(key string, c *useCounter) SchemaUse {
	field := schemaid.Field(key[0])
	u := SchemaUse{Field: field, Messages: c.messages, Entries: c.entries,
		First: c.first, Last: c.last, FirstPublishMs: c.firstMs, LastPublishMs: c.lastMs,
		raw: []byte(key[1:]), firstPart: c.firstPart, lastPart: c.lastPart}
	if field == schemaid.FieldUnknown {
		u.ID, u.Status = schemaid.ID{Kind: schemaid.KindEmpty}, UseNoSchema
		return u
	}
	// Decode errors leave an unknown ID holding the bytes: reported, not fatal.
	u.ID, _ = schemaid.Decode(field, []byte(key[1:]))
	return u
}

// sortUses orders by field, then registry versions numerically, then the id text.
func sortUses(us []SchemaUse) {
	slices.SortFunc(us, func(a, b SchemaUse) int {
		if c := cmp.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		av, bv := a.ID.Kind == schemaid.KindPulsarVersion, b.ID.Kind == schemaid.KindPulsarVersion
		if av && bv {
			return cmp.Compare(a.ID.Version, b.ID.Version)
		}
		if av != bv {
			if av {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
}

// joinLocator sets the status of each schema reference of a topic from its
// schema locator and returns the findings.
func joinLocator(vs versionSource, locators *store.AheadReader, tu *TopicUsage, base formats.TopicName) ([]report.Finding, error) {
	var (
		findings []report.Finding
		loc      *schemapb.SchemaLocator
		locErr   error // why the locator cannot be used; nil when it was read
		locRead  bool
	)
	path := base.SchemaLocatorPath()
	readLocator := func() error {
		if locRead {
			return nil
		}
		locRead = true
		n, err := locators.Get(path)
		switch {
		case err == nil:
			// Required fields too, as Check does: a locator the broker would
			// reject is damaged, whatever versions it still lists.
			if loc, err = formats.DecodeSchemaLocator(n.Value); err == nil {
				err = proto.CheckInitialized(loc)
			}
			locErr = err
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTruncatedValue):
			locErr = err
		default:
			return fmt.Errorf("schema usage: %s: %w", path, err)
		}
		return nil
	}
	for i := range tu.Uses {
		u := &tu.Uses[i]
		switch {
		case u.Status == UseNoSchema:
			continue
		case u.Field == schemaid.FieldSchemaVersion && u.ID.Kind == schemaid.KindPulsarVersion:
			if err := readLocator(); err != nil {
				return nil, err
			}
			f, err := checkVersion(vs, tu, u, loc, locErr, path)
			if err != nil {
				return nil, err
			}
			if f != nil {
				findings = append(findings, *f)
			}
		default:
			u.Status = UseUnchecked
			findings = append(findings, uncheckedFinding(tu, u))
		}
	}
	if locErr != nil && !errors.Is(locErr, store.ErrNotFound) {
		kind := KindNodeUndecodable
		if errors.Is(locErr, store.ErrTruncatedValue) {
			kind = KindValueTruncated
		}
		f := newFinding(kind, "node "+path, "inspect it with: ledgermedic inspect node "+path,
			"the schema locator of %s cannot be read, so its versions in use are not checked: %v", tu.Topic, locErr)
		f.Topic, f.Path = tu.Topic, path
		findings = append(findings, f)
	}
	return findings, nil
}

// checkVersion joins one registry version with the locator.
func checkVersion(vs versionSource, tu *TopicUsage, u *SchemaUse, loc *schemapb.SchemaLocator, locErr error, path string) (*report.Finding, error) {
	v := u.ID.Version
	where := fmt.Sprintf("%s schema version %d", tu.Topic, v)
	used := usedBy(u)
	switch {
	case errors.Is(locErr, store.ErrNotFound):
		u.Status, u.Detail = UseMissing, "the topic has no schema locator ("+path+")"
		f := newFinding(KindUsedSchemaVersionMissing, where, restoreHint(tu.Topic),
			"%s version %d, but the topic has no schema locator at %s: its schema history was deleted", used, v, path)
		return withSchema(f, tu, path, v, nil), nil
	case locErr != nil:
		// The node is damaged: Check reports it once; here the version stays unjoined.
		u.Status, u.Detail = UseNoLocator, locErr.Error()
		return nil, nil
	}
	ie := findVersion(loc, v)
	if ie == nil {
		u.Status, u.Detail = UseMissing, "not in the locator "+path
		f := newFinding(KindUsedSchemaVersionMissing, where, restoreHint(tu.Topic),
			"%s version %d, which the schema locator %s does not list (versions %s): that history was deleted",
			used, v, path, locatorRange(loc))
		return withSchema(f, tu, path, v, nil), nil
	}
	ledger, entry := ie.GetPosition().GetLedgerId(), ie.GetPosition().GetEntryId()
	vf, err := vs.version(tu.SchemaKey, v, ledger, entry)
	if err != nil {
		return nil, err
	}
	var what string
	switch {
	case vf.stored && !vf.truncated:
		u.Status = UseOK
		return nil, nil
	case vf.truncated:
		what = fmt.Sprintf("entry %d of ledger %d is truncated (value log damaged)", entry, ledger)
	case vf.node:
		what = fmt.Sprintf("ledger %d's node exists but entry %d is gone", ledger, entry)
	default:
		what = fmt.Sprintf("ledger %d has neither a node nor entry %d", ledger, entry)
	}
	u.Status, u.Detail = UseLost, what
	f := newFinding(KindUsedSchemaVersionLost, where, schemaRepairHint(tu.Topic),
		"%s version %d, whose schema is lost: %s; restore it first", used, v, what)
	return withSchema(f, tu, path, v, &ledger), nil
}

func usedBy(u *SchemaUse) string {
	return fmt.Sprintf("%d messages in %d entries (ledger:entry %s to %s, published %s to %s) use schema",
		u.Messages, u.Entries, u.First, u.Last, usageTime(u.FirstPublishMs), usageTime(u.LastPublishMs))
}

func restoreHint(topic string) string {
	return "restore the version from a schema capture or a pulsar-admin export: " + schemaRepairHint(topic)
}

func withSchema(f report.Finding, tu *TopicUsage, path string, v int64, ledger *int64) *report.Finding {
	f.Topic, f.Path, f.Version, f.LedgerID = tu.Topic, path, report.Int64(v), ledger
	return &f
}

func uncheckedFinding(tu *TopicUsage, u *SchemaUse) report.Finding {
	var why string
	switch u.ID.Kind {
	case schemaid.KindPulsarVersionLegacy:
		why = "a pre-2.4 schema_version this tool cannot join with the locator"
	case schemaid.KindUnknown:
		why = "bytes that fit no known schema id layout"
	default:
		why = "an external registry id; there is no registry here to check it against"
	}
	f := newFinding(KindSchemaRefUnchecked, fmt.Sprintf("%s %s %s", tu.Topic, u.Field, u.ID.String()), "",
		"%d messages in %d entries (ledger:entry %s to %s) carry %s %s: %s",
		u.Messages, u.Entries, u.First, u.Last, u.Field, u.ID.String(), why)
	f.Topic = tu.Topic
	return f
}

// findVersion returns the locator's IndexEntry of version v, from the index or
// the latest info.
func findVersion(loc *schemapb.SchemaLocator, v int64) *schemapb.IndexEntry {
	for _, ie := range locatorVersions(loc) {
		if ie.GetVersion() == v {
			return ie
		}
	}
	return nil
}

func locatorRange(loc *schemapb.SchemaLocator) string {
	ies := locatorVersions(loc)
	if len(ies) == 0 {
		return "none"
	}
	parts := make([]string, len(ies))
	for i, ie := range ies {
		parts[i] = strconv.FormatInt(ie.GetVersion(), 10)
	}
	return strings.Join(parts, ", ")
}

// usageTime is an epoch-ms publish time as the messages and findings print it.
func usageTime(ms uint64) string { return report.Millis(int64(ms)).String() }
