package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// FindingSource adds findings to Check from outside the core scan (bookie
// replicas, the report's schema-usage pass, ...). It must only read dd.
type FindingSource func(ctx context.Context, dd *datadir.DataDir) ([]report.Finding, error)

// CheckOptions configures Check.
type CheckOptions struct {
	// FirstEntryIndexKey is the LedgerInfo property of firstEntryIndex; "" means cluster.FirstEntryIndexKey.
	FirstEntryIndexKey string
	// Sources run after the core scan; their findings join the core's.
	Sources []FindingSource
	// SchemaUsage counts the schema references of every stored message in the
	// core scan's pass (SchemaUsage over every topic) and adds the findings it
	// gives that the core scan does not make, after the Sources' findings.
	SchemaUsage bool
	// OnUsage, with SchemaUsage, receives the pass's whole usage report (what
	// `inspect schema-usage` would print), so a caller that shows message counts
	// needs no second pass.
	OnUsage func(*UsageReport)
	// Workers read the ledger store in parallel; 0 means GOMAXPROCS. The result
	// does not depend on it.
	Workers int
	// Shard, when N > 0, makes Check do one shard's part of the whole check
	// (shard.go): the findings, coverage rows and entry counts of what the shard
	// owns, each finding stamped with its Order, so that the shards' results
	// merged (MergeShardFindings) are the whole check's.
	Shard cluster.Shard
}

// CheckStats counts what Check looked at.
type CheckStats struct {
	Nodes          int64 // metadata nodes read
	ManagedLedgers int64
	Cursors        int64
	SchemaLocators int64
	SchemaVersions int64
	LedgerNodes    int64 // /ledgers/... metadata nodes
	Ledgers        int64 // ledgers with at least one entry
	Entries        int64 // entries read
	EntryBytes     int64
	TopicEntries   int64 // entries parsed as topic entry frames
	// Fingerprint, of a sharded check, is a hash of every metadata node's path and
	// value in walk order: the shards of one check read the same metadata.
	Fingerprint string
	// Coverage is the firstEntryIndex back-fill coverage of every managed ledger
	// whose node decodes, in the order the metadata walk met them.
	Coverage []TopicCoverage
}

// TopicCoverage is how much of one managed ledger firstEntryIndex covers.
type TopicCoverage struct {
	Topic   string // persistent://...
	Path    string // managed-ledger node
	Indexed bool   // cluster.TopicIndexed
	// WithEntries and Covered are cluster.Coverage: LedgerInfos with entries, and
	// those of them with a valid property.
	WithEntries int
	Covered     int
	// Order, of a sharded check, is the row's place in the whole check's table.
	Order string
}

// Percent is Covered of WithEntries in percent, rounded to one decimal; ok is
// false when no ledger has entries.
func (tc TopicCoverage) Percent() (pct float64, ok bool) {
	if tc.WithEntries == 0 {
		return 0, false
	}
	return math.Round(float64(tc.Covered)*1000/float64(tc.WithEntries)) / 10, true
}

// CoverageTable renders Coverage, one row per managed ledger.
func (s *CheckStats) CoverageTable() *report.Table {
	cols := []string{"TOPIC", "topic", "INDEXED", "indexed", "LEDGERS WITH ENTRIES", "ledgers_with_entries",
		"WITH PROPERTY", "ledgers_with_property", "COVERAGE %", "coverage_pct"}
	sharded := s.Fingerprint != ""
	if sharded {
		cols = append(cols, "ORDER", "order")
	}
	t := report.NewTable("coverage", "firstEntryIndex coverage", cols...)
	for _, tc := range s.Coverage {
		var pct any
		if p, ok := tc.Percent(); ok {
			pct = p
		}
		row := []any{tc.Topic, tc.Indexed, tc.WithEntries, tc.Covered, pct}
		if sharded {
			row = append(row, tc.Order)
		}
		t.Add(row...)
	}
	return t
}

// Table renders the stats as a two-column table.
func (s *CheckStats) Table() *report.Table {
	t := report.NewTable("stats", "Scanned", "ITEM", "item", "COUNT", "count")
	for _, it := range s.items() {
		t.Add(it.name, *it.v)
	}
	return t
}

// statItem is one row of the stats table; perShard counts are a sharded
// check's own part (added up by a merge), the others its whole walk's.
type statItem struct {
	name     string
	v        *int64
	perShard bool
}

func (s *CheckStats) items() []statItem {
	return []statItem{
		{"metadata nodes", &s.Nodes, false},
		{"managed ledgers", &s.ManagedLedgers, false},
		{"cursors", &s.Cursors, false},
		{"schema locators", &s.SchemaLocators, false},
		{"schema versions", &s.SchemaVersions, false},
		{"ledger nodes", &s.LedgerNodes, false},
		{"ledgers with entries", &s.Ledgers, true},
		{"entries", &s.Entries, true},
		{"entry bytes", &s.EntryBytes, true},
		{"topic entries parsed", &s.TopicEntries, true},
	}
}

