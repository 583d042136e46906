package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
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

	partitionOf map[int64]int // ledger → partition, for a partitioned topic
}

// partition is the partition a ledger of the topic belongs to, nil for a topic
// that is not partitioned.
func (tu *TopicUsage) partition(ledgerID int64) *int {
	if p, ok := tu.partitionOf[ledgerID]; ok {
		return &p
	}
	return nil
}

// usagePlace is a first or last use in the table: the entry, and its partition
// when the topic is partitioned (one row counts every partition).
func usagePlace(pos Position, partition *int) string {
	if partition == nil {
		return pos.String()
	}
	return fmt.Sprintf("%s (partition %d)", pos, *partition)
}

// UsageReport is what SchemaUsage found.
type UsageReport struct {
	Topics     []TopicUsage // by topic name
	Findings   []report.Finding
	Entries    int64
	BadEntries int64

	indexOnce sync.Once
	byTopic   map[string][]int // positions in Topics, by Topic
	byKey     map[string][]int // by SchemaKey
}

// index maps topic names and schema keys to their topics, once: the report and
// schema repair look up each schema version, and a scan of every topic per version
// made a report of 10k topics take 22 s.
func (r *UsageReport) index() {
	r.indexOnce.Do(func() {
		r.byTopic, r.byKey = make(map[string][]int), make(map[string][]int)
		for i, t := range r.Topics {
			r.byTopic[t.Topic] = append(r.byTopic[t.Topic], i)
			r.byKey[t.SchemaKey] = append(r.byKey[t.SchemaKey], i)
		}
	})
}

// TopicUses calls fn with every use of registry version version by the stored
// messages of topic (a base topic, persistent://tenant/ns/name).
func (r *UsageReport) TopicUses(topic string, version int64, fn func(SchemaUse)) {
	r.index()
	r.versionUses(r.byTopic[topic], version, fn)
}

func (r *UsageReport) versionUses(topics []int, version int64, fn func(SchemaUse)) {
	for _, i := range topics {
		for _, u := range r.Topics[i].Uses {
			if u.Field == schemaid.FieldSchemaVersion && u.ID.Kind == schemaid.KindPulsarVersion && u.ID.Version == version {
				fn(u)
			}
		}
	}
}

