package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/report"
	htmlreport "github.com/ledgermedic/ledgermedic/report/html"
	"github.com/ledgermedic/ledgermedic/store"
)

// IncidentOptions configures Incident.
type IncidentOptions struct {
	// Topics limits the timelines, schemas and findings to these topics (a base
	// name takes all its partitions); empty means every topic.
	Topics []formats.TopicName
	// FirstEntryIndexKey as in CheckOptions.
	FirstEntryIndexKey string
	// SkipMessageScan skips the schema-usage pass (as check --skip-message-scan):
	// schema versions then show no message counts.
	SkipMessageScan bool
	// JournalDir is the data dir's journal; "" when there is none (stores from URLs).
	JournalDir string
	Now        time.Time
	Version    string
}

// Incident gathers the incident report from the results of Check (with its
// schema-usage source, the same scans `check` makes), one walk of the metadata
// for what Check keeps to itself (ledger times, LedgerInfos, locator versions),
// and the journal. Failures to read become Problems in the report: a report is
// made of whatever can be read.
func Incident(ctx context.Context, dd *datadir.DataDir, opts IncidentOptions, prog report.Progress) (*htmlreport.Report, error) {
	opts.FirstEntryIndexKey = cluster.KeyFor(opts.FirstEntryIndexKey)
	r := &htmlreport.Report{GeneratedAt: opts.Now, Version: opts.Version}
	if dd == nil {
		return r, nil
	}
	r.DataDir, r.Notes = dd.Path, slices.Clone(dd.Notes)
	for _, s := range dd.Sources {
		r.Sources = append(r.Sources, htmlreport.Source{URL: s.URL, Kind: s.Kind, ReadOnly: s.ReadOnly,
			Zxid: s.Zxid, Revision: s.Revision, AsOf: s.AsOf, Notes: s.Notes})
	}
	var usage *UsageRun
	copts := CheckOptions{FirstEntryIndexKey: opts.FirstEntryIndexKey}
	if opts.SkipMessageScan {
		r.Notes = append(r.Notes, "the message scan was skipped (--skip-message-scan): schema versions show no message counts")
	} else {
		copts.SchemaUsage = true
		copts.OnUsage = func(u *UsageRun) { usage = u }
	}
	var (
		fs    []report.Finding
		stats *CheckStats
	)
	run, err := RunCheck(ctx, dd, copts, prog)
	if err == nil {
		defer run.Close() // the usage is the run's
		fs, stats, err = run.collect(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		r.Problems = append(r.Problems, "check could not read the stores: "+err.Error())
	}
	if stats != nil {
		r.Stats = statLines(stats)
	}
	g := newGatherer(dd, opts, usage)
	if err := g.walk(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		r.Problems = append(r.Problems, "the metadata store could not be read: "+err.Error())
	}
	g.journal(r) // before the schema states: they show which versions a repair restored
	if err := g.schemaStates(ctx); err != nil {
		r.Problems = append(r.Problems, "schema versions could not be read: "+err.Error())
	}
	g.coverage(stats)
	g.place(fs)
	r.Topics, r.Loose = g.topics(), g.loose
	r.Findings, r.HiddenFindings = g.filterFindings(fs)
	r.Problems = append(r.Problems, g.problems...)
	r.Problems = append(r.Problems, g.emptiness(stats)...)
	return r, nil
}

func statLines(s *CheckStats) []htmlreport.Stat {
	return []htmlreport.Stat{
		{Name: "metadata nodes", Count: s.Nodes}, {Name: "managed ledgers", Count: s.ManagedLedgers},
		{Name: "cursors", Count: s.Cursors}, {Name: "schema locators", Count: s.SchemaLocators},
		{Name: "schema versions", Count: s.SchemaVersions}, {Name: "ledger nodes", Count: s.LedgerNodes},
		{Name: "ledgers with entries", Count: s.Ledgers}, {Name: "entries", Count: s.Entries},
		{Name: "entry bytes", Count: s.EntryBytes},
	}
}

// incidentNode is what the report needs of one ledger node.
type incidentNode struct {
	ctime     int64
	component string
	owner     string // managed-ledger name or schema key
	entries   int64  // lastEntryId+1
	size      int64
}

type incidentTopic struct {
	name   formats.TopicName // base
	lanes  []*htmlreport.Lane
	schema *htmlreport.Schema
}

type gatherer struct {
	dd    *datadir.DataDir
	opts  IncidentOptions
	usage *UsageRun
	// problems are what the gatherer could not read.
	problems []string

	nodes    map[int64]incidentNode
	topicsBy map[string]*incidentTopic // by base topic name
	laneByML map[string]*htmlreport.Lane
	locators []locatorVersions2
	loose    []htmlreport.Ledger
	// restored maps schema key and version to the run that restored it.
	restored map[string]restoredBy
}

type locatorVersions2 struct {
	key  string
	loc  *schemapb.SchemaLocator
	base formats.TopicName
}

type restoredBy struct {
	run    string
	undone bool
}

func newGatherer(dd *datadir.DataDir, opts IncidentOptions, usage *UsageRun) *gatherer {
	return &gatherer{dd: dd, opts: opts, usage: usage,
		nodes: map[int64]incidentNode{}, topicsBy: map[string]*incidentTopic{},
		laneByML: map[string]*htmlreport.Lane{}, restored: map[string]restoredBy{}}
}

// wanted reports whether a topic (base or partition) is in the report.
func (g *gatherer) wanted(t formats.TopicName) bool {
	if len(g.opts.Topics) == 0 {
		return true
	}
	for _, w := range g.opts.Topics {
		if cluster.Names(w, t) {
			return true
		}
	}
	return false
}

func (g *gatherer) topic(base formats.TopicName) *incidentTopic {
	t := g.topicsBy[base.String()]
	if t == nil {
		t = &incidentTopic{name: base}
		g.topicsBy[base.String()] = t
	}
	return t
}

// walk reads every managed-ledger, ledger and schema locator node once.
func (g *gatherer) walk(ctx context.Context) error {
	return walkNodes(ctx, g.dd.Metadata, "", func(n store.Node) error {
		switch formats.ClassifyPath(n.Path) {
		case formats.NodeManagedLedger:
			g.managedLedger(n)
		case formats.NodeLedgerMetadata:
			g.ledgerNode(n)
		case formats.NodeSchemaLocator:
			g.locator(n)
		}
		return nil
	}, func(te *store.TruncatedError) error {
		if t, ok := formats.ParseManagedLedgerPath(te.Path); ok && g.wanted(t) {
			g.addLane(t, &htmlreport.Lane{Topic: t.String(), Path: te.Path, Error: te.Error()})
		}
		if t, ok := formats.ParseSchemaLocatorPath(te.Path); ok && g.wanted(t) {
			g.topic(t.Base()).schema = &htmlreport.Schema{Key: t.SchemaKey(), Path: te.Path, Error: te.Error()}
		}
		return nil
	})
}

func (g *gatherer) addLane(t formats.TopicName, lane *htmlreport.Lane) {
	it := g.topic(t.Base())
	it.lanes = append(it.lanes, lane)
	g.laneByML[t.ManagedLedgerName()] = lane
}

func (g *gatherer) managedLedger(n store.Node) {
	t, ok := formats.ParseManagedLedgerPath(n.Path)
	if !ok || !g.wanted(t) {
		return
	}
	lane := &htmlreport.Lane{Topic: t.String(), Path: n.Path}
	g.addLane(t, lane)
	info, _, err := formats.DecodeManagedLedgerInfo(n.Value)
	if err != nil {
		lane.Error = err.Error()
		return
	}
	for i, li := range info.GetLedgerInfo() {
		l := htmlreport.Ledger{ID: li.GetLedgerId(), Topic: lane.Topic, Entries: li.GetEntries(), Size: li.GetSize(),
			End: li.GetTimestamp(), State: htmlreport.LedgerClosed}
		_, _, l.FirstEntryIndex = cluster.FirstEntryIndex(li, g.opts.FirstEntryIndexKey)
		switch {
		case cluster.OffloadedAway(li):
			l.State = htmlreport.LedgerOffloaded
		case cluster.IsOpen(info, i):
			l.State, l.End = htmlreport.LedgerOpen, 0
		}
		lane.Ledgers = append(lane.Ledgers, l)
	}
}

func (g *gatherer) ledgerNode(n store.Node) {
	id, err := formats.ParseLedgerPath(n.Path)
	if err != nil {
		return
	}
	m, err := formats.DecodeLedgerMetadata(n.Value)
	if err != nil {
		g.nodes[id] = incidentNode{}
		return // check reports it
	}
	nd := incidentNode{ctime: m.GetCtime(), entries: m.GetLastEntryId() + 1, size: m.GetLength()}
	nd.component, _ = formats.CustomMetadata(m, cluster.CustomComponent)
	switch nd.component {
	case cluster.ComponentML:
		if _, cursor := formats.CustomMetadata(m, cluster.CustomCursor); !cursor {
			nd.owner, _ = formats.CustomMetadata(m, cluster.CustomManagedLedger)
		}
	case cluster.ComponentSchema:
		nd.owner, _ = formats.CustomMetadata(m, cluster.CustomSchemaID)
	}
	if m.GetState() != bkpb.LedgerMetadataFormat_CLOSED {
		nd.entries = 0
	}
	g.nodes[id] = nd
}

func (g *gatherer) locator(n store.Node) {
	t, ok := formats.ParseSchemaLocatorPath(n.Path)
	if !ok || !g.wanted(t) {
		return
	}
	it := g.topic(t.Base())
	it.schema = &htmlreport.Schema{Key: t.SchemaKey(), Path: n.Path}
	loc, err := formats.DecodeSchemaLocator(n.Value)
	if err != nil {
		it.schema.Error = err.Error()
		return
	}
	g.locators = append(g.locators, locatorVersions2{key: t.SchemaKey(), loc: loc, base: t.Base()})
}

// schemaStates reads each locator version's entry, as the schemas view does,
// and joins it with the messages that use it.
func (g *gatherer) schemaStates(ctx context.Context) error {
	// Every version's ledger at once: one Get each cost a round trip on a live store.
	var ids []int64
	for _, lv := range g.locators {
		for _, ie := range locatorVersions(lv.loc) {
			ids = append(ids, ie.GetPosition().GetLedgerId())
		}
	}
	facts, err := ledgerPresences(g.dd, ids)
	if err != nil {
		return fmt.Errorf("schema ledgers: %w", err)
	}
	for _, lv := range g.locators {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := g.topic(lv.base).schema
		latest := int64(-1)
		if info := lv.loc.GetInfo(); info != nil {
			latest = info.GetVersion()
		}
		for _, ie := range locatorVersions(lv.loc) {
			sv := schemaVersion{key: lv.key, version: ie.GetVersion(), ledger: ie.GetPosition().GetLedgerId(),
				entry: ie.GetPosition().GetEntryId(), hash: ie.GetHash()}
			f := facts[sv.ledger]
			state, detail, info, err := schemaState(g.dd.Ledgers, &f, sv)
			if err != nil {
				return fmt.Errorf("%s: %w", schemaLoc(sv.key, sv.version), err)
			}
			v := htmlreport.Version{Version: sv.version, Ledger: sv.ledger, Entry: sv.entry, State: state,
				Detail: detail, Latest: sv.version == latest,
				Lost: state == StateLedgerLost || state == StateEntryLost || state == StateTruncated || state == StateUndecodable}
			if info != nil {
				v.Type, v.Deleted, v.Created = cluster.SchemaTypeName(info.GetType()), info.GetDeleted(), info.GetTimestamp()
			}
			g.useOf(lv.base, &v)
			if rb, ok := g.restored[restoredKey(lv.key, sv.version)]; ok {
				v.RestoredBy, v.RestoreUndone = rb.run, rb.undone
			}
			s.Versions = append(s.Versions, v)
		}
	}
	return nil
}

// useOf fills a version's message counts from the schema-usage scan.
func (g *gatherer) useOf(base formats.TopicName, v *htmlreport.Version) {
	if g.usage == nil {
		return
	}
	err := g.usage.TopicUses(base.String(), v.Version, func(u SchemaUse) {
		v.Messages += u.Messages
		v.Entries += u.Entries
		v.FirstPublish, v.LastPublish = int64(u.FirstPublishMs), int64(u.LastPublishMs)
	})
	if err != nil {
		g.problems = append(g.problems, "message counts of "+base.String()+" could not be read: "+err.Error())
	}
}

func restoredKey(key string, version int64) string { return fmt.Sprintf("%s\x00%d", key, version) }

// journal lists every run and learns which schema versions schema repair
// restored: a committed run's locator write that moved a version to another ledger.
func (g *gatherer) journal(r *htmlreport.Report) {
	if g.opts.JournalDir == "" {
		r.JournalNote = "no data dir, so no journal: the stores came from URLs"
		return
	}
	runs, err := mutate.List(g.opts.JournalDir)
	if err != nil {
		r.JournalNote = "the journal could not be read: " + err.Error()
		return
	}
	if len(runs) == 0 {
		r.JournalNote = "the journal holds no run: ledgermedic has written nothing here"
		return
	}
	for _, s := range runs {
		run := htmlreport.Run{ID: s.RunID, Command: s.Command, Args: s.Args, Created: s.CreatedAt, State: string(s.State),
			Items: s.Items, Verified: s.Verified, UndoOf: s.UndoOf, UndoneBy: s.UndoneBy, MetadataStore: s.MetadataStore, Error: s.Error}
		rec, err := mutate.Show(g.opts.JournalDir, s.RunID)
		if err != nil {
			run.Error = strings.TrimSpace(run.Error + " (record unreadable: " + err.Error() + ")")
		} else {
			g.runChanges(&run, rec)
		}
		r.Runs = append(r.Runs, run)
	}
}

func (g *gatherer) runChanges(run *htmlreport.Run, rec *mutate.RunRecord) {
	for _, it := range rec.Items {
		if len(run.Changes) == htmlreport.MaxRunChanges {
			run.MoreChanges++
		} else {
			d := it.Description
			if d == "" {
				d = fmt.Sprintf("%s %s", it.Kind, cmp.Or(it.Path, fmt.Sprintf("ledger %d", it.LedgerID)))
			}
			run.Changes = append(run.Changes, d+" ["+string(it.Status)+"]")
		}
		if rec.State != mutate.StateCommitted || rec.UndoOf != "" || it.Kind != mutate.KindSet {
			continue
		}
		t, ok := formats.ParseSchemaLocatorPath(it.Path)
		if !ok {
			continue
		}
		for _, v := range movedVersions(it.Before, it.After) {
			g.restored[restoredKey(t.SchemaKey(), v)] = restoredBy{run: rec.RunID, undone: run.UndoneBy != ""}
		}
	}
}

// movedVersions lists the versions a locator write pointed at another ledger entry.
func movedVersions(before, after []byte) []int64 {
	b, err1 := formats.DecodeSchemaLocator(before)
	a, err2 := formats.DecodeSchemaLocator(after)
	if err1 != nil || err2 != nil {
		return nil
	}
	old := map[int64]*schemapb.IndexEntry{}
	for _, ie := range locatorVersions(b) {
		old[ie.GetVersion()] = ie
	}
	var out []int64
	for _, ie := range locatorVersions(a) {
		o := old[ie.GetVersion()]
		if o != nil && (o.GetPosition().GetLedgerId() != ie.GetPosition().GetLedgerId() || o.GetPosition().GetEntryId() != ie.GetPosition().GetEntryId()) {
			out = append(out, ie.GetVersion())
		}
	}
	return out
}

// orphanKind: the findings of ledgers nothing references (an unreferenced
// schema ledger on live bookies is info, not a warning, but still an orphan).
func orphanKind(kind string) bool { return kind == KindOrphanLedger || kind == KindOrphanSchemaLedger }

// place fills in ledger times from their nodes, adds orphan ledgers to their
// owners, and puts each finding about a ledger or schema version at its place.
func (g *gatherer) place(fs []report.Finding) {
	g.times()
	// Orphans first: adding them grows the lanes, which must not move under byLedger.
	for _, f := range fs {
		if orphanKind(f.Kind) && f.LedgerID != nil {
			g.orphan(*f.LedgerID, f)
		}
	}
	byLedger := map[int64]*htmlreport.Ledger{}
	for _, lane := range g.laneByML {
		for i := range lane.Ledgers {
			byLedger[lane.Ledgers[i].ID] = &lane.Ledgers[i]
		}
	}
	for _, f := range fs {
		switch {
		case orphanKind(f.Kind) && f.LedgerID != nil:
		case f.Version != nil && g.placeOnVersion(f):
		case f.LedgerID == nil || f.Kind == KindUsedSchemaVersionLost:
		case byLedger[*f.LedgerID] != nil:
			l := byLedger[*f.LedgerID]
			l.Faults = append(l.Faults, fault(f))
		default:
			g.looseLedger(*f.LedgerID, fault(f))
		}
	}
	for _, lane := range g.laneByML {
		slices.SortFunc(lane.Ledgers, func(a, b htmlreport.Ledger) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.ID, b.ID))
		})
	}
}