// SetStat sets the count of a stats table row by its item name (a merge reads
// them back); false when there is no such item.
func (s *CheckStats) SetStat(item string, count int64) bool {
	for _, it := range s.items() {
		if it.name == item {
			*it.v = count
			return true
		}
	}
	return false
}

// MergeShardStats is the stats of a whole check from its shards' (in shard
// order): the per-shard counts added up, the walk's counts and the coverage
// rows, merged in walk order, as one shard has them. It fails when two shards
// walked different metadata.
func MergeShardStats(shards []*CheckStats) (*CheckStats, error) {
	out := &CheckStats{}
	if len(shards) == 0 {
		return out, nil
	}
	*out = *shards[0]
	out.Coverage = nil
	for i, sh := range shards {
		if sh.Fingerprint != out.Fingerprint {
			return nil, fmt.Errorf("shard %d read other metadata than shard 0 (fingerprint %s, not %s)", i, sh.Fingerprint, out.Fingerprint)
		}
		mine, theirs := out.items(), sh.items()
		for j, it := range mine {
			switch {
			case i == 0:
			case it.perShard:
				*it.v += *theirs[j].v
			case *it.v != *theirs[j].v:
				return nil, fmt.Errorf("shard %d counted %d %s, shard 0 %d: they read different metadata", i, *theirs[j].v, it.name, *it.v)
			}
		}
		out.Coverage = append(out.Coverage, sh.Coverage...)
	}
	slices.SortStableFunc(out.Coverage, func(a, b TopicCoverage) int { return strings.Compare(a.Order, b.Order) })
	for i := range out.Coverage {
		out.Coverage[i].Order = ""
	}
	return out, nil
}

// Who references a ledger.
const (
	refLedgerInfo = 1 << iota
	refSchema
	refCursor
)

// ledgerFacts is what Check keeps per ledger id: a few words, never entries.
type ledgerFacts struct {
	node          bool
	badNode       bool // node exists but does not decode
	metaEmpty     bool // metadata says the ledger holds nothing (lastEntryId -1)
	closed        bool
	lastEntryID   int64
	component     string
	owner         string // pulsar/managed-ledger or pulsar/schemaId value
	cursorLedger  bool
	cursorName    string // pulsar/cursor value of a cursor ledger
	refs          int
	openLast      bool // the open last ledger of a managed ledger (LedgerInfo.entries 0)
	offloadedGone bool // offloaded and deleted from BookKeeper: fine without node and entries
	stored        int64
	entry0Indexed bool // entry 0 carries a broker index
	// Of a sharded check: the shard of the first topic that refers to the
	// ledger, plus one (0: none refers to it), and whether a topic of this shard
	// refers to it (its entries are read then, owned or not).
	ownerPlus1 int32
	needed     bool
}

func (f *ledgerFacts) presence() cluster.Presence {
	return cluster.Presence{Node: f.node, Entries: f.stored > 0}
}

// topicLedger reports whether the ledger's entries are topic entry frames.
func (f *ledgerFacts) topicLedger() bool {
	if f.refs&refLedgerInfo != 0 {
		return true
	}
	return f.component == cluster.ComponentML && !f.cursorLedger && f.refs&(refSchema|refCursor) == 0
}

type mlLedger struct {
	id      int64
	entries int64
}

type mlFacts struct {
	topic       string // persistent://...
	path        string
	indexProp   bool
	ledgers     []mlLedger
	withEntries int // cluster.Coverage
	covered     int
	owned       bool // by this shard (always, unsharded)
}

type schemaVersion struct {
	key     string // tenant/ns/topic
	topic   string // persistent://... of the base topic, for hints
	path    string
	version int64
	ledger  int64
	entry   int64
	hash    []byte
	owned   bool // by this shard (always, unsharded)
}

type checker struct {
	dd    *datadir.DataDir
	opts  CheckOptions
	prog  report.Progress
	stats CheckStats

	findings []report.Finding
	ledgers  map[int64]*ledgerFacts
	mls      []*mlFacts
	schemas  []schemaVersion
	// Owners whose metadata does not decode: their ledgers are not called orphans.
	badMLs     map[string]bool
	badSchemas map[string]bool
	badCursors map[string]bool   // ml name + "/" + cursor name as stored
	strings    map[string]string // see intern
	// The schema-usage count of the pass, with opts.SchemaUsage.
	usage       *usageScan
	usageTopics []usageTopic
	// live: the ledger store is a running cluster's whose replicas can each be
	// asked (store.ReplicaProber); notOnBookies are the ledgers its probe found
	// on no bookie.
	live         bool
	notOnBookies map[int64]*ledgerProbe
	unreachable  map[int64]bool // ledgers no bookie asked answered for: their entries are unknown, not missing
	// A sharded check's walk state (shard.go).
	shardWalk
}