// MessagesNeeding returns how many stored messages of the topics with this
// schema key carry registry version version: what a repair of that version
// brings back to life.
func (r *UsageReport) MessagesNeeding(schemaKey string, version int64) int64 {
	r.index()
	var n int64
	r.versionUses(r.byKey[schemaKey], version, func(u SchemaUse) { n += u.Messages })
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

// Table is the per-topic, per-reference usage view.
func (r *UsageReport) Table() *report.Table {
	var rows []UsageRow
	for _, tu := range r.Topics {
		for _, u := range tu.Uses {
			row := UsageRow{Topic: tu.Topic, ID: u.ID, Ref: u.ID.String(), Messages: u.Messages, Entries: u.Entries,
				First: u.First, FirstPartition: tu.partition(u.First.LedgerID),
				Last: u.Last, LastPartition: tu.partition(u.Last.LedgerID),
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

// TopicsTable is one row per topic: totals.
func (r *UsageReport) TopicsTable() *report.Table {
	rows := make([]UsageTopicRow, len(r.Topics))
	for i, tu := range r.Topics {
		rows[i] = UsageTopicRow{tu.Topic, tu.ManagedLedgers, tu.Entries, tu.Messages, len(tu.Uses), tu.BadEntries}
	}
	return report.Rows("topics", "Topics", rows)
}

// usageTopic is one base topic being scanned.
type usageTopic struct {
	name formats.TopicName // base
	mls  int
	// partitionOf maps each ledger of a partitioned topic to its partition, so
	// the first and last use, which may lie in different partitions, say which.
	partitionOf map[int64]int
}

// usageLedger is one ledger to read and the topic it belongs to.
type usageLedger struct {
	id    int64
	topic int32
}

// SchemaUsage reads every stored entry of the topics' ledgers once and counts,
// per topic and schema reference, the messages and entries that carry it; then
// it joins the registry versions with the topic's schema locator.
//
// Without a topic it is one pass over the whole ledger store (entryPass), cut
// into ranges that Workers read and decode in parallel; with one, the topic's
// ledgers are read one by one the same way. Each worker keeps its own counters (a
// few per topic and schema reference, never entries), added up at the end, so
// memory stays flat however many entries there are.
func SchemaUsage(ctx context.Context, dd *datadir.DataDir, opts UsageOptions, progress report.Progress) (*UsageReport, error) {
	if progress == nil {
		progress = report.NoProgress{}
	}
	topics, ledgers, findings, err := usageTargets(ctx, dd.Metadata, opts.Topic, nil)
	if err != nil {
		return nil, err
	}
	maxBad := opts.MaxListedBadEntries
	if maxBad <= 0 {
		maxBad = DefaultMaxListedBadEntries
	}
	p := &entryPass{dd: dd, workers: scanWorkers(opts.Workers), prog: progress, usage: newUsageScan(topics, ledgers, maxBad)}
	if opts.Topic == nil {
		p.ranges = wholeStoreRanges(dd, p.workers)
		if n, ok := dd.EstimateEntries(); ok {
			report.StartEstimate(progress, "schema usage", n)
		} else {
			progress.Start("schema usage", 0)
		}
	} else {
		p.ranges = ledgerRanges(ledgers)
		progress.Start("schema usage", 0)
	}
	err = p.run(ctx)
	progress.Done()
	if err != nil {
		return nil, fmt.Errorf("schema usage: %w", err)
	}
	return finishUsage(ctx, dd, topics, p.usage.states, maxBad, findings)
}

// usageLocatorWindow topics' locators are read ahead at once by finishUsage.
const usageLocatorWindow = 100

// finishUsage adds up the workers' counters and joins them with the locators.
// findings are the ones made before the pass; the report's come after them.
func finishUsage(ctx context.Context, dd *datadir.DataDir, topics []usageTopic, states []*usageState, maxBad int, findings []report.Finding) (*UsageReport, error) {
	r := mergeUsage(topics, states, maxBad)
	// The topics' locators are read ahead a window at a time: a Get per topic
	// (and another per version checked for a collision) cost a round trip each
	// on a live store, and all of them at once would hold every locator.
	var collisions []report.Finding
	for lo := 0; lo < len(r.Topics); lo += usageLocatorWindow {
		hi := min(lo+usageLocatorWindow, len(r.Topics))
		paths := make([]string, 0, hi-lo)
		for i := lo; i < hi; i++ {
			paths = append(paths, topics[i].name.SchemaLocatorPath())
		}
		locators := store.ReadAhead(dd.Metadata, paths)
		for i := lo; i < hi; i++ {
			fs, err := joinLocator(dd, locators, &r.Topics[i], topics[i].name)
			if err != nil {
				return nil, err
			}
			findings = append(findings, fs...)
			// Versions registered after messages that use them (inspect/collision.go).
			cf, err := topicCollisions(ctx, dd, locators, &r.Topics[i])
			if err != nil {
				return nil, err
			}
			collisions = append(collisions, cf...)
		}
	}
	findings = append(findings, collisions...)
	r.Findings = append(findings, r.Findings...)
	r.Findings = append(r.Findings, StoreDamageFindings(dd)...)
	MarkStoreDamage(r.Findings, dd)
	report.SortFindings(r.Findings)
	return r, nil
}

// usageFindings are the schema-usage findings of Check's pass (checkUsageFindings
// of the report SchemaUsage would give).
func (c *checker) usageFindings(ctx context.Context) ([]report.Finding, error) {
	r, err := finishUsage(ctx, c.dd, c.usageTopics, c.usage.states, c.usage.maxBad, nil)
	if err != nil {
		return nil, err
	}
	if c.opts.OnUsage != nil {
		c.opts.OnUsage(r)
	}
	return checkUsageFindings(r), nil
}

// checkUsageFindings are the findings of a usage report that Check's own scan
// does not make (it already reports unreadable entries).
func checkUsageFindings(r *UsageReport) []report.Finding {
	var out []report.Finding
	for _, f := range r.Findings {
		switch f.Kind {
		case KindUsedSchemaVersionLost, KindUsedSchemaVersionMissing, KindSchemaRefUnchecked, KindSchemaVersionCollision:
			out = append(out, f)
		}
	}
	return out
}

// usageTargets lists the topics (by base name) and the ledgers of their managed
// ledgers, in ledger id order so the store is read front to back. Managed-ledger
// nodes that cannot be read become findings.
// keep, when not nil, keeps only the topics it returns true for (a sharded
// check's own).
func usageTargets(ctx context.Context, ms store.MetadataStore, only *formats.TopicName, keep func(formats.TopicName) bool) ([]usageTopic, []usageLedger, []report.Finding, error) {
	var (
		topics   []usageTopic
		byName   = map[formats.TopicName]int32{}
		ledgers  []usageLedger
		findings []report.Finding
	)
	topicIdx := func(t formats.TopicName) int32 {
		base := t.Base()
		i, ok := byName[base]
		if !ok {
			i = int32(len(topics))
			byName[base] = i
			topics = append(topics, usageTopic{name: base})
		}
		return i
	}
	visit := func(n store.Node) error {
		t, ok := formats.ParseManagedLedgerPath(n.Path)
		if !ok || (keep != nil && !keep(t)) {
			return nil
		}
		info, _, err := formats.DecodeManagedLedgerInfo(n.Value)
		if err != nil {
			f := newFinding(KindNodeUndecodable, "node "+n.Path,
				"its ledgers were not scanned; inspect it with: ledgermedic inspect node "+n.Path,
				"managed-ledger info does not decode: %v", err)
			f.Path = n.Path
			findings = append(findings, f)
			return nil
		}
		i := topicIdx(t)
		topics[i].mls++
		p := t.PartitionIndex()
		if p >= 0 && topics[i].partitionOf == nil {
			topics[i].partitionOf = map[int64]int{}
		}
		for _, li := range info.GetLedgerInfo() {
			ledgers = append(ledgers, usageLedger{id: li.GetLedgerId(), topic: i})
			if p >= 0 {
				topics[i].partitionOf[li.GetLedgerId()] = p
			}
		}
		return nil
	}
	bad := func(te *store.TruncatedError) error {
		if _, ok := formats.ParseManagedLedgerPath(te.Path); ok {
			f := newFinding(KindValueTruncated, "node "+te.Path, "its ledgers were not scanned",
				"managed-ledger info is unreadable: %v", te)
			f.Path = te.Path
			findings = append(findings, f)
		}
		return nil
	}
	if only != nil {
		mls, err := cluster.TopicManagedLedgers(ctx, ms, *only)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("schema usage: %w", err)
		}
		for _, ml := range mls {
			if ml.Damaged != nil {
				err = bad(ml.Damaged)
			} else {
				err = visit(ml.Node)
			}
			if err != nil {
				return nil, nil, nil, err
			}
		}
	} else if err := walkNodes(ctx, ms, formats.ManagedLedgersRoot+"/", visit, bad); err != nil {
		return nil, nil, nil, fmt.Errorf("schema usage: list managed ledgers: %w", err)
	}
	// Sort topics by name and renumber, so the report's order does not depend on
	// the walk's.
	order := make([]int32, len(topics))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(topics[a].name.String(), topics[b].name.String()) })
	renum := make([]int32, len(topics))
	sorted := make([]usageTopic, len(topics))
	for newI, oldI := range order {
		renum[oldI] = int32(newI)
		sorted[newI] = topics[oldI]
	}
	for i := range ledgers {
		ledgers[i].topic = renum[ledgers[i].topic]
	}
	slices.SortFunc(ledgers, func(a, b usageLedger) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.topic, b.topic))
	})
	ledgers = slices.Compact(ledgers)
	return sorted, ledgers, findings, nil
}