func fault(f report.Finding) htmlreport.Fault {
	return htmlreport.Fault{Kind: f.Kind, Severity: f.Severity, Message: f.Location + ": " + f.Message, EntryID: f.EntryID}
}

// times sets Start from the ledger node's ctime; a ledger without a node starts
// when the ledger before it closed (estimated).
func (g *gatherer) times() {
	for _, lane := range g.laneByML {
		prevEnd := int64(0)
		for i := range lane.Ledgers {
			l := &lane.Ledgers[i]
			if nd, ok := g.nodes[l.ID]; ok && nd.ctime > 0 {
				l.Start = nd.ctime
			} else {
				l.Start, l.StartEstimated = prevEnd, true
			}
			if l.End > 0 {
				prevEnd = l.End
			}
		}
	}
}

// orphan adds an orphan ledger to the lane of the managed ledger (or to the
// schema) its node names, else to the loose ledgers.
func (g *gatherer) orphan(id int64, f report.Finding) {
	nd := g.nodes[id]
	l := htmlreport.Ledger{ID: id, Entries: nd.entries, Size: nd.size, Start: nd.ctime, End: nd.ctime,
		State: htmlreport.LedgerOrphan, Faults: []htmlreport.Fault{fault(f)}}
	switch nd.component {
	case cluster.ComponentML:
		if lane := g.laneByML[nd.owner]; lane != nil {
			l.Topic = lane.Topic
			lane.Ledgers = append(lane.Ledgers, l)
			return
		}
	case cluster.ComponentSchema:
		for _, it := range g.topicsBy {
			if it.schema != nil && it.schema.Key == nd.owner {
				l.Topic = it.name.String()
				it.schema.Orphans = append(it.schema.Orphans, l)
				return
			}
		}
	}
	if len(g.opts.Topics) == 0 { // else owned by a topic outside the filter: not shown
		g.loose = append(g.loose, l)
	}
}

