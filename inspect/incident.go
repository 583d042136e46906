package inspect

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/internal/spill"
	"github.com/ledgermedic/ledgermedic/report"
	htmlreport "github.com/ledgermedic/ledgermedic/report/html"
	"github.com/ledgermedic/ledgermedic/store"
)

// IncidentOptions configures Incident.
type IncidentOptions struct {
	// Topics limits the report to these topics (a base name takes all its
	// partitions); empty means every topic.
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
	// SpillDir is where the report keeps what it learns per topic, ledger and
	// finding (internal/spill), the check's included; "" is $TMPDIR.
	SpillDir string
}

// Incident gathers the incident report in memory that does not grow with the
// cluster. It runs the check (with its schema-usage count: the scans `check`
// makes), then, from its findings and coverage rows and one more walk of the
// metadata, every topic's row of the table (in topic order, joined from
// streams sorted on disk), the worst topics to draw (a bounded heap), and the
// detail of those alone (incidentdetail.go), plus the journal. Failures to
// read the stores become Problems in the report: a report is made of whatever
// can be read. The report's Rows stay on disk until its Close.
func Incident(ctx context.Context, dd *datadir.DataDir, opts IncidentOptions, prog report.Progress) (*htmlreport.Report, error) {
	opts.FirstEntryIndexKey = cluster.KeyFor(opts.FirstEntryIndexKey)
	if prog == nil {
		prog = report.NoProgress{}
	}
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
	copts := CheckOptions{FirstEntryIndexKey: opts.FirstEntryIndexKey, SpillDir: opts.SpillDir}
	if opts.SkipMessageScan {
		r.Notes = append(r.Notes, "the message scan was skipped (--skip-message-scan): schema versions show no message counts")
	} else {
		copts.SchemaUsage = true
		copts.OnUsage = func(u *UsageRun) { usage = u }
	}
	run, err := RunCheck(ctx, dd, copts, prog)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		r.Problems = append(r.Problems, "check could not read the stores: "+err.Error())
		run, usage = nil, nil
	} else {
		defer run.Close() // the usage is the run's
		r.Stats = statLines(&run.Stats)
	}
	in, err := newIncident(dd, opts, usage, prog)
	if err != nil {
		return nil, err
	}
	if err := in.gather(ctx, r, run); err != nil {
		in.dir.Close()
		return nil, err
	}
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

// incident is the report's state while it gathers: records on disk, and
// counts, a bitset and a heap of fixed size in memory.
//
// Each finding is placed once, on the topic it concerns (attribution, below):
// directly when it names its topic or a topic's node, else through its ledger
// (the by-ledger join: the LedgerInfo that lists the ledger, else the managed
// ledger or schema its node's custom metadata names). A finding placed on no
// existing topic but on a ledger is loose.
type incident struct {
	dd    *datadir.DataDir
	opts  IncidentOptions
	usage *UsageRun
	prog  report.Progress
	dir   *spill.Dir

	// byTopic holds, under topicKey, every topic's managed ledgers, schema
	// locator, coverage rows and findings: read back grouped by topic.
	byTopic *spill.Sorter
	// byLedger holds, under ledgerKey, the findings placed through their
	// ledger, and the LedgerInfos and nodes of the ledgers they name.
	byLedger *spill.Sorter
	// needed marks the ledgers some finding in byLedger names (a Bloom-style
	// bitset: a false hit only adds a record).
	needed ledgerSet
	// listed are the findings the page lists (by check order); loose those of
	// ledgers that belong to no topic (by ledger).
	listed, loose *spill.Sorter
	rows          *spill.File

	counts   report.Counts
	hidden   int64
	perKind  map[string]int // findings offered to listed, of each kind (without a filter)
	walkSeq  uint64
	failed   error // a spill write that failed: the report fails
	problems []string
	buf, key []byte // reused: a sorter copies what it is given
}

// Record types: the order of a topic's (or a ledger's) records when read back.
const (
	recTopicML       = 'a' // a managed ledger of the topic (topicKey)
	recTopicLocator  = 'b' // the topic's schema locator
	recTopicCoverage = 'c' // a coverage row of one of its managed ledgers
	recTopicAsked    = 'd' // --topic named it
	recFinding       = 'f' // a finding
	recLedgerInfo    = 'a' // a LedgerInfo naming the ledger (ledgerKey)
	recLedgerNode    = 'b' // the ledger's node
)