// useCounter is what a decoder keeps per topic and schema reference.
type useCounter struct {
	messages, entries int64
	first, last       Position
	firstMs, lastMs   uint64
}

func (c *useCounter) add(pos Position, publishMs uint64, messages int64) {
	if c.entries == 0 || publishMs < c.firstMs || publishMs == c.firstMs && pos.Less(c.first) {
		c.first, c.firstMs = pos, publishMs
	}
	if c.entries == 0 || publishMs > c.lastMs || publishMs == c.lastMs && c.last.Less(pos) {
		c.last, c.lastMs = pos, publishMs
	}
	c.entries++
	c.messages += messages
}

func (c *useCounter) merge(o *useCounter) {
	if o.entries == 0 {
		return
	}
	if c.entries == 0 {
		*c = *o
		return
	}
	if o.firstMs < c.firstMs || o.firstMs == c.firstMs && o.first.Less(c.first) {
		c.first, c.firstMs = o.first, o.firstMs
	}
	if o.lastMs > c.lastMs || o.lastMs == c.lastMs && c.last.Less(o.last) {
		c.last, c.lastMs = o.last, o.lastMs
	}
	c.entries += o.entries
	c.messages += o.messages
}

// badEntry is an entry that could not be read, parsed or checked.
type badEntry struct {
	topic  int32
	pos    Position
	kind   string
	detail string
}

