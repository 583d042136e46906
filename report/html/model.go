// Package html renders the incident report: one self-contained HTML file (inline
// CSS, SVG and JS, nothing fetched) an SRE can open on an air-gapped laptop and
// attach to a postmortem. The data comes typed from the features (inspect builds
// a Report); this package only lays it out.
package html

import (
	"cmp"
	"context"
	"io"
	"time"

	"github.com/ledgermedic/ledgermedic/report"
)

// Report is everything the incident report shows.
type Report struct {
	GeneratedAt time.Time
	Version     string // ledgermedic's version (module version and VCS revision)
	DataDir     string // as given; "" when both stores come from URLs
	Sources     []Source
	// Notes are things the reader must know (a sandbox copy, a --topic filter, a skipped scan).
	Notes []string
	// Problems say why parts of the report are empty: an empty data dir, stores
	// with nothing readable, a topic with no ledgers. The report is still written.
	Problems []string
	Stats    []Stat
	// Counts are how many findings of each kind and severity the report is about
	// (with a topic filter, those of the selected topics).
	Counts report.Counts
	// Findings are the first MaxFindingsPerKind of each kind of them, in check's
	// order; Counts counts them all. HiddenFindings counts the findings of the
	// topics a filter left out.
	Findings       []report.Finding
	HiddenFindings int64
	// Topics are the topics drawn: every topic, in name order, when there are at
	// most MaxDrawnTopics; else the MaxDrawnTopics worst (CompareWorst), worst first.
	Topics []Topic
	// Rows has a row for every topic of the report, in name order (nil: the
	// drawn topics are all of them).
	Rows TopicRows
	// Loose are ledgers with findings that belong to no topic shown (no LedgerInfo
	// names them and their node names no managed ledger): the first
	// MaxLooseLedgers by id; MoreLoose counts the others.
	Loose     []Ledger
	MoreLoose int64
	Runs      []Run
	// JournalNote says why there is no journal section (no data dir, no runs, unreadable).
	JournalNote string
}

// Source is one store the report was made from.
type Source struct {
	URL      string
	Kind     string
	ReadOnly bool
	Zxid     int64 // ZooKeeper: the last zxid the view includes (0: not known)
	Revision int64 // etcd: the revision the view reflects (0: not known)
	AsOf     time.Time
	Notes    []string
}

// Stat is one line of "what was scanned".
type Stat struct {
	Name  string
	Count int64
}

// Ledger states, one per ledger; faults (from findings) come on top.
const (
	LedgerClosed    = "closed"
	LedgerOpen      = "open"      // the managed ledger's last ledger, still being written
	LedgerOffloaded = "offloaded" // offloaded to tiered storage and deleted from BookKeeper
	LedgerOrphan    = "orphan"    // its node names the managed ledger but no LedgerInfo does
)

// Topic is one base topic: its managed ledgers (partitions) and its schema.
type Topic struct {
	Name      string // persistent://tenant/ns/name, without -partition-N
	SchemaKey string
	Lanes     []Lane
	Schema    *Schema // nil when the topic has no schema locator
	// Note says why the topic shows little: no managed ledger, no ledgers.
	Note string
}

// Lane is one managed ledger (a partition, or the topic itself).
type Lane struct {
	Topic string // the partition's (or topic's) full name
	Path  string // managed-ledger node
	Error string // the node did not decode: no ledgers shown
	// Indexed topics carry broker entry indexes; WithEntries and Covered count their
	// ledgers with entries and those of them with the firstEntryIndex property.
	Indexed     bool
	WithEntries int
	Covered     int
	Ledgers     []Ledger
}

// Ledger is one ledger of a managed ledger (or a loose one).
type Ledger struct {
	ID      int64
	Topic   string // the managed ledger's topic; "" when not known
	Entries int64  // LedgerInfo.entries (or the ledger node's lastEntryId+1 for orphans)
	Size    int64  // bytes, LedgerInfo.size
	// Start and End are Unix milliseconds: the node's ctime (created) and the
	// LedgerInfo timestamp (closed). 0 means not known; StartEstimated means Start
	// is the previous ledger's close (the node, and with it ctime, is gone).
	Start, End     int64
	StartEstimated bool
	State          string // Ledger* constants
	// FirstEntryIndex: the LedgerInfo has the firstEntryIndex property.
	FirstEntryIndex bool
	Faults          []Fault
}