// topicKey: the base topic's name, a 0 (no name holds one, so one topic's
// records sort together, before any longer name's), the record type and an
// ordinal.
func topicKey(b []byte, base string, typ byte, seq uint64) []byte {
	b = append(append(append(b, base...), 0), typ)
	return seqKey(b, seq)
}

func topicOfKey(k []byte) []byte { return k[:max(0, bytes.IndexByte(k, 0))] }

func ledgerKey(b []byte, id int64, typ byte, seq uint64) []byte {
	return seqKey(append(idKey(b, id), typ), seq)
}

// ledgerSet is a fixed-size bitset of ledger ids: whether a ledger may be
// one a finding needs.
type ledgerSet []uint64

const ledgerSetBits = 23 // 1 MB

func newLedgerSet() ledgerSet { return make(ledgerSet, 1<<ledgerSetBits/64) }

func (s ledgerSet) bit(id int64) uint64 {
	return uint64(id) * 0x9E3779B97F4A7C15 >> (64 - ledgerSetBits)
}
func (s ledgerSet) add(id int64)      { b := s.bit(id); s[b/64] |= 1 << (b % 64) }
func (s ledgerSet) has(id int64) bool { b := s.bit(id); return s[b/64]&(1<<(b%64)) != 0 }

// Budgets of the sorters (memory held before a sorted run is written).
const (
	incidentTopicBudget  = 8 << 20
	incidentLedgerBudget = 4 << 20
	incidentListBudget   = 2 << 20
)

func newIncident(dd *datadir.DataDir, opts IncidentOptions, usage *UsageRun, prog report.Progress) (*incident, error) {
	d, err := spill.Open(opts.SpillDir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	rows, err := d.NewFile("topic-rows")
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("report: %w", err)
	}
	return &incident{dd: dd, opts: opts, usage: usage, prog: prog, dir: d,
		byTopic:  d.NewSorter("incident-by-topic", incidentTopicBudget),
		byLedger: d.NewSorter("incident-by-ledger", incidentLedgerBudget),
		listed:   d.NewSorter("incident-listed", incidentListBudget),
		loose:    d.NewSorter("incident-loose", incidentListBudget),
		rows:     rows, needed: newLedgerSet(),
		counts: report.Counts{}, perKind: map[string]int{}}, nil
}