type topicTotals struct {
	entries, messages, bad int64
}

// usageState is one decoder's counters. Reference keys are the field number
// byte followed by the field's raw bytes (FieldUnknown and no bytes: no schema).
type usageState struct {
	uses   []map[string]*useCounter // per topic
	totals []topicTotals
	bad    []badEntry // the lowest positions, at most 2*maxBad before trimming
	maxBad int

	key []byte
}

func newUsageState(topics, maxBad int) *usageState {
	st := &usageState{uses: make([]map[string]*useCounter, topics), totals: make([]topicTotals, topics), maxBad: maxBad}
	for i := range st.uses {
		st.uses[i] = map[string]*useCounter{}
	}
	return st
}

// account counts one entry of a topic; r and err are what passWorker.decode
// made of it.
func (st *usageState) account(topic int32, pos Position, v []byte, r *formats.EntryRefs, err error) {
	tot := &st.totals[topic]
	tot.entries++
	if err != nil {
		st.addBad(badEntry{topic: topic, pos: pos, kind: KindEntryUndecodable, detail: err.Error()})
		return
	}
	if r.HasChecksum && !r.ChecksumOK {
		// The metadata parsed, so the entry still counts; the bytes are damaged.
		st.addBad(badEntry{topic: topic, pos: pos, kind: KindEntryCRCMismatch,
			detail: fmt.Sprintf("stored CRC32C %08x does not match the entry's %d bytes from offset %d",
				r.Checksum, len(v)-r.MetadataOffset, r.MetadataOffset)})
	}
	messages := int64(r.NumMessages)
	tot.messages += messages
	if r.SchemaVersion != nil {
		st.count(topic, schemaid.FieldSchemaVersion, r.SchemaVersion, pos, r.PublishTime, messages)
	}
	if r.SchemaID != nil {
		st.count(topic, schemaid.FieldSchemaID, r.SchemaID, pos, r.PublishTime, messages)
	}
	if r.SchemaVersion == nil && r.SchemaID == nil {
		st.count(topic, schemaid.FieldUnknown, nil, pos, r.PublishTime, messages)
	}
}

func (st *usageState) count(topic int32, field schemaid.Field, raw []byte, pos Position, publishMs uint64, messages int64) {
	st.key = append(append(st.key[:0], byte(field)), raw...)
	m := st.uses[topic]
	c := m[string(st.key)] // no allocation for the lookup
	if c == nil {
		c = &useCounter{}
		m[string(st.key)] = c
	}
	c.add(pos, publishMs, messages)
}

func (st *usageState) addBad(e badEntry) {
	st.totals[e.topic].bad++
	st.bad = append(st.bad, e)
	if len(st.bad) >= 2*st.maxBad {
		st.bad = lowestBad(st.bad, st.maxBad)
	}
}