// Fault is a finding placed on a ledger or a schema version.
type Fault struct {
	Kind     string
	Severity report.Severity
	Message  string
	EntryID  *int64
}

// Schema is one schema key's versions.
type Schema struct {
	Key      string
	Path     string // locator node
	Error    string // the locator does not decode
	Versions []Version
	// Orphans are schema ledgers whose node names this key but no locator version does.
	Orphans []Ledger
}

// Version is one schema version with its use by stored messages.
type Version struct {
	Version int64
	Type    string // AVRO, JSON, ...; "" when the entry is unreadable
	Ledger  int64
	Entry   int64
	State   string // inspect.State* (ok, ledger-lost, entry-lost, ...)
	Lost    bool   // the version's schema cannot be read back
	Deleted bool   // a tombstone
	Latest  bool   // the locator's info version
	Detail  string
	Created int64 // SchemaInfo.timestamp, Unix ms; 0 when unreadable
	// Messages and Entries count stored messages that carry this version;
	// FirstPublish and LastPublish bound their publish times (Unix ms).
	Messages, Entries         int64
	FirstPublish, LastPublish int64
	// RestoredBy names the journal run that rewrote this version (schema repair);
	// RestoreUndone is true when that run was undone since.
	RestoredBy    string
	RestoreUndone bool
	Faults        []Fault
}

// Run is one journal run.
type Run struct {
	ID            string
	Command       string
	Args          []string
	Created       time.Time
	State         string
	Items         int
	Verified      bool
	UndoOf        string
	UndoneBy      string
	MetadataStore string
	Error         string
	// Changes are the descriptions of the run's items (at most MaxRunChanges; the
	// rest are counted in MoreChanges).
	Changes     []string
	MoreChanges int
}

// MaxRunChanges bounds the items listed per journal run.
const MaxRunChanges = 50

// TopicRow is one topic in the table of every topic: what it holds and how
// many findings concern it.
type TopicRow struct {
	Name       string // base topic
	Partitions int    // managed ledgers (the topic's own, or its partitions')
	Ledgers    int64
	Entries    int64
	// Findings about the topic, its managed ledgers, their ledgers and its schema, by severity.
	Errors, Warnings, Info int64
	// WithEntries and Covered add up the firstEntryIndex coverage of its managed ledgers.
	WithEntries, Covered int64
	// Versions are its schema locator's versions; BadVersions those of them with findings.
	Versions, BadVersions int64
}

// Faulty reports whether any finding concerns the topic.
func (r *TopicRow) Faulty() bool { return r.Errors+r.Warnings+r.Info > 0 }

// CompareWorst orders topics most serious first: most errors, then warnings,
// then info; then by name. (The page's script sorts its table the same way.)
func CompareWorst(a, b *TopicRow) int {
	return cmp.Or(cmp.Compare(b.Errors, a.Errors), cmp.Compare(b.Warnings, a.Warnings), cmp.Compare(b.Info, a.Info),
		cmp.Compare(a.Name, b.Name))
}

// TopicRows is the table of every topic, read as often as needed: a million
// rows stay on disk (inspect keeps them in a spill file) until Close.
type TopicRows interface {
	Len() int64
	// Each calls fn with every row in name order; the row is valid only during fn.
	Each(ctx context.Context, fn func(*TopicRow) error) error
	io.Closer
}

// RowSlice is TopicRows held in memory.
type RowSlice []TopicRow

func (s RowSlice) Len() int64 { return int64(len(s)) }

func (s RowSlice) Each(ctx context.Context, fn func(*TopicRow) error) error {
	for i := range s {
		if err := fn(&s[i]); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (RowSlice) Close() error { return nil }

// TopicCount is how many topics the report covers.
func (r *Report) TopicCount() int64 {
	if r.Rows != nil {
		return r.Rows.Len()
	}
	return int64(len(r.Topics))
}

// FindingTotal is how many findings the report is about.
func (r *Report) FindingTotal() int64 { return int64(r.Counts.Total()) }

// Close drops what the report keeps on disk (its rows).
func (r *Report) Close() error {
	if r == nil || r.Rows == nil {
		return nil
	}
	return r.Rows.Close()
}
