package inspect

import (
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
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/internal/spill"
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
	OnUsage func(*UsageRun)
	// Workers read the ledger store in parallel; 0 means GOMAXPROCS. The result
	// does not depend on it.
	Workers int
	// Shard, when N > 0, makes Check do one shard's part of the whole check
	// (shard.go): the findings, coverage rows and entry counts of what the shard
	// owns, each finding stamped with its Order, so that the shards' results
	// merged (MergeShardFindings) are the whole check's.
	Shard cluster.Shard
	// SpillDir is where the check keeps what it learns per ledger, topic and
	// finding while it runs (internal/spill); "" is $TMPDIR.
	SpillDir string
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
	t := s.coverageTable()
	for _, tc := range s.Coverage {
		t.Add(s.coverageCells(tc)...)
	}
	return t
}

// CoverageTableOf renders the coverage rows each yields as the table prints
// (a big cluster's are on disk: CheckRun.Coverage).
func (s *CheckStats) CoverageTableOf(each func(yield func(TopicCoverage) error) error) *report.Table {
	return s.coverageTable().StreamCells(func(yield func(values ...any) error) error {
		return each(func(tc TopicCoverage) error { return yield(s.coverageCells(tc)...) })
	})
}

// coverageTable is the coverage table without rows; a sharded check's has
// an order column.
func (s *CheckStats) coverageTable() *report.Table {
	cols := []string{"TOPIC", "topic", "INDEXED", "indexed", "LEDGERS WITH ENTRIES", "ledgers_with_entries",
		"WITH PROPERTY", "ledgers_with_property", "COVERAGE %", "coverage_pct"}
	if s.Fingerprint != "" {
		cols = append(cols, "ORDER", "order")
	}
	return report.NewTable("coverage", "firstEntryIndex coverage", cols...)
}

