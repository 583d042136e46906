package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/mutate"
	htmlreport "github.com/ledgermedic/ledgermedic/report/html"
	"github.com/ledgermedic/ledgermedic/store"
)

// The drawn topics of the incident report: their lanes of ledgers with every
// LedgerInfo, their ledger nodes' times, their schema versions' states, and
// their findings at their places. Only the topics drawn (at most
// htmlreport.MaxDrawnTopics) are read in this detail, by a targeted read of
// their own nodes, so what is held here grows with those topics, never with
// the cluster.

// incidentNode is what the report needs of one ledger node.
type incidentNode struct {
	ctime     int64
	component string
	owner     string // managed-ledger name or schema key
	entries   int64  // lastEntryId+1
	size      int64
}

// decodeIncidentNode reads a ledger node; ok is false when it does not decode
// (check reports it).
func decodeIncidentNode(v []byte) (nd incidentNode, ok bool) {
	m, err := formats.DecodeLedgerMetadata(v)
	if err != nil {
		return incidentNode{}, false
	}
	nd = incidentNode{ctime: m.GetCtime(), entries: m.GetLastEntryId() + 1, size: m.GetLength()}
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
	return nd, true
}

// ownerTopic is the topic a ledger node's custom metadata names: its managed
// ledger's, or its schema key's (persistent).
func (nd *incidentNode) ownerTopic() (formats.TopicName, bool) {
	switch {
	case nd.owner == "":
		return formats.TopicName{}, false
	case nd.component == cluster.ComponentML:
		return formats.ParseManagedLedgerPath(formats.ManagedLedgersRoot + "/" + nd.owner)
	case nd.component == cluster.ComponentSchema:
		return formats.ParseSchemaLocatorPath(formats.SchemasRoot + "/" + nd.owner)
	}
	return formats.TopicName{}, false
}

type incidentTopic struct {
	name   formats.TopicName // base
	lanes  []*htmlreport.Lane
	schema *htmlreport.Schema
}