// placeOnVersion puts a schema finding on its version; false when the version is not shown.
func (g *gatherer) placeOnVersion(f report.Finding) bool {
	t, err := formats.ParseTopic(f.Topic)
	if err != nil {
		return false
	}
	it := g.topicsBy[t.Base().String()]
	if it == nil || it.schema == nil {
		return false
	}
	for i := range it.schema.Versions {
		if v := &it.schema.Versions[i]; v.Version == *f.Version {
			v.Faults = append(v.Faults, fault(f))
			return true
		}
	}
	if f.Kind == KindUsedSchemaVersionMissing {
		// Messages use a version the locator no longer lists: show it as a lost row.
		it.schema.Versions = append(it.schema.Versions, htmlreport.Version{Version: *f.Version, State: UseMissing,
			Lost: true, Detail: f.Message, Faults: []htmlreport.Fault{fault(f)}})
		g.useOf(t.Base(), &it.schema.Versions[len(it.schema.Versions)-1])
		slices.SortFunc(it.schema.Versions, func(a, b htmlreport.Version) int { return cmp.Compare(a.Version, b.Version) })
		return true
	}
	return false
}

// looseLedger adds a fault to a ledger no shown managed ledger lists; with a
// topic filter, only when its node names a selected topic.
func (g *gatherer) looseLedger(id int64, flt htmlreport.Fault) {
	for i := range g.loose {
		if g.loose[i].ID == id {
			g.loose[i].Faults = append(g.loose[i].Faults, flt)
			return
		}
	}
	nd, node := g.nodes[id]
	if len(g.opts.Topics) > 0 {
		if !node || g.laneByML[nd.owner] == nil {
			return
		}
	}
	g.loose = append(g.loose, htmlreport.Ledger{ID: id, Entries: nd.entries, Size: nd.size, Start: nd.ctime,
		State: htmlreport.LedgerClosed, Faults: []htmlreport.Fault{flt}})
}