// Check reads the whole data dir once, cross-checks metadata against ledgers and
// returns the findings (errors and warnings first, then info) and what it scanned.
// Memory grows with the number of ledgers and metadata nodes, not with entries.
func Check(ctx context.Context, dd *datadir.DataDir, opts CheckOptions, prog report.Progress) ([]report.Finding, *CheckStats, error) {
	opts.FirstEntryIndexKey = cluster.KeyFor(opts.FirstEntryIndexKey)
	if prog == nil {
		prog = report.NoProgress{}
	}
	c := newChecker(dd, opts, prog)
	steps := []func(context.Context) error{c.scanMetadata, c.scanLedgers, c.probeReplicas, c.checkLedgers, c.checkManagedLedgers, c.checkSchemas}
	for i, step := range steps {
		c.step = stepOf[i]
		if err := step(ctx); err != nil {
			return nil, nil, err
		}
	}
	c.step = stepSources
	for i, src := range opts.Sources {
		fs, err := src(ctx, dd)
		if err != nil {
			return nil, nil, fmt.Errorf("check source %d: %w", i+1, err)
		}
		c.addSourced(fs)
	}
	if c.usage != nil {
		fs, err := c.usageFindings(ctx)
		if err != nil {
			return nil, nil, err
		}
		c.addUsage(fs)
	}
	c.step = stepStoreDamage
	c.addSourced(StoreDamageFindings(dd))
	MarkStoreDamage(c.findings, dd)
	sortFindings(c.findings)
	return c.findings, &c.stats, nil
}

func newChecker(dd *datadir.DataDir, opts CheckOptions, prog report.Progress) *checker {
	live := false
	if dd != nil {
		_, live = dd.Ledgers.(store.ReplicaProber)
	}
	return &checker{
		dd: dd, opts: opts, prog: prog, live: live, notOnBookies: map[int64]*ledgerProbe{}, unreachable: map[int64]bool{},
		ledgers:    map[int64]*ledgerFacts{},
		badMLs:     map[string]bool{},
		badSchemas: map[string]bool{},
		badCursors: map[string]bool{},
		strings:    map[string]string{},
	}
}

// sortFindings orders by severity, then kind, keeping the scan's order (ledger
// and entry ids ascending) within a kind.
func sortFindings(fs []report.Finding) { slices.SortStableFunc(fs, bySeverityKind) }

// severityRank orders severities most serious first.
var severityRank = map[report.Severity]int{report.SeverityError: 0, report.SeverityWarning: 1, report.SeverityInfo: 2}

func bySeverityKind(a, b report.Finding) int {
	if d := severityRank[a.Severity] - severityRank[b.Severity]; d != 0 {
		return d
	}
	return strings.Compare(a.Kind, b.Kind)
}

// add appends a finding of the step running, at c.major (a sharded check
// stamps its Order).
func (c *checker) add(f report.Finding) {
	if c.sharded() {
		f.Order = findingOrder(c.step, c.major, "")
	}
	c.findings = append(c.findings, f)
}

func (c *checker) fact(id int64) *ledgerFacts {
	f := c.ledgers[id]
	if f == nil {
		f = &ledgerFacts{lastEntryID: -1}
		c.ledgers[id] = f
	}
	return f
}