// gatherer builds the drawn topics.
type gatherer struct {
	dd    *datadir.DataDir
	opts  IncidentOptions
	usage *UsageRun
	drawn map[string]bool // base topic names
	// problems are what the gatherer could not read.
	problems []string

	nodes    map[int64]incidentNode
	topicsBy map[string]*incidentTopic // by base topic name
	laneByML map[string]*htmlreport.Lane
	locators []locatorVersions2
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

func newGatherer(dd *datadir.DataDir, opts IncidentOptions, usage *UsageRun, drawn []string) *gatherer {
	g := &gatherer{dd: dd, opts: opts, usage: usage, drawn: map[string]bool{},
		nodes: map[int64]incidentNode{}, topicsBy: map[string]*incidentTopic{},
		laneByML: map[string]*htmlreport.Lane{}, restored: map[string]restoredBy{}}
	for _, n := range drawn {
		g.drawn[n] = true
	}
	return g
}

// wanted reports whether a topic (base or partition) is drawn.
func (g *gatherer) wanted(t formats.TopicName) bool {
	return g.drawn[t.Base().String()] && topicWanted(g.opts.Topics, t)
}

func (g *gatherer) topic(base formats.TopicName) *incidentTopic {
	t := g.topicsBy[base.String()]
	if t == nil {
		t = &incidentTopic{name: base}
		g.topicsBy[base.String()] = t
	}
	return t
}

// readTopic reads a drawn topic's own nodes: its managed ledger, its
// partitions' and its schema locator.
func (g *gatherer) readTopic(ctx context.Context, base formats.TopicName) error {
	g.topic(base)
	n, err := g.dd.Metadata.Get(base.ManagedLedgerPath())
	if err := g.readNode(n, err, g.managedLedger, g.damagedML); err != nil {
		return err
	}
	// The partitions: the nodes under <topic>-partition-, as cluster.TopicManagedLedgers reads them.
	prefix := base.Partition(0).ManagedLedgerPath()
	prefix = prefix[:len(prefix)-1]
	err = walkNodes(ctx, g.dd.Metadata, prefix, func(n store.Node) error {
		if formats.ClassifyPath(n.Path) == formats.NodeManagedLedger {
			g.managedLedger(n)
		}
		return nil
	}, func(te *store.TruncatedError) error { g.damagedML(te); return nil })
	if err != nil {
		return err
	}
	n, err = g.dd.Metadata.Get(base.SchemaLocatorPath())
	return g.readNode(n, err, g.locator, g.damagedLocator)
}

// readNode hands a node read by Get to fn, a damaged one to bad; a missing one
// is no error.
func (g *gatherer) readNode(n store.Node, err error, fn func(store.Node), bad func(*store.TruncatedError)) error {
	var te *store.TruncatedError
	switch {
	case err == nil:
		fn(n)
	case errors.As(err, &te):
		bad(te)
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	return nil
}

func (g *gatherer) damagedML(te *store.TruncatedError) {
	if t, ok := formats.ParseManagedLedgerPath(te.Path); ok && g.wanted(t) {
		g.addLane(t, &htmlreport.Lane{Topic: t.String(), Path: te.Path, Error: te.Error()})
	}
}

func (g *gatherer) damagedLocator(te *store.TruncatedError) {
	if t, ok := formats.ParseSchemaLocatorPath(te.Path); ok && g.wanted(t) {
		g.topic(t.Base()).schema = &htmlreport.Schema{Key: t.SchemaKey(), Path: te.Path, Error: te.Error()}
	}
}

func (g *gatherer) addLane(t formats.TopicName, lane *htmlreport.Lane) {
	it := g.topic(t.Base())
	it.lanes = append(it.lanes, lane)
	g.laneByML[t.ManagedLedgerName()] = lane
}

func (g *gatherer) managedLedger(n store.Node) {
	t, ok := formats.ParseManagedLedgerPath(n.Path)
	if !ok || !g.wanted(t) || g.laneByML[t.ManagedLedgerName()] != nil {
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

// readLedgerNodes reads the node of every ledger on the drawn lanes, a window
// at a time (one round trip per window on a live store).
func (g *gatherer) readLedgerNodes() error {
	var ids []int64
	for _, lane := range g.laneByML {
		for _, l := range lane.Ledgers {
			ids = append(ids, l.ID)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	const window = 1000
	for lo := 0; lo < len(ids); lo += window {
		var paths []string
		for _, id := range ids[lo:min(lo+window, len(ids))] {
			if p := formats.LedgerPath(id); p != "" {
				paths = append(paths, p)
			}
		}
		ahead := store.ReadAhead(g.dd.Metadata, paths)
		for _, p := range paths {
			n, err := ahead.Get(p)
			switch {
			case err == nil:
			case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTruncatedValue):
				continue
			default:
				return err
			}
			if id, err := formats.ParseLedgerPath(p); err == nil {
				nd, _ := decodeIncidentNode(n.Value)
				g.nodes[id] = nd
			}
		}
	}
	return nil
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
// Findings with no place on the charts are still counted in the topic's row.
func (g *gatherer) place(ps []placedFinding) {
	g.times()
	// Orphans first: adding them grows the lanes, which must not move under byLedger.
	for i := range ps {
		if p := &ps[i]; orphanKind(p.f.Kind) && p.f.LedgerID != nil {
			g.orphan(*p.f.LedgerID, p)
		}
	}
	byLedger := map[int64]*htmlreport.Ledger{}
	for _, lane := range g.laneByML {
		for i := range lane.Ledgers {
			byLedger[lane.Ledgers[i].ID] = &lane.Ledgers[i]
		}
	}
	for _, p := range ps {
		f := p.f
		switch {
		case orphanKind(f.Kind) && f.LedgerID != nil:
		case f.Version != nil && g.placeOnVersion(&p):
		case f.LedgerID == nil || f.Kind == KindUsedSchemaVersionLost:
		case byLedger[*f.LedgerID] != nil:
			l := byLedger[*f.LedgerID]
			l.Faults = append(l.Faults, fault(&p))
		}
	}
	for _, lane := range g.laneByML {
		slices.SortFunc(lane.Ledgers, func(a, b htmlreport.Ledger) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.ID, b.ID))
		})
	}
}

func fault(p *placedFinding) htmlreport.Fault {
	f := &p.f
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
// schema) its node names.
func (g *gatherer) orphan(id int64, p *placedFinding) {
	nd := p.node
	l := htmlreport.Ledger{ID: id, Entries: nd.entries, Size: nd.size, Start: nd.ctime, End: nd.ctime,
		State: htmlreport.LedgerOrphan, Faults: []htmlreport.Fault{fault(p)}}
	switch nd.component {
	case cluster.ComponentML:
		if lane := g.laneByML[nd.owner]; lane != nil {
			l.Topic = lane.Topic
			lane.Ledgers = append(lane.Ledgers, l)
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
}

// placeOnVersion puts a schema finding on its version; false when the version is not shown.
func (g *gatherer) placeOnVersion(p *placedFinding) bool {
	f := &p.f
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
			v.Faults = append(v.Faults, fault(p))
			return true
		}
	}
	if f.Kind == KindUsedSchemaVersionMissing {
		// Messages use a version the locator no longer lists: show it as a lost row.
		it.schema.Versions = append(it.schema.Versions, htmlreport.Version{Version: *f.Version, State: UseMissing,
			Lost: true, Detail: f.Message, Faults: []htmlreport.Fault{fault(p)}})
		g.useOf(t.Base(), &it.schema.Versions[len(it.schema.Versions)-1])
		slices.SortFunc(it.schema.Versions, func(a, b htmlreport.Version) int { return cmp.Compare(a.Version, b.Version) })
		return true
	}
	return false
}

// coverage copies check's firstEntryIndex coverage onto the lanes.
func (g *gatherer) coverage(rows []TopicCoverage) {
	for _, c := range rows {
		t, err := formats.ParseTopic(c.Topic)
		if err != nil {
			continue
		}
		if lane := g.laneByML[t.ManagedLedgerName()]; lane != nil {
			lane.Indexed, lane.WithEntries, lane.Covered = c.Indexed, c.WithEntries, c.Covered
		}
	}
}

// topics returns the drawn topics in the order given, lanes in partition order.
func (g *gatherer) topics(names []string) []htmlreport.Topic {
	out := make([]htmlreport.Topic, 0, len(names))
	for _, n := range names {
		it := g.topicsBy[n]
		if it == nil {
			continue
		}
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