// topics returns the topics in name order, lanes in partition order; a topic
// asked for by --topic that the stores do not hold is listed with a note.
func (g *gatherer) topics() []htmlreport.Topic {
	for _, w := range g.opts.Topics {
		if _, ok := g.topicsBy[w.Base().String()]; !ok {
			g.topic(w.Base())
		}
	}
	names := make([]string, 0, len(g.topicsBy))
	for n := range g.topicsBy {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]htmlreport.Topic, 0, len(names))
	for _, n := range names {
		it := g.topicsBy[n]
		t := htmlreport.Topic{Name: n, SchemaKey: it.name.SchemaKey(), Schema: it.schema}
		for _, l := range it.lanes {
			t.Lanes = append(t.Lanes, *l)
		}
		slices.SortFunc(t.Lanes, func(a, b htmlreport.Lane) int { return laneOrder(a.Topic, b.Topic) })
		t.Note = topicNote(it)
		out = append(out, t)
	}
	return out
}

func laneOrder(a, b string) int {
	ta, _ := formats.ParseTopic(a)
	tb, _ := formats.ParseTopic(b)
	return cmp.Or(cmp.Compare(ta.PartitionIndex(), tb.PartitionIndex()), strings.Compare(a, b))
}

func topicNote(it *incidentTopic) string {
	switch {
	case len(it.lanes) == 0 && it.schema == nil:
		return "no managed ledger and no schema locator in the stores: the topic does not exist here (or its metadata is gone)"
	case len(it.lanes) == 0:
		return "no managed ledger: only the schema locator exists"
	}
	for _, l := range it.lanes {
		if len(l.Ledgers) > 0 || l.Error != "" {
			return ""
		}
	}
	return "the topic has no ledgers"
}