func (s *CheckStats) coverageCells(tc TopicCoverage) []any {
	var pct any
	if p, ok := tc.Percent(); ok {
		pct = p
	}
	if s.Fingerprint != "" {
		return []any{tc.Topic, tc.Indexed, tc.WithEntries, tc.Covered, pct, tc.Order}
	}
	return []any{tc.Topic, tc.Indexed, tc.WithEntries, tc.Covered, pct}
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

// ledgerFacts is what Check knows of one ledger at a time: from its node, from
// the metadata that refers to it, and from its entries.
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
	// Who to tell what became of the ledger: the LedgerInfos and schema
	// versions (ordinals) that name it, and the topics whose schema usage
	// counts its entries.
	liRefs []liRef
	svRefs []svRef
	usage  []usageRef
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

// checker is one run of Check. What it learns per ledger, managed ledger and
// schema version goes to its spill dir as the steps go (checkspill.go), never
// to maps that grow with the cluster.
type checker struct {
	dd    *datadir.DataDir
	opts  CheckOptions
	prog  report.Progress
	stats CheckStats

	spill *spill.Dir
	out   *findingSink
	// The metadata walk's records: by ledger (every node's word on a ledger,
	// sorted by id), and the managed ledgers and schema versions in walk order.
	byLedger *spill.Sorter
	mls      *spill.File
	svs      *spill.File
	nMLs     uint64
	nSVs     uint64
	// facts is each ledger's records folded into one, by id.
	facts *spill.File
	// segs is what the entry pass found per ledger, by id.
	segs *spill.Sorter
	// What checkLedgers found of the ledgers each LedgerInfo and schema version
	// names, by their ordinals: the answers the later steps read in walk order.
	mlAnswers *spill.Sorter
	svAnswers *spill.Sorter
	coverage  *spill.File
	// What the schema step found of each version, by schema key, for the
	// schema-usage join (versions.go).
	versionSort *spill.Sorter
	// Owners whose metadata does not decode: their ledgers are not called
	// orphans. As many as damaged nodes, so few.
	badMLs     map[string]bool
	badSchemas map[string]bool
	badCursors map[string]bool // ml name + "/" + cursor name as stored
	// The schema-usage count of the pass, with opts.SchemaUsage.
	usage *usageScan
	// live: the ledger store is a running cluster's whose replicas can each be
	// asked (store.ReplicaProber); notOnBookies are the ledgers its probe found
	// on no bookie, unreachable those no bookie asked answered for: as many as
	// failures, so few.
	live         bool
	notOnBookies map[int64]*ledgerProbe
	unreachable  map[int64]bool
	// Scratch for a record and its key, kept at their grown size: the walk
	// encodes several records a node, each copied by the spill it goes to.
	buf enc
	key []byte
	// A sharded check's walk state (shard.go).
	shardWalk
}

// Budgets of the spill sorters: what each holds in memory before it writes a
// sorted run.
const (
	byLedgerBudget = 16 << 20
	answerBudget   = 4 << 20
)

// Check reads the whole data dir once, cross-checks metadata against ledgers and
// returns the findings (errors and warnings first, then info) and what it
// scanned, the coverage rows included. It holds every finding and row: for
// tests and small clusters; RunCheck keeps them on disk.
func Check(ctx context.Context, dd *datadir.DataDir, opts CheckOptions, prog report.Progress) ([]report.Finding, *CheckStats, error) {
	run, err := RunCheck(ctx, dd, opts, prog)
	if err != nil {
		return nil, nil, err
	}
	defer run.Close()
	return run.collect(ctx)
}

// collect reads a run's findings and coverage rows into memory.
func (r *CheckRun) collect(ctx context.Context) ([]report.Finding, *CheckStats, error) {
	var fs []report.Finding
	if err := r.Findings(ctx, func(f report.Finding) error { fs = append(fs, f); return nil }); err != nil {
		return nil, nil, err
	}
	stats := r.Stats
	if err := r.Coverage(ctx, func(tc TopicCoverage) error { stats.Coverage = append(stats.Coverage, tc); return nil }); err != nil {
		return nil, nil, err
	}
	return fs, &stats, nil
}

// RunCheck is Check in memory that does not grow with the cluster: the
// findings and coverage rows stay on disk (under opts.SpillDir) until the
// run's Close.
func RunCheck(ctx context.Context, dd *datadir.DataDir, opts CheckOptions, prog report.Progress) (*CheckRun, error) {
	opts.FirstEntryIndexKey = cluster.KeyFor(opts.FirstEntryIndexKey)
	if prog == nil {
		prog = report.NoProgress{}
	}
	c, err := newChecker(dd, opts, prog)
	if err != nil {
		return nil, err
	}
	if err := c.run(ctx); err != nil {
		c.spill.Close()
		return nil, err
	}
	return &CheckRun{Stats: c.stats, dir: c.spill, out: c.out, cover: c.coverage, dd: dd}, nil
}

func (c *checker) run(ctx context.Context) error {
	steps := []func(context.Context) error{c.scanMetadata, c.scanLedgers, c.probeReplicas, c.checkLedgers, c.checkManagedLedgers, c.checkSchemas}
	for i, step := range steps {
		c.step = stepOf[i]
		if err := step(ctx); err != nil {
			return err
		}
		if err := c.out.err(); err != nil {
			return err
		}
	}
	c.step = stepSources
	for i, src := range c.opts.Sources {
		fs, err := src(ctx, c.dd)
		if err != nil {
			return fmt.Errorf("check source %d: %w", i+1, err)
		}
		c.addSourced(fs)
	}
	if c.usage != nil {
		if err := c.usageFindings(ctx); err != nil {
			return err
		}
	}
	c.step = stepStoreDamage
	c.addSourced(StoreDamageFindings(c.dd))
	return c.out.err()
}

func newChecker(dd *datadir.DataDir, opts CheckOptions, prog report.Progress) (*checker, error) {
	live := false
	if dd != nil {
		_, live = dd.Ledgers.(store.ReplicaProber)
	}
	d, err := spill.Open(opts.SpillDir)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	c := &checker{
		dd: dd, opts: opts, prog: prog, live: live, notOnBookies: map[int64]*ledgerProbe{}, unreachable: map[int64]bool{},
		spill:      d,
		out:        newFindingSink(d),
		byLedger:   d.NewSorter("by-ledger", byLedgerBudget),
		segs:       d.NewSorter("ledger-entries", answerBudget),
		mlAnswers:  d.NewSorter("ledgerinfo-answers", answerBudget),
		svAnswers:  d.NewSorter("schema-answers", answerBudget),
		badMLs:     map[string]bool{},
		badSchemas: map[string]bool{},
		badCursors: map[string]bool{},
	}
	if opts.SchemaUsage {
		c.usage = newUsageScan(d, DefaultMaxListedBadEntries)
	}
	for _, f := range []struct {
		to   **spill.File
		what string
	}{{&c.mls, "managed-ledgers"}, {&c.svs, "schema-versions"}, {&c.facts, "ledger-facts"}, {&c.coverage, "coverage"}} {
		if *f.to, err = d.NewFile(f.what); err != nil {
			d.Close()
			return nil, fmt.Errorf("check: %w", err)
		}
	}
	return c, nil
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

// add adds a finding of the step running, at c.major.
func (c *checker) add(f report.Finding) { c.addAt(f, c.major, "") }

// addAt adds a finding of the step running at a place in it (a sharded check
// stamps it as its Order).
func (c *checker) addAt(f report.Finding, major int64, minor string) {
	if c.sharded() {
		f.Order = findingOrder(c.step, major, minor)
	}
	c.out.add(f, c.step, major, minor)
}

// scanLedgers reads every entry once, in one pass over the ledger store
// (entryPass): counts per ledger, CRC and frame checks of topic entries, whether
// entry 0 carries a broker index, and truncated values; with opts.SchemaUsage,
// the schema-usage count of every stored message in the same pass.
func (c *checker) scanLedgers(ctx context.Context) error {
	p := &entryPass{dd: c.dd, workers: scanWorkers(c.opts.Workers), prog: c.prog, check: c}
	if c.sharded() {
		feed, err := c.shardRanges(ctx, p.workers)
		if err != nil {
			return err
		}
		p.feed = feed
	} else {
		p.feed = wholeStoreRanges(c.dd, p.workers)
	}
	p.usage = c.usage
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
	return nil
}

// addSeg writes down what the entry pass found of one ledger.
func (c *checker) addSeg(s ledgerSeg) error {
	if err := c.segs.Add(idKey(nil, s.id), enc(nil).uint(uint64(s.stored)).flags(s.entry0Indexed)); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	return nil
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
		w.p.check.addAt(fd, *fd.LedgerID, "")
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
			w.p.check.addAt(fd, id, "")
		}
	}
	clear(w.entryListed)
	clear(w.entryUnlisted)
}

// topicEntry checks one entry of a topic ledger; r and err are what decode made of it.
func (w *passWorker) topicEntry(ledgerID, entryID int64, v []byte, r *formats.EntryRefs, err error) {
	if w.counted {
		w.counts.topicEntries++
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
	a := svAnswer{node: f.node, entries: f.stored > 0}
	var ent *svEntryAnswer
	if !f.presence().Lost() {
		v, err := ls.Entry(sv.ledger, sv.entry)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case errors.Is(err, store.ErrTruncatedValue):
			ent = &svEntryAnswer{state: StateTruncated, detail: err.Error()}
		case err != nil:
			return "", "", nil, err
		default:
			ent = &svEntryAnswer{}
			ent.state, ent.detail, info = schemaEntryState(v, sv.hash)
		}
	}
	state, detail = schemaStateOf(a, ent)
	return state, detail, info, nil
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
