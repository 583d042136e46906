package inspect

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/internal/spill"
	"github.com/ledgermedic/ledgermedic/report"
)

// CheckRun is a finished check: its counts in memory, its findings and
// coverage rows on disk (a million-topic cluster has millions of them), read
// back in the order the check lists them until Close.
type CheckRun struct {
	Stats CheckStats
	dir   *spill.Dir
	out   *findingSink
	cover *spill.File
	dd    *datadir.DataDir
}

// Len is the number of findings.
func (r *CheckRun) Len() int64 { return r.out.total() }

// Counts is how many findings there are of each kind and severity.
func (r *CheckRun) Counts() report.Counts { return r.out.counted() }

// Actionable reports whether any finding is an error or a warning.
func (r *CheckRun) Actionable() bool { return r.out.counted().Actionable() }

// Findings calls fn with every finding in the order the check lists them:
// errors, then warnings, then info; by kind within a severity; in the order
// the check met them within a kind. Findings that damage of the store could
// explain say so (StoreDamage).
func (r *CheckRun) Findings(ctx context.Context, fn func(report.Finding) error) error {
	return r.out.each(ctx, r.dd.Damage, fn)
}

// Coverage calls fn with the firstEntryIndex coverage row of every managed
// ledger whose node decodes, in the order the metadata walk met them.
func (r *CheckRun) Coverage(ctx context.Context, fn func(TopicCoverage) error) error {
	return r.cover.Scan(ctx, nil, func(_, v []byte) error {
		tc, err := decodeCoverage(v)
		if err != nil {
			return err
		}
		return fn(tc)
	})
}

// Close removes what the run keeps on disk.
func (r *CheckRun) Close() error {
	if r == nil {
		return nil
	}
	return r.dir.Close()
}

// findingSink keeps a check's findings sorted as the check lists them. A
// finding's key is its severity's rank, its kind, the step that made it, its
// place in the step (major: a node ordinal, a ledger id, a managed-ledger or
// schema-version ordinal; minor: a location) and the order it was added in,
// so steps may add findings from several goroutines and in any order of
// places: the list comes out the same.
type findingSink struct {
	sorter   *spill.Sorter
	mu       sync.Mutex
	seq      uint64
	key, buf enc // scratch, kept at their grown size
	counts   report.Counts
	failed   error // the first add that failed (a full disk): the check fails
}

// findingBudget is the memory of findings held before they spill.
const findingBudget = 8 << 20

func newFindingSink(d *spill.Dir) *findingSink {
	return &findingSink{sorter: d.NewSorter("findings", findingBudget), counts: report.Counts{}}
}

func (s *findingSink) add(f report.Finding, step int, major int64, minor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	k := append(s.key[:0], byte(severityRank[f.Severity]))
	k = append(append(k, f.Kind...), 0)
	k = append(k, byte(step))
	k = idKey(k, major)
	k = append(append(k, minor...), 0)
	s.key = seqKey(k, s.seq)
	s.buf = encodeFinding(s.buf[:0], &f)
	err := s.sorter.Add(s.key, s.buf)
	s.counts.Add(f)
	if err != nil && s.failed == nil {
		s.failed = fmt.Errorf("check: keep findings: %w", err)
	}
}

// fail makes the check fail with err (the first one counts).
func (s *findingSink) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		s.failed = err
	}
}

// err is the first add that failed.
// each calls fn with every finding in order, each marked where damage of the
// store could explain it.
func (s *findingSink) each(ctx context.Context, damage []datadir.Damage, fn func(report.Finding) error) error {
	return s.sorter.Sorted(ctx, func(_, v []byte) error {
		f, err := decodeFinding(v)
		if err != nil {
			return err
		}
		markStoreDamage(&f, damage)
		return fn(f)
	})
}

func (s *findingSink) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *findingSink) total() int64 {
	return int64(s.counted().Total())
}

// counted is a copy of the counts.
func (s *findingSink) counted() report.Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

// encodeFinding appends f in the spill's form.
func encodeFinding(b enc, f *report.Finding) []byte {
	b = b.str(f.Kind).str(string(f.Severity)).str(f.Location).str(f.Message).str(f.Hint).
		str(f.Topic).str(f.Path).str(f.StoreDamage).str(f.Order)
	var has uint64
	for i, p := range []*int64{f.LedgerID, f.EntryID, f.Version} {
		if p != nil {
			has |= 1 << i
		}
	}
	b = b.uint(has)
	for _, p := range []*int64{f.LedgerID, f.EntryID, f.Version} {
		if p != nil {
			b = b.int(*p)
		}
	}
	return b
}

func decodeFinding(v []byte) (report.Finding, error) {
	d := dec{b: v}
	var f report.Finding
	f.Kind, f.Severity, f.Location, f.Message, f.Hint = d.str(), report.Severity(d.str()), d.str(), d.str(), d.str()
	f.Topic, f.Path, f.StoreDamage, f.Order = d.str(), d.str(), d.str(), d.str()
	has := d.uint()
	for i, p := range []**int64{&f.LedgerID, &f.EntryID, &f.Version} {
		if has&(1<<i) != 0 {
			*p = report.Int64(d.int())
		}
	}
	return f, d.done("finding")
}

func encodeCoverage(b enc, tc *TopicCoverage) []byte {
	return b.str(tc.Topic).str(tc.Path).flags(tc.Indexed).uint(uint64(tc.WithEntries)).uint(uint64(tc.Covered)).str(tc.Order)
}

func decodeCoverage(v []byte) (TopicCoverage, error) {
	d := dec{b: v}
	var tc TopicCoverage
	tc.Topic, tc.Path = d.str(), d.str()
	d.flags(&tc.Indexed)
	tc.WithEntries, tc.Covered, tc.Order = int(d.uint()), int(d.uint()), d.str()
	return tc, d.done("coverage row")
}