// coverage copies check's firstEntryIndex coverage onto the lanes.
func (g *gatherer) coverage(stats *CheckStats) {
	if stats == nil {
		return
	}
	for _, c := range stats.Coverage {
		t, err := formats.ParseTopic(c.Topic)
		if err != nil {
			continue
		}
		if lane := g.laneByML[t.ManagedLedgerName()]; lane != nil {
			lane.Indexed, lane.WithEntries, lane.Covered = c.Indexed, c.WithEntries, c.Covered
		}
	}
}

// filterFindings keeps, with a topic filter, the findings about the selected
// topics: by topic, by one of their ledgers, or by one of their nodes.
func (g *gatherer) filterFindings(fs []report.Finding) (shown []report.Finding, hidden int) {
	if len(g.opts.Topics) == 0 {
		return fs, 0
	}
	ledgers := map[int64]bool{}
	for _, lane := range g.laneByML {
		for _, l := range lane.Ledgers {
			ledgers[l.ID] = true
		}
	}
	for _, it := range g.topicsBy {
		if it.schema != nil {
			for _, v := range it.schema.Versions {
				ledgers[v.Ledger] = true
			}
			for _, o := range it.schema.Orphans {
				ledgers[o.ID] = true
			}
		}
	}
	for _, l := range g.loose {
		ledgers[l.ID] = true
	}
	for _, f := range fs {
		if g.findingShown(f, ledgers) {
			shown = append(shown, f)
		} else {
			hidden++
		}
	}
	return shown, hidden
}