// sortedLedgerIDs returns the ids of every ledger Check has heard of, ascending.
func (c *checker) sortedLedgerIDs() []int64 {
	ids := make([]int64, 0, len(c.ledgers))
	for id := range c.ledgers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// scanMetadata walks every node once and keeps what later steps need.
func (c *checker) scanMetadata(ctx context.Context) error {
	c.prog.Start("metadata nodes", 0)
	defer c.prog.Done()
	start := len(c.findings)
	err := walkNodes(ctx, c.dd.Metadata, "", func(n store.Node) error {
		c.major = c.stats.Nodes
		c.stats.Nodes++
		c.prog.Add(1)
		c.fingerprint(n.Path, n.Value)
		c.node(n)
		return nil
	}, func(te *store.TruncatedError) error {
		c.major = c.stats.Nodes
		c.stats.Nodes++
		c.fingerprint(te.Path, nil)
		f := newFinding(KindValueTruncated, "node "+te.Path, "restore the node from a backup", "%s", truncatedDetail(te))
		f.Path = te.Path
		c.add(f)
		c.noteBadNode(te.Path)
		return nil
	})
	if err != nil {
		return fmt.Errorf("check metadata: %w", err)
	}
	c.keepOwnedNodeFindings(start)
	c.endFingerprint()
	return nil
}

// noteBadNode records that the node at path exists but cannot be read, so its
// ledger or owner is not reported again under another kind.
func (c *checker) noteBadNode(path string) {
	switch formats.ClassifyPath(path) {
	case formats.NodeLedgerMetadata:
		id, _ := formats.ParseLedgerPath(path)
		f := c.fact(id)
		f.node, f.badNode = true, true
		c.stats.LedgerNodes++
	case formats.NodeManagedLedger:
		t, _ := formats.ParseManagedLedgerPath(path)
		c.badMLs[t.ManagedLedgerName()] = true
	case formats.NodeSchemaLocator:
		t, _ := formats.ParseSchemaLocatorPath(path)
		c.badSchemas[t.SchemaKey()] = true
	case formats.NodeCursor:
		t, cursor, _ := formats.ParseCursorPath(path)
		c.badCursors[t.ManagedLedgerName()+"/"+cursor] = true
		if name, err := formats.DecodeTopicLocalName(cursor); err == nil {
			c.badCursors[t.ManagedLedgerName()+"/"+name] = true // as pulsar/cursor holds it
		}
	}
}

func (c *checker) undecodable(n store.Node, kind formats.NodeKind, err error) {
	f := newFinding(KindNodeUndecodable, "node "+n.Path, "inspect it with: ledgermedic inspect node "+n.Path,
		"%s node (%d bytes) does not decode: %v", kind, len(n.Value), err)
	f.Path = n.Path
	c.add(f)
	c.noteBadNode(n.Path)
}

// decodeChecked decodes a node and insists on its required fields: a node
// missing them would be rejected by the broker too.
func decodeChecked(n store.Node) (formats.DecodedNode, error) {
	d, err := formats.DecodeNode(n.Path, n.Value)
	if err != nil {
		return d, err
	}
	if d.Message != nil {
		if err := proto.CheckInitialized(d.Message); err != nil {
			return d, fmt.Errorf("node %s: %w", n.Path, err)
		}
	}
	return d, nil
}

func (c *checker) node(n store.Node) {
	kind := formats.ClassifyPath(n.Path)
	if kind == formats.NodeOther {
		return
	}
	d, err := decodeChecked(n)
	if err != nil {
		c.undecodable(n, kind, err)
		return
	}
	switch m := d.Message.(type) {
	case *mlpb.ManagedLedgerInfo:
		c.stats.ManagedLedgers++
		t, _ := formats.ParseManagedLedgerPath(n.Path)
		c.managedLedger(t, n.Path, m)
	case *mlpb.ManagedCursorInfo:
		c.stats.Cursors++
		if id := m.GetCursorsLedgerId(); id >= 0 {
			f := c.fact(id)
			f.refs |= refCursor
			if t, _, ok := formats.ParseCursorPath(n.Path); ok {
				c.referredBy(f, t)
			}
		}
	case *schemapb.SchemaLocator:
		c.stats.SchemaLocators++
		t, _ := formats.ParseSchemaLocatorPath(n.Path)
		c.schemaLocator(t, n.Path, m)
	case *bkpb.LedgerMetadataFormat:
		c.stats.LedgerNodes++
		id, _ := formats.ParseLedgerPath(n.Path)
		c.ledgerNode(id, m)
	}
}

func (c *checker) managedLedger(t formats.TopicName, path string, info *mlpb.ManagedLedgerInfo) {
	_, indexed := cluster.HasMLIndex(info)
	ml := &mlFacts{topic: t.String(), path: path, indexProp: indexed, owned: c.ownsTopic(t)}
	ml.withEntries, ml.covered = cluster.Coverage(info, c.opts.FirstEntryIndexKey)
	for i, li := range info.GetLedgerInfo() {
		id := li.GetLedgerId()
		f := c.fact(id)
		f.refs |= refLedgerInfo
		c.referredBy(f, t)
		f.openLast = f.openLast || cluster.IsOpen(info, i)
		f.offloadedGone = f.offloadedGone || cluster.OffloadedAway(li)
		ml.ledgers = append(ml.ledgers, mlLedger{id: id, entries: li.GetEntries()})
	}
	c.mls = append(c.mls, ml)
}

func (c *checker) schemaLocator(t formats.TopicName, path string, loc *schemapb.SchemaLocator) {
	for _, ie := range locatorVersions(loc) {
		c.stats.SchemaVersions++
		id := ie.GetPosition().GetLedgerId()
		f := c.fact(id)
		f.refs |= refSchema
		c.referredBy(f, t)
		c.schemas = append(c.schemas, schemaVersion{
			key: t.SchemaKey(), topic: t.String(), path: path, version: ie.GetVersion(),
			ledger: id, entry: ie.GetPosition().GetEntryId(), hash: ie.GetHash(), owned: c.ownsTopic(t),
		})
	}
}

// locatorVersions returns every version a locator names, ascending and once each:
// the index, plus info when the index lacks it.
func locatorVersions(loc *schemapb.SchemaLocator) []*schemapb.IndexEntry {
	out := slices.Clone(loc.GetIndex())
	if info := loc.GetInfo(); info != nil && !slices.ContainsFunc(out, func(ie *schemapb.IndexEntry) bool {
		return ie.GetVersion() == info.GetVersion()
	}) {
		out = append(out, info)
	}
	slices.SortStableFunc(out, func(a, b *schemapb.IndexEntry) int {
		switch {
		case a.GetVersion() < b.GetVersion():
			return -1
		case a.GetVersion() > b.GetVersion():
			return 1
		}
		return 0
	})
	return slices.CompactFunc(out, func(a, b *schemapb.IndexEntry) bool { return a.GetVersion() == b.GetVersion() })
}

// intern keeps one copy of strings that many ledgers share (component, owner).
func (c *checker) intern(s string) string {
	if v, ok := c.strings[s]; ok {
		return v
	}
	c.strings[s] = s
	return s
}

func (c *checker) ledgerNode(id int64, m *bkpb.LedgerMetadataFormat) {
	f := c.fact(id)
	f.node = true
	f.lastEntryID = m.GetLastEntryId()
	// BookKeeper keeps lastEntryId -1 (and length 0) until a ledger holds an entry
	// and is closed: such a ledger may rightly have no entries.
	f.metaEmpty = (m.LastEntryId != nil && m.GetLastEntryId() < 0) || (m.LastEntryId == nil && m.GetLength() == 0)
	f.closed = m.GetState() == bkpb.LedgerMetadataFormat_CLOSED
	component, _ := formats.CustomMetadata(m, cluster.CustomComponent)
	f.component = c.intern(component)
	switch f.component {
	case cluster.ComponentML:
		owner, _ := formats.CustomMetadata(m, cluster.CustomManagedLedger)
		f.owner = c.intern(owner)
		f.cursorName, f.cursorLedger = formats.CustomMetadata(m, cluster.CustomCursor)
	case cluster.ComponentSchema:
		owner, _ := formats.CustomMetadata(m, cluster.CustomSchemaID)
		f.owner = c.intern(owner)
	}
}

// scanLedgers reads every entry once, in one pass over the ledger store
// (entryPass): counts per ledger, CRC and frame checks of topic entries, whether
// entry 0 carries a broker index, and truncated values; with opts.SchemaUsage,
// the schema-usage count of every stored message in the same pass.
func (c *checker) scanLedgers(ctx context.Context) error {
	p := &entryPass{dd: c.dd, workers: scanWorkers(c.opts.Workers), prog: c.prog, check: c}
	if c.sharded() {
		p.ranges = c.shardRanges(p.workers)
	} else {
		p.ranges = wholeStoreRanges(c.dd, p.workers)
	}
	if c.opts.SchemaUsage {
		topics, ledgers, _, err := usageTargets(ctx, c.dd.Metadata, nil, c.ownsTopic)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		c.usageTopics = topics
		p.usage = newUsageScan(topics, ledgers, DefaultMaxListedBadEntries)
	}
	// The total comes from the store's own figures, not a counting pass.
	if n, ok := c.dd.EstimateEntries(); ok {
		report.StartEstimate(c.prog, "entries", n)
	} else {
		c.prog.Start("entries", 0)
	}
	defer c.prog.Done()
	if err := p.run(ctx); err != nil {
		return fmt.Errorf("check ledgers: %w", err)
	}
	c.usage = p.usage
	return nil
}

// mergeRange takes in what one range of the pass found, in key order.
// A ledger a sharded check read only for its topics' sake adds its facts, not
// its counts or findings (the workers count and report only the shard's own).
func (c *checker) mergeRange(r *rangeResult) {
	for _, s := range r.segs {
		f := c.fact(s.id)
		f.stored += s.stored
		f.entry0Indexed = f.entry0Indexed || s.entry0Indexed
		if c.ownsLedger(s.id) {
			c.stats.Ledgers++
		}
	}
	c.stats.Entries += r.entries
	c.stats.EntryBytes += r.entryBytes
	c.stats.TopicEntries += r.topicEntries
	for _, f := range r.findings {
		if f.LedgerID != nil {
			c.major = *f.LedgerID
		}
		c.add(f)
	}
}

// maxEntryFindingsPerLedger bounds the per-entry findings of one kind listed for
// one ledger: a wholly corrupt ledger gives this many and one summary, so
// memory stays flat however many entries are bad.
const maxEntryFindingsPerLedger = 20

// addEntryFinding lists fd unless its ledger already has the maximum of its kind;
// then it is only counted, for flushUnlisted.
func (w *passWorker) addEntryFinding(fd report.Finding) {
	if !w.counted {
		return // another shard's ledger: it reports the finding
	}
	if w.entryListed[fd.Kind] < maxEntryFindingsPerLedger {
		w.entryListed[fd.Kind]++
		w.out.findings = append(w.out.findings, fd)
		return
	}
	w.entryUnlisted[fd.Kind]++
}

// flushUnlisted adds one summary finding per kind whose findings in ledger id
// were not all listed (when the ledger is counted), and resets the per-ledger counts.
func (w *passWorker) flushUnlisted(id int64, counted bool) {
	for _, kind := range []string{KindEntryUndecodable, KindEntryCRCMismatch, KindValueTruncated} {
		if n := w.entryUnlisted[kind]; n > 0 && counted {
			fd := newFinding(kind, ledgerLoc(id), "inspect the ledger with: ledgermedic inspect entries --ledger "+strconv.FormatInt(id, 10),
				"%s of this ledger had this problem too (only the first %d are listed)", plural(n, "more entry", "more entries"), maxEntryFindingsPerLedger)
			fd.LedgerID = report.Int64(id)
			w.out.findings = append(w.out.findings, fd)
		}
	}
	clear(w.entryListed)
	clear(w.entryUnlisted)
}

// topicEntry checks one entry of a topic ledger; r and err are what decode made of it.
func (w *passWorker) topicEntry(ledgerID, entryID int64, v []byte, r *formats.EntryRefs, err error) {
	if w.counted {
		w.out.topicEntries++
	}
	if err != nil {
		fd := newFinding(KindEntryUndecodable, entryLoc(ledgerID, entryID), "inspect it with: "+entriesHint(ledgerID, entryID),
			"%v", err)
		fd.LedgerID, fd.EntryID = report.Int64(ledgerID), report.Int64(entryID)
		w.addEntryFinding(fd)
		return
	}
	if !r.HasChecksum && r.BatchFramingCheckable && batchFramingBroken(w, ledgerID, entryID, v, r) {
		return
	}
	if r.HasChecksum && !r.ChecksumOK {
		fd := newFinding(KindEntryCRCMismatch, entryLoc(ledgerID, entryID), "inspect it with: "+entriesHint(ledgerID, entryID),
			"stored CRC32C %08x does not match the entry's %d bytes from offset %d", r.Checksum, len(v)-r.MetadataOffset, r.MetadataOffset)
		fd.LedgerID, fd.EntryID = report.Int64(ledgerID), report.Int64(entryID)
		w.addEntryFinding(fd)
	}
	if entryID == 0 && r.HasIndex {
		w.seg.entry0Indexed = true
	}
}

// batchFramingBroken checks an entry without a checksum, whose damage nothing else
// would show, against its batch framing (message count and sizes), and reports an
// undecodable entry when the records do not consume the payload exactly.
func batchFramingBroken(w *passWorker, ledgerID, entryID int64, v []byte, r *formats.EntryRefs) bool {
	err := formats.CheckBatchFraming(r.Payload, int(r.NumMessages))
	if err == nil {
		return false
	}
	fd := newFinding(KindEntryUndecodable, entryLoc(ledgerID, entryID), "the entry has no checksum and its batch is cut or overwritten; inspect it with: "+entriesHint(ledgerID, entryID),
		"%d-byte entry: payload at offset %d (%d bytes): %v", len(v), len(v)-len(r.Payload), len(r.Payload), err)
	fd.LedgerID, fd.EntryID = report.Int64(ledgerID), report.Int64(entryID)
	w.addEntryFinding(fd)
	return true
}

func entriesHint(ledgerID, entryID int64) string {
	return fmt.Sprintf("ledgermedic inspect entries --ledger %d --from %d --to %d", ledgerID, entryID, entryID)
}

// checkLedgers compares each ledger's node with its entries and its referrers.
func (c *checker) checkLedgers(context.Context) error {
	for _, id := range c.sortedLedgerIDs() {
		f := c.ledgers[id]
		if f.offloadedGone || !c.ownsLedger(id) {
			continue // offloaded to tiered storage and deleted from BookKeeper: as expected
		}
		c.major = id
		path := formats.LedgerPath(id)
		orphan := f.node && !f.badNode && f.refs == 0 && c.ownedByPulsar(f)
		if c.live && f.node && !f.badNode {
			if fd, ok := openLedgerFinding(id, path, f); ok {
				c.add(fd)
			}
		}
		probe, lost := c.notOnBookies[id]
		switch {
		case lost && f.refs&refSchema == 0:
			c.add(notOnBookiesFinding(id, path, f, probe))
		case lost:
			// A schema version's ledger: schema-entry-lost already names the
			// version and its repair, as for a data dir's ledger node without
			// entries below.
		case orphan && c.live && f.component == cluster.ComponentSchema:
			// On a live cluster an unreferenced schema ledger is the expected
			// leftover of concurrent first puts of one schema: each broker created
			// a ledger and one locator write won (fixed in later Pulsar releases).
			fd := newFinding(KindOrphanSchemaLedger, ledgerLoc(id), "expected on clusters that ran Pulsar before pulsar#25514; keep it until repairs are done, it may hold a lost schema",
				"schema ledger of %q (%s) is referenced by no schema locator: concurrent first puts of a schema each created a ledger and one locator won (before pulsar#25514)",
				f.owner, plural(f.stored, "entry", "entries"))
			fd.LedgerID, fd.Path = report.Int64(id), path
			c.add(fd)
		case orphan:
			fd := newFinding(KindOrphanLedger, ledgerLoc(id), "nothing points at it; keep it until repairs are done, it may hold a lost schema or topic data",
				"%s ledger of %q (%s) is referenced by no LedgerInfo, schema locator or cursor", f.component, f.owner, plural(f.stored, "entry", "entries"))
			fd.LedgerID, fd.Path = report.Int64(id), path
			c.add(fd)
		case f.node && c.unreachable[id]:
			// Every bookie asked failed: the bookie-unavailable findings say
			// so; that the store holds fewer entries proves nothing lost.
		case f.node && !f.badNode && f.stored == 0 && !f.metaEmpty && !f.openLast && f.refs&refSchema == 0:
			fd := newFinding(KindLedgerNodeWithoutEntries, ledgerLoc(id), "the ledger's entries are lost; restore them from a bookie replica",
				"ledger node %s exists (lastEntryId %d) but the ledger store holds no entry of it", path, f.lastEntryID)
			fd.LedgerID, fd.Path = report.Int64(id), path
			c.add(fd)
		case !f.node && f.stored > 0:
			fd := newFinding(KindEntriesWithoutNode, ledgerLoc(id), "BookKeeper will not serve a ledger without metadata; recreate "+path+" or remove the entries",
				"%s stored but ledger node %s does not exist", plural(f.stored, "entry is", "entries are"), path)
			fd.LedgerID, fd.Path = report.Int64(id), path
			c.add(fd)
		case f.node && !f.badNode && f.closed && f.stored > 0 && f.lastEntryID+1 > f.stored:
			fd := newFinding(KindLedgerEntriesMissing, ledgerLoc(id), "the missing entries are lost; restore them from a bookie replica",
				"closed ledger has lastEntryId %d (%d entries) but the ledger store holds %d", f.lastEntryID, f.lastEntryID+1, f.stored)
			fd.LedgerID, fd.Path = report.Int64(id), path
			c.add(fd)
		}
	}
	return nil
}

// ownedByPulsar reports whether a ledger's custom metadata says a topic or a schema
// owns it, and that owner's metadata decoded (else it cannot be known unreferenced).
func (c *checker) ownedByPulsar(f *ledgerFacts) bool {
	switch f.component {
	case cluster.ComponentML:
		if f.cursorLedger && c.badCursors[f.owner+"/"+f.cursorName] {
			return false
		}
		return !c.badMLs[f.owner]
	case cluster.ComponentSchema:
		return !c.badSchemas[f.owner]
	}
	return false
}

// checkManagedLedgers reports LedgerInfos of lost ledgers and, per indexed topic,
// how many LedgerInfos lack firstEntryIndex; it fills the coverage table.
func (c *checker) checkManagedLedgers(context.Context) error {
	for i, ml := range c.mls {
		if !ml.owned {
			continue
		}
		c.major = int64(i)
		ids := make([]int64, len(ml.ledgers))
		for i, l := range ml.ledgers {
			ids[i] = l.id
		}
		by, _ := cluster.TopicIndexed(ml.indexProp, ids, func(id int64) (bool, error) { return c.ledgers[id].entry0Indexed, nil })
		indexed := by != cluster.NotIndexed
		withEntries, covered := ml.withEntries, ml.covered
		for _, l := range ml.ledgers {
			f := c.ledgers[l.id]
			if !f.offloadedGone && f.presence().Lost() {
				fd := newFinding(KindLedgerMissing, ml.topic+" "+ledgerLoc(l.id), "the ledger's messages are lost; remove the LedgerInfo only after confirming no bookie holds the ledger",
					"LedgerInfo names ledger %d (%s) but it has neither a node nor entries", l.id, plural(l.entries, "entry", "entries"))
				fd.Topic, fd.Path, fd.LedgerID = ml.topic, ml.path, report.Int64(l.id)
				c.add(fd)
			}
		}
		tc := TopicCoverage{Topic: ml.topic, Path: ml.path, Indexed: indexed, WithEntries: withEntries, Covered: covered}
		if c.sharded() {
			tc.Order = findingOrder(stepManagedLedgers, c.major, "")
		}
		c.stats.Coverage = append(c.stats.Coverage, tc)
		if lacking := withEntries - covered; indexed && lacking > 0 {
			hint := "ledgermedic index backfill --topic " + ml.topic
			if c.opts.FirstEntryIndexKey != cluster.FirstEntryIndexKey {
				hint += " --index-key " + c.opts.FirstEntryIndexKey
			}
			fd := newFinding(KindFirstEntryIndexMissing, ml.topic, hint+" (then find-by-offset reads one ledger, not all)",
				"%d of %d ledgers with entries have no %s property", lacking, withEntries, c.opts.FirstEntryIndexKey)
			fd.Topic, fd.Path = ml.topic, ml.path
			c.add(fd)
		}
	}
	return nil
}

// checkSchemas reads the entry of every schema version the locators name.
func (c *checker) checkSchemas(context.Context) error {
	c.prog.Start("schema versions", int64(len(c.schemas)))
	defer c.prog.Done()
	for i, sv := range c.schemas {
		c.prog.Add(1)
		if !sv.owned {
			continue
		}
		c.major = int64(i)
		st, detail, _, err := schemaState(c.dd.Ledgers, c.ledgers[sv.ledger], sv)
		if err != nil {
			return fmt.Errorf("check %s: %w", schemaLoc(sv.key, sv.version), err)
		}
		var kind string
		switch st {
		case StateLedgerLost:
			kind = KindSchemaLedgerLost
		case StateEntryLost:
			kind = KindSchemaEntryLost
		case StateUndecodable:
			kind = KindSchemaEntryUndecodable
		case StateHashMismatch:
			kind = KindSchemaHashMismatch
		default:
			continue
		}
		fd := newFinding(kind, schemaLoc(sv.key, sv.version), schemaRepairHint(sv.topic),
			"ledger %d entry %d: %s", sv.ledger, sv.entry, detail)
		fd.Topic, fd.Path = sv.topic, sv.path
		fd.LedgerID, fd.EntryID, fd.Version = report.Int64(sv.ledger), report.Int64(sv.entry), report.Int64(sv.version)
		c.add(fd)
	}
	return nil
}

// Schema version states shown by the schemas view and used by Check.
const (
	StateOK           = "ok"
	StateLedgerLost   = "ledger-lost"   // neither ledger node nor entries
	StateEntryLost    = "entry-lost"    // the ledger exists but not the entry
	StateUndecodable  = "undecodable"   // the entry is not a SchemaEntry holding a SchemaInfo
	StateHashMismatch = "hash-mismatch" // SHA-256 of the stored definition differs from the locator's
	StateTruncated    = "truncated"     // the entry's value is damaged in the store
	StateNodeLost     = "node-lost"     // the entry is intact but the ledger node is gone (Check: entries-without-node)
)

// schemaState reads one schema version's entry and says what state it is in,
// with a one-line detail and the SchemaInfo when it decoded. f is what is known
// of the version's ledger: whether its node exists and whether it has entries.
// A read that fails for another reason than lost or damaged data is an error,
// not a state: the schema may be fine, and a repair must not be suggested.
func schemaState(ls store.LedgerStore, f *ledgerFacts, sv schemaVersion) (state, detail string, info *schemapb.SchemaInfo, err error) {
	if f.presence().Lost() {
		return StateLedgerLost, "the schema ledger has neither a node nor entries", nil, nil
	}
	v, err := ls.Entry(sv.ledger, sv.entry)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return StateEntryLost, "the schema ledger exists but this entry is gone", nil, nil
	case errors.Is(err, store.ErrTruncatedValue):
		return StateTruncated, err.Error(), nil, nil
	case err != nil:
		return "", "", nil, err
	}
	info, err = decodeSchemaValue(v)
	if err != nil {
		return StateUndecodable, err.Error(), nil, nil
	}
	if !info.GetDeleted() || len(sv.hash) != 0 {
		if got := formats.SchemaHash(info.GetSchema()); !bytes.Equal(got, sv.hash) {
			return StateHashMismatch, fmt.Sprintf("stored definition hashes to %x, locator says %x", got, sv.hash), info, nil
		}
	}
	if !f.node {
		return StateNodeLost, "the entry is readable but the ledger node is gone: BookKeeper will not serve it", info, nil
	}
	if info.GetDeleted() {
		return StateOK, "deleted (tombstone)", info, nil
	}
	return StateOK, "", info, nil
}

// decodeSchemaValue decodes a schema ledger entry down to its SchemaInfo.
func decodeSchemaValue(v []byte) (*schemapb.SchemaInfo, error) {
	se, err := formats.DecodeSchemaEntry(v)
	if err != nil {
		return nil, err
	}
	if se.SchemaData == nil {
		return nil, fmt.Errorf("schema entry: no schema_data")
	}
	info, err := formats.DecodeSchemaInfo(se.GetSchemaData())
	if err != nil {
		return nil, err
	}
	if err := proto.CheckInitialized(info); err != nil {
		return nil, fmt.Errorf("schema info: %w", err)
	}
	return info, nil
}

// plural returns "1 entry" or "n entries".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}