// lowestBad keeps the n entries with the lowest positions, so the list does not
// depend on which decoder saw what.
func lowestBad(es []badEntry, n int) []badEntry {
	sort.Slice(es, func(i, j int) bool { return es[i].pos.Less(es[j].pos) })
	if len(es) > n {
		es = es[:n]
	}
	return es
}

// mergeUsage adds up the decoders' counters into the report and lists the
// unreadable entries as findings.
func mergeUsage(topics []usageTopic, states []*usageState, maxBad int) *UsageReport {
	r := &UsageReport{Topics: make([]TopicUsage, len(topics))}
	var bad []badEntry
	var badTotal int64
	for i, t := range topics {
		tu := &r.Topics[i]
		tu.Topic, tu.SchemaKey, tu.ManagedLedgers, tu.partitionOf = t.name.String(), t.name.SchemaKey(), t.mls, t.partitionOf
		merged := map[string]*useCounter{}
		for _, st := range states {
			tot := st.totals[i]
			tu.Entries += tot.entries
			tu.Messages += tot.messages
			tu.BadEntries += tot.bad
			for k, c := range st.uses[i] {
				if m := merged[k]; m != nil {
					m.merge(c)
				} else {
					cc := *c
					merged[k] = &cc
				}
			}
		}
		for k, c := range merged {
			tu.Uses = append(tu.Uses, newSchemaUse(k, c))
		}
		sortUses(tu.Uses)
		r.Entries += tu.Entries
		badTotal += tu.BadEntries
	}
	for _, st := range states {
		bad = append(bad, st.bad...)
	}
	r.BadEntries = badTotal
	bad = lowestBad(bad, maxBad)
	for _, e := range bad {
		topic := r.Topics[e.topic].Topic
		f := newFinding(e.kind, entryLoc(e.pos.LedgerID, e.pos.EntryID),
			"inspect it with: "+entriesHint(e.pos.LedgerID, e.pos.EntryID), "%s: %s", topic, e.detail)
		f.Topic, f.LedgerID, f.EntryID = topic, report.Int64(e.pos.LedgerID), report.Int64(e.pos.EntryID)
		r.Findings = append(r.Findings, f)
	}
	if more := badTotal - int64(len(bad)); more > 0 {
		r.Findings = append(r.Findings, newFinding(KindBadEntriesNotListed, "ledger store",
			"list them with: ledgermedic check", "%d more unreadable entries are not listed (%d in all; the %d lowest positions are)",
			more, badTotal, len(bad)))
	}
	return r
}

func newSchemaUse(key string, c *useCounter) SchemaUse {
	field := schemaid.Field(key[0])
	u := SchemaUse{Field: field, Messages: c.messages, Entries: c.entries,
		First: c.first, Last: c.last, FirstPublishMs: c.firstMs, LastPublishMs: c.lastMs}
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
func joinLocator(dd *datadir.DataDir, locators *store.AheadReader, tu *TopicUsage, base formats.TopicName) ([]report.Finding, error) {
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
			f, err := checkVersion(dd, tu, u, loc, locErr, path)
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
func checkVersion(dd *datadir.DataDir, tu *TopicUsage, u *SchemaUse, loc *schemapb.SchemaLocator, locErr error, path string) (*report.Finding, error) {
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
	_, err := dd.Ledgers.Entry(ledger, entry)
	switch {
	case err == nil:
		u.Status = UseOK
		return nil, nil
	case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrTruncatedValue):
		return nil, fmt.Errorf("schema usage: %s version %d: %w", path, v, err)
	}
	var what string
	switch {
	case errors.Is(err, store.ErrTruncatedValue):
		what = fmt.Sprintf("entry %d of ledger %d is truncated (value log damaged)", entry, ledger)
	default:
		node, nerr := cluster.LedgerNodeExists(dd.Metadata, ledger)
		switch {
		case nerr != nil:
			return nil, fmt.Errorf("schema usage: ledger %d node: %w", ledger, nerr)
		case node:
			what = fmt.Sprintf("ledger %d's node exists but entry %d is gone", ledger, entry)
		default:
			what = fmt.Sprintf("ledger %d has neither a node nor entry %d", ledger, entry)
		}
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