func (g *gatherer) findingShown(f report.Finding, ledgers map[int64]bool) bool {
	if t, err := formats.ParseTopic(f.Topic); err == nil && f.Topic != "" {
		return g.wanted(t)
	}
	if f.LedgerID != nil {
		return ledgers[*f.LedgerID]
	}
	p := cmp.Or(f.Path, strings.TrimPrefix(f.Location, "node "))
	if t, ok := formats.ParseManagedLedgerPath(p); ok {
		return g.wanted(t)
	}
	if t, _, ok := formats.ParseCursorPath(p); ok {
		return g.wanted(t)
	}
	if t, ok := formats.ParseSchemaLocatorPath(p); ok {
		return g.wanted(t)
	}
	return f.Kind == KindStoreDamaged // damage may touch any topic
}

// emptiness says so when the stores hold nothing to show.
func (g *gatherer) emptiness(stats *CheckStats) []string {
	var out []string
	if stats != nil && stats.Nodes == 0 {
		out = append(out, "the metadata store holds no node: nothing to report on (an empty or wrong store?)")
	}
	if stats != nil && stats.Entries == 0 && stats.LedgerNodes > 0 {
		out = append(out, "the ledger store holds no entry: every ledger's data is missing here")
	}
	if len(g.topicsBy) == 0 && len(g.opts.Topics) == 0 && (stats == nil || stats.Nodes > 0) {
		out = append(out, "no topic (managed ledger or schema locator) was found")
	}
	return out
}