// gather fills r from the check run (nil when the check failed) and the stores.
func (in *incident) gather(ctx context.Context, r *htmlreport.Report, run *CheckRun) error {
	if run != nil {
		if err := in.readFindings(ctx, run); err != nil {
			return err
		}
	}
	if err := in.walk(ctx); err != nil {
		if ctx.Err() != nil || in.failed != nil {
			return cmp.Or(in.failed, err)
		}
		r.Problems = append(r.Problems, "the metadata store could not be read: "+err.Error())
	}
	if run != nil {
		if err := in.readCoverage(ctx, run); err != nil {
			return err
		}
	}
	for _, w := range in.opts.Topics {
		in.add(in.byTopic, topicKey(nil, w.Base().String(), recTopicAsked, 0), nil)
	}
	if err := in.joinLedgers(ctx); err != nil {
		return err
	}
	drawn, err := in.topicPass(ctx)
	if err != nil {
		return err
	}
	if err := cmp.Or(in.failed, in.rows.Finish()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if r.Loose, r.MoreLoose, err = in.looseLedgers(ctx); err != nil {
		return err
	}
	if r.Findings, err = in.listedFindings(ctx); err != nil {
		return err
	}
	r.Counts, r.HiddenFindings = in.counts, in.hidden
	g := newGatherer(in.dd, in.opts, in.usage, drawn)
	g.journal(r) // before the schema states: they show which versions a repair restored
	if err := in.detail(ctx, g, drawn); err != nil {
		if ctx.Err() != nil {
			return err
		}
		r.Problems = append(r.Problems, "the drawn topics could not be read: "+err.Error())
	}
	r.Topics = g.topics(drawn)
	r.Rows = &incidentRows{f: in.rows, dir: in.dir}
	for _, s := range []*spill.Sorter{in.byTopic, in.byLedger, in.listed, in.loose} {
		s.Close() // only the rows are read from here on
	}
	r.Problems = append(r.Problems, in.problems...)
	r.Problems = append(r.Problems, g.problems...)
	r.Problems = append(r.Problems, emptiness(run, in.rows.Len(), len(in.opts.Topics))...)
	return nil
}

// add adds a record to a sorter; the first failure (a full disk) is kept and
// fails the report.
func (in *incident) add(s *spill.Sorter, k, v []byte) error {
	if err := s.Add(k, v); err != nil && in.failed == nil {
		in.failed = fmt.Errorf("report: %w", err)
	}
	return in.failed
}

// wanted reports whether a topic (base or partition) is in the report.
func (in *incident) wanted(t formats.TopicName) bool { return topicWanted(in.opts.Topics, t) }

// topicWanted reports whether --topic (none: every topic) takes topic t.
func topicWanted(asked []formats.TopicName, t formats.TopicName) bool {
	if len(asked) == 0 {
		return true
	}
	for _, w := range asked {
		if cluster.Names(w, t) {
			return true
		}
	}
	return false
}

// placedFinding is a finding with its ordinal in the check's order and, when
// it was placed through its ledger, what the ledger's node says.
type placedFinding struct {
	seq     uint64
	f       report.Finding
	node    incidentNode
	hasNode bool
}

// encode appends p: its ordinal and node, then the finding (the rest).
func (p *placedFinding) encode(b enc) enc {
	b = b.uint(p.seq).flags(p.hasNode).int(p.node.ctime).str(p.node.component).str(p.node.owner).
		int(p.node.entries).int(p.node.size)
	return encodeFinding(b, &p.f)
}

func decodePlaced(v []byte, p *placedFinding) error {
	d := dec{b: v}
	p.seq = d.uint()
	d.flags(&p.hasNode)
	p.node = incidentNode{ctime: d.int(), component: d.str(), owner: d.str(), entries: d.int(), size: d.int()}
	if err := d.done("report finding"); err != nil {
		return err
	}
	f, err := decodeFinding(d.b)
	p.f = f
	return err
}

// How a finding is placed on its topic.
const (
	placeNone   = iota // no topic: listed only
	placeTopic         // the topic it names
	placeLedger        // through its ledger (the by-ledger join)
)

// placement says how a finding finds its topic: an orphan by its node's
// owner, a schema version's and a ledger's that name their topic by it, other
// ledgers' through their ledger, and the rest by the topic or node they name.
func placement(f *report.Finding) (formats.TopicName, int) {
	switch {
	case orphanKind(f.Kind) && f.LedgerID != nil:
		return formats.TopicName{}, placeLedger
	case f.LedgerID != nil && f.Topic == "" && f.Kind != KindUsedSchemaVersionLost:
		return formats.TopicName{}, placeLedger
	case f.Topic != "":
		if t, err := formats.ParseTopic(f.Topic); err == nil {
			return t, placeTopic
		}
		return formats.TopicName{}, placeNone
	}
	p := cmp.Or(f.Path, strings.TrimPrefix(f.Location, "node "))
	if t, ok := formats.ParseManagedLedgerPath(p); ok {
		return t, placeTopic
	}
	if t, _, ok := formats.ParseCursorPath(p); ok {
		return t, placeTopic
	}
	if t, ok := formats.ParseSchemaLocatorPath(p); ok {
		return t, placeTopic
	}
	return formats.TopicName{}, placeNone
}

// readFindings reads the check's findings in its order and sends each to its topic.
func (in *incident) readFindings(ctx context.Context, run *CheckRun) error {
	var seq uint64
	return run.Findings(ctx, func(f report.Finding) error {
		seq++
		p := placedFinding{seq: seq, f: f}
		switch t, how := placement(&f); how {
		case placeTopic:
			return in.onTopic(t, &p)
		case placeLedger:
			in.needed.add(*f.LedgerID)
			in.buf, in.key = p.encode(in.buf[:0]), ledgerKey(in.key[:0], *f.LedgerID, recFinding, seq)
			return in.add(in.byLedger, in.key, in.buf)
		}
		if len(in.opts.Topics) > 0 && f.Kind != KindStoreDamaged { // damage may touch any topic
			in.hidden++
			return nil
		}
		return in.shown(&p)
	})
}

// onTopic places a finding on topic t (base or partition), or hides it when a
// filter leaves t out.
func (in *incident) onTopic(t formats.TopicName, p *placedFinding) error {
	if !in.wanted(t) {
		in.hidden++
		return nil
	}
	if err := in.shown(p); err != nil {
		return err
	}
	in.buf = p.encode(in.buf[:0])
	in.key = topicKey(in.key[:0], t.Base().String(), recFinding, p.seq)
	return in.add(in.byTopic, in.key, in.buf)
}

// shown counts a finding the report is about and offers it to the list.
func (in *incident) shown(p *placedFinding) error {
	in.counts.Add(p.f)
	if len(in.opts.Topics) == 0 {
		// Offered in check order: only the first of each kind can be listed.
		if in.perKind[p.f.Kind]++; in.perKind[p.f.Kind] > htmlreport.MaxFindingsPerKind {
			return nil
		}
	}
	in.buf = p.encode(in.buf[:0])
	return in.add(in.listed, seqKey(nil, p.seq), in.buf)
}

// walk reads every managed-ledger and schema-locator node for the topics' rows,
// and the LedgerInfos and nodes of the ledgers the by-ledger join needs.
func (in *incident) walk(ctx context.Context) error {
	in.prog.Start("report: metadata nodes", 0)
	defer in.prog.Done()
	return walkNodes(ctx, in.dd.Metadata, "", func(n store.Node) error {
		in.walkSeq++
		in.prog.Add(1)
		switch formats.ClassifyPath(n.Path) {
		case formats.NodeManagedLedger:
			return in.managedLedger(n)
		case formats.NodeLedgerMetadata:
			return in.ledgerNode(n)
		case formats.NodeSchemaLocator:
			return in.locator(n)
		}
		return nil
	}, func(te *store.TruncatedError) error {
		in.walkSeq++
		if t, ok := formats.ParseManagedLedgerPath(te.Path); ok && in.wanted(t) {
			return in.addTopicRec(t, recTopicML, enc(nil).uint(0).int(0).flags(true))
		}
		if t, ok := formats.ParseSchemaLocatorPath(te.Path); ok && in.wanted(t) {
			return in.addTopicRec(t, recTopicLocator, enc(nil).uint(0).flags(true))
		}
		return nil
	})
}

func (in *incident) addTopicRec(t formats.TopicName, typ byte, v []byte) error {
	in.key = topicKey(in.key[:0], t.Base().String(), typ, in.walkSeq)
	return in.add(in.byTopic, in.key, v)
}

// managedLedger: a managed-ledger record (ledgers, entries, whether it
// decodes) for the topic's row, and its LedgerInfos of needed ledgers.
func (in *incident) managedLedger(n store.Node) error {
	t, ok := formats.ParseManagedLedgerPath(n.Path)
	if !ok {
		return nil
	}
	info, _, err := formats.DecodeManagedLedgerInfo(n.Value)
	if err != nil {
		if !in.wanted(t) {
			return nil
		}
		return in.addTopicRec(t, recTopicML, enc(nil).uint(0).int(0).flags(true))
	}
	var entries int64
	for _, li := range info.GetLedgerInfo() {
		entries += li.GetEntries()
		if id := li.GetLedgerId(); in.needed.has(id) {
			in.key = ledgerKey(in.key[:0], id, recLedgerInfo, in.walkSeq)
			if err := in.add(in.byLedger, in.key, []byte(t.String())); err != nil {
				return err
			}
		}
	}
	if !in.wanted(t) {
		return nil
	}
	in.buf = enc(in.buf[:0]).uint(uint64(len(info.GetLedgerInfo()))).int(entries).flags(false)
	return in.addTopicRec(t, recTopicML, in.buf)
}

// ledgerNode: the node of a needed ledger.
func (in *incident) ledgerNode(n store.Node) error {
	id, err := formats.ParseLedgerPath(n.Path)
	if err != nil || !in.needed.has(id) {
		return nil
	}
	nd, ok := decodeIncidentNode(n.Value)
	if !ok {
		return nil // check reports it
	}
	p := placedFinding{node: nd, hasNode: true}
	in.buf, in.key = p.encode(in.buf[:0]), ledgerKey(in.key[:0], id, recLedgerNode, in.walkSeq)
	return in.add(in.byLedger, in.key, in.buf)
}

// locator: the topic's schema versions.
func (in *incident) locator(n store.Node) error {
	t, ok := formats.ParseSchemaLocatorPath(n.Path)
	if !ok || !in.wanted(t) {
		return nil
	}
	loc, err := formats.DecodeSchemaLocator(n.Value)
	if err != nil {
		return in.addTopicRec(t, recTopicLocator, enc(nil).uint(0).flags(true))
	}
	in.buf = enc(in.buf[:0]).uint(uint64(len(locatorVersions(loc)))).flags(false)
	return in.addTopicRec(t, recTopicLocator, in.buf)
}

// readCoverage adds the check's coverage rows to their topics.
func (in *incident) readCoverage(ctx context.Context, run *CheckRun) error {
	var seq uint64
	return run.Coverage(ctx, func(tc TopicCoverage) error {
		seq++
		t, err := formats.ParseTopic(tc.Topic)
		if err != nil || !in.wanted(t) {
			return nil
		}
		in.buf = encodeCoverage(in.buf[:0], &tc)
		return in.add(in.byTopic, topicKey(in.key[:0], t.Base().String(), recTopicCoverage, seq), in.buf)
	})
}

// joinLedgers places each finding of the by-ledger sort on the topic of its
// ledger: the LedgerInfo that lists it, else (and always for an orphan) the
// owner its node names; a ledger with neither is loose.
func (in *incident) joinLedgers(ctx context.Context) error {
	var (
		cur        int64
		started    bool
		liTopic    string
		node       placedFinding
		p          placedFinding
		haveLINode bool
	)
	err := in.byLedger.Sorted(ctx, func(k, v []byte) error {
		id := idOfKey(k)
		if !started || id != cur {
			cur, started, liTopic, haveLINode = id, true, "", false
			node = placedFinding{}
		}
		switch k[8] {
		case recLedgerInfo:
			if liTopic == "" {
				liTopic = string(v)
			}
			return nil
		case recLedgerNode:
			haveLINode = true
			return decodePlaced(v, &node)
		}
		if err := decodePlaced(v, &p); err != nil {
			return err
		}
		p.node, p.hasNode = node.node, haveLINode
		owner, ok := p.node.ownerTopic()
		if liTopic != "" && !orphanKind(p.f.Kind) {
			owner, ok = formats.TopicName{}, false
			if t, err := formats.ParseTopic(liTopic); err == nil {
				owner, ok = t, true
			}
		}
		if ok {
			return in.onTopic(owner, &p)
		}
		if len(in.opts.Topics) > 0 {
			in.hidden++
			return nil
		}
		if err := in.shown(&p); err != nil {
			return err
		}
		return in.toLoose(&p)
	})
	return cmp.Or(in.failed, err)
}

func (in *incident) toLoose(p *placedFinding) error {
	in.buf = p.encode(in.buf[:0])
	return in.add(in.loose, seqKey(idKey(nil, *p.f.LedgerID), p.seq), in.buf)
}

// rowSum is one topic's row being added up in the topic pass.
type rowSum struct {
	htmlreport.TopicRow
	exists      bool // a managed ledger or locator of it, or --topic named it
	badVersions map[int64]bool
}

// topicPass reads the topics' records in topic order, writes each topic's
// row, and keeps the worst (a bounded heap) to draw: it returns their names,
// in name order when they are all the topics, else worst first.
func (in *incident) topicPass(ctx context.Context) ([]string, error) {
	in.prog.Start("report: topics", 0)
	defer in.prog.Done()
	var (
		row   = rowSum{badVersions: map[int64]bool{}}
		cur   []byte
		worst = worstTopics{max: htmlreport.MaxDrawnTopics}
		p     placedFinding
		total int
	)
	flush := func() error {
		if cur == nil || !row.exists {
			return nil
		}
		total++
		in.prog.Add(1)
		row.BadVersions = int64(len(row.badVersions))
		worst.offer(&row.TopicRow)
		return in.rows.Append(cur, encodeRow(in.buf[:0], &row.TopicRow))
	}
	err := in.byTopic.Sorted(ctx, func(k, v []byte) error {
		if name := topicOfKey(k); !bytes.Equal(name, cur) {
			if err := flush(); err != nil {
				return err
			}
			cur = append(cur[:0], name...)
			clear(row.badVersions)
			row = rowSum{TopicRow: htmlreport.TopicRow{Name: string(name)}, badVersions: row.badVersions}
		}
		return in.topicRecord(&row, k[len(cur)+1], v, &p)
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, err
	}
	return worst.names(total), nil
}

// topicRecord adds one record to a topic's row.
func (in *incident) topicRecord(row *rowSum, typ byte, v []byte, p *placedFinding) error {
	d := dec{b: v}
	switch typ {
	case recTopicML:
		row.exists = true
		row.Partitions++
		row.Ledgers += int64(d.uint())
		row.Entries += d.int()
		return d.done("report managed ledger")
	case recTopicLocator:
		row.exists = true
		row.Versions += int64(d.uint())
		return d.done("report schema locator")
	case recTopicCoverage:
		tc, err := decodeCoverage(v)
		row.WithEntries += int64(tc.WithEntries)
		row.Covered += int64(tc.Covered)
		return err
	case recTopicAsked:
		row.exists = true
		return nil
	}
	if err := decodePlaced(v, p); err != nil {
		return err
	}
	if !row.exists { // its topic is not in the stores: loose when it is about a ledger
		if p.f.LedgerID == nil || len(in.opts.Topics) > 0 {
			return nil
		}
		return in.toLoose(p)
	}
	switch p.f.Severity {
	case report.SeverityError:
		row.Errors++
	case report.SeverityWarning:
		row.Warnings++
	default:
		row.Info++
	}
	if p.f.Version != nil {
		row.badVersions[*p.f.Version] = true
	}
	return nil
}

func encodeRow(b enc, r *htmlreport.TopicRow) []byte {
	return b.uint(uint64(r.Partitions)).int(r.Ledgers).int(r.Entries).int(r.Errors).int(r.Warnings).int(r.Info).
		int(r.WithEntries).int(r.Covered).int(r.Versions).int(r.BadVersions)
}

func decodeRow(name, v []byte, r *htmlreport.TopicRow) error {
	d := dec{b: v}
	*r = htmlreport.TopicRow{Name: string(name), Partitions: int(d.uint()), Ledgers: d.int(), Entries: d.int(),
		Errors: d.int(), Warnings: d.int(), Info: d.int(), WithEntries: d.int(), Covered: d.int(),
		Versions: d.int(), BadVersions: d.int()}
	return d.done("topic row")
}

// worstTopics keeps the max worst rows offered (htmlreport.CompareWorst),
// worst first: a bounded heap, kept as a sorted slice (it is small).
type worstTopics struct {
	max  int
	rows []htmlreport.TopicRow
}

func (w *worstTopics) offer(r *htmlreport.TopicRow) {
	if len(w.rows) == w.max && htmlreport.CompareWorst(r, &w.rows[w.max-1]) >= 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(w.rows, r, func(a htmlreport.TopicRow, b *htmlreport.TopicRow) int {
		return htmlreport.CompareWorst(&a, b)
	})
	if len(w.rows) == w.max {
		w.rows = w.rows[:w.max-1]
	}
	w.rows = slices.Insert(w.rows, i, *r)
}

// names are the topics to draw: all of them in name order when there are no
// more than max, else the worst, worst first.
func (w *worstTopics) names(total int) []string {
	out := make([]string, len(w.rows))
	for i := range w.rows {
		out[i] = w.rows[i].Name
	}
	if total <= w.max {
		slices.Sort(out)
	}
	return out
}

// looseLedgers are the first MaxLooseLedgers ledgers (by id) whose findings
// belong to no topic, with the number of the others.
func (in *incident) looseLedgers(ctx context.Context) ([]htmlreport.Ledger, int64, error) {
	var (
		out            []htmlreport.Ledger
		more, lastMore int64
		p              placedFinding
	)
	err := in.loose.Sorted(ctx, func(_, v []byte) error {
		if err := decodePlaced(v, &p); err != nil {
			return err
		}
		id := *p.f.LedgerID
		if n := len(out); n > 0 && out[n-1].ID == id {
			out[n-1].Faults = append(out[n-1].Faults, fault(&p))
			if orphanKind(p.f.Kind) {
				out[n-1].State = htmlreport.LedgerOrphan
			}
			return nil
		}
		if len(out) == htmlreport.MaxLooseLedgers {
			if more == 0 || id != lastMore {
				more, lastMore = more+1, id
			}
			return nil
		}
		l := htmlreport.Ledger{ID: id, Entries: p.node.entries, Size: p.node.size, Start: p.node.ctime,
			State: htmlreport.LedgerClosed, Faults: []htmlreport.Fault{fault(&p)}}
		if orphanKind(p.f.Kind) {
			l.State, l.End = htmlreport.LedgerOrphan, p.node.ctime
		}
		out = append(out, l)
		return nil
	})
	return out, more, err
}

// listedFindings are the findings the page lists: the first MaxFindingsPerKind
// of each kind, in check order.
func (in *incident) listedFindings(ctx context.Context) ([]report.Finding, error) {
	var (
		out  []report.Finding
		seen = map[string]int{}
		p    placedFinding
	)
	err := in.listed.Sorted(ctx, func(_, v []byte) error {
		if err := decodePlaced(v, &p); err != nil {
			return err
		}
		if seen[p.f.Kind]++; seen[p.f.Kind] <= htmlreport.MaxFindingsPerKind {
			out = append(out, p.f)
		}
		return nil
	})
	return out, err
}

// detail builds the drawn topics: a targeted read of their own nodes and
// ledgers, and their coverage rows and findings (a second read of the topic
// sort, keeping only theirs).
func (in *incident) detail(ctx context.Context, g *gatherer, drawn []string) error {
	if len(drawn) == 0 {
		return nil
	}
	var (
		covs []TopicCoverage
		ps   []placedFinding
	)
	err := in.byTopic.Sorted(ctx, func(k, v []byte) error {
		name := topicOfKey(k)
		if !g.drawn[string(name)] {
			return nil
		}
		switch k[len(name)+1] {
		case recTopicCoverage:
			tc, err := decodeCoverage(v)
			covs = append(covs, tc)
			return err
		case recFinding:
			var p placedFinding
			err := decodePlaced(v, &p)
			ps = append(ps, p)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range drawn {
		t, err := formats.ParseTopic(n)
		if err != nil {
			continue
		}
		if err := g.readTopic(ctx, t); err != nil {
			return err
		}
	}
	if err := g.readLedgerNodes(); err != nil {
		return err
	}
	if err := g.schemaStates(ctx); err != nil {
		g.problems = append(g.problems, "schema versions could not be read: "+err.Error())
	}
	g.coverage(covs)
	g.place(ps)
	return nil
}

// incidentRows are the report's rows, in the spill file the topic pass wrote;
// closing them removes the report's spill dir.
type incidentRows struct {
	f   *spill.File
	dir *spill.Dir
}

func (r *incidentRows) Len() int64 { return r.f.Len() }

func (r *incidentRows) Each(ctx context.Context, fn func(*htmlreport.TopicRow) error) error {
	var row htmlreport.TopicRow
	return r.f.Scan(ctx, nil, func(k, v []byte) error {
		if err := decodeRow(k, v, &row); err != nil {
			return err
		}
		return fn(&row)
	})
}

func (r *incidentRows) Close() error { return r.dir.Close() }

// emptiness says so when the stores hold nothing to show.
func emptiness(run *CheckRun, topics int64, asked int) []string {
	var out []string
	if run != nil && run.Stats.Nodes == 0 {
		out = append(out, "the metadata store holds no node: nothing to report on (an empty or wrong store?)")
	}
	if run != nil && run.Stats.Entries == 0 && run.Stats.LedgerNodes > 0 {
		out = append(out, "the ledger store holds no entry: every ledger's data is missing here")
	}
	if topics == 0 && asked == 0 && (run == nil || run.Stats.Nodes > 0) {
		out = append(out, "no topic (managed ledger or schema locator) was found")
	}
	return out
}
