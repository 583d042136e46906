package inspect

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/internal/spill"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// A sharded check (CheckOptions.Shard, `check --shard i/n`) is one of n
// processes that each do a part of one check; merged, their outputs are the
// whole check's, finding for finding and in the same order. Who does what:
//
//   - Every shard walks the whole metadata: which ledgers are referenced by no
//     one (orphans) is a question about the whole cluster, and the walk is the
//     small part of the work. Its counts (nodes, managed ledgers, ...) are
//     therefore the same in every shard; the walk's fingerprint proves the shards
//     read the same metadata.
//   - A topic belongs to cluster.Shard.TopicOf: its managed ledgers (all
//     partitions), cursors, schema locator, coverage rows and schema usage.
//   - A ledger belongs to the shard of the first topic whose metadata refers to
//     it in walk order (LedgerInfo, cursor or schema locator); a ledger no topic
//     refers to but whose node exists (an orphan) to cluster.Shard.LedgerOf its
//     id. A ledger the metadata does not name at all (entries without a node)
//     can only be found by reading the ledger store: the ids the metadata names,
//     sorted, cut the id space into N slices of as many known ledgers each (the
//     same cut in every shard), and shard I reads slice I whole, finding and
//     owning the unknown ledgers in it; a listing of ids would read every key,
//     as long as a whole scan, so each shard reads 1/N of the store this way.
//   - Besides its slice, a shard reads the entries of the ledgers it owns and of
//     any other ledger its topics refer to; it counts and reports only those it
//     owns, and in its slice skips the entries of the others.
//   - A metadata node's findings go with its topic or ledger; another node's
//     with cluster.Shard.Of its path. Findings not about a ledger or topic (a
//     damaged store file, a bookie file) are shard 0's.
//
// Each finding of a shard carries an Order: the step of Check that made it and
// its place in that step (node ordinal, ledger id, managed-ledger ordinal,
// schema-version ordinal, location), which sort the same in every shard because
// the walk is the same. Within a kind, the whole check lists findings in that
// order; MergeShardFindings restores it.

// Check's steps, in the order they add findings.
const (
	stepMetadata = iota
	stepEntries
	stepProbe
	stepLedgers
	stepManagedLedgers
	stepSchemas
	stepSources
	stepUsage
	stepStoreDamage
)

// stepOf numbers Check's steps list.
var stepOf = []int{stepMetadata, stepEntries, stepProbe, stepLedgers, stepManagedLedgers, stepSchemas}

// shardWalk is what a sharded check keeps besides the unsharded one's state.
type shardWalk struct {
	step  int   // the step adding findings
	major int64 // the place in it of the next finding
	fp    hash.Hash64
	// cuts are the first ids of slices 1..N-1 of the ledger id space (slice 0
	// starts at 0): the ledgers the metadata names, sorted, cut in N equal parts.
	cuts []int64
	// heldNodes are the metadata walk's findings, kept until the ledgers'
	// owners are known (addOwnedNodeFindings).
	heldNodes *spill.Sorter
}

func (c *checker) sharded() bool { return c.opts.Shard.N > 0 }

// fingerprint adds a node to the walk's hash.
func (c *checker) fingerprint(path string, value []byte) {
	if !c.sharded() {
		return
	}
	if c.fp == nil {
		c.fp = fnv.New64a()
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(path)))
	c.fp.Write(n[:])
	c.fp.Write([]byte(path))
	binary.BigEndian.PutUint64(n[:], uint64(len(value)))
	c.fp.Write(n[:])
	c.fp.Write(value)
}

// endFingerprint puts the walk's hash in the stats.
func (c *checker) endFingerprint() {
	if !c.sharded() {
		return
	}
	if c.fp == nil {
		c.fp = fnv.New64a()
	}
	c.stats.Fingerprint = fmt.Sprintf("%016x", c.fp.Sum64())
}

// findingOrder is a finding's Order: fixed-width fields that sort as the
// whole check lists a kind's findings.
func findingOrder(step int, major int64, minor string) string {
	return fmt.Sprintf("%d.%020d.%s", step, uint64(major)^(1<<63), minor)
}

func (c *checker) ownsTopic(t formats.TopicName) bool {
	return !c.sharded() || c.opts.Shard.TopicOf(t) == c.opts.Shard.I
}

// topicShard is the shard that owns topic t (0 unsharded).
func (c *checker) topicShard(t formats.TopicName) int {
	if !c.sharded() {
		return 0
	}
	return c.opts.Shard.TopicOf(t)
}

// referredBy records that the metadata of a topic of shard s refers to the
// ledger of f (the records come in walk order: the first is the owner).
func (c *checker) referredBy(f *ledgerFacts, s int) {
	if !c.sharded() {
		return
	}
	if f.ownerPlus1 == 0 {
		f.ownerPlus1 = int32(s) + 1
	}
	if s == c.opts.Shard.I {
		f.needed = true
	}
}

// ledgerShard is the shard that owns ledger id, whose facts are f (nil: the
// metadata names it nowhere).
func (c *checker) ledgerShard(id int64, f *ledgerFacts) int {
	switch {
	case f == nil || (!f.node && f.refs == 0):
		return c.sliceOf(id) // named by no metadata: found in the slice that holds it
	case f.ownerPlus1 > 0:
		return int(f.ownerPlus1 - 1)
	}
	return c.opts.Shard.LedgerOf(id)
}

func (c *checker) ownsLedger(id int64, f *ledgerFacts) bool {
	return !c.sharded() || c.ledgerShard(id, f) == c.opts.Shard.I
}

// ownsLedgerID is ownsLedger for a ledger whose facts are to be looked up.
func (c *checker) ownsLedgerID(id int64) (bool, error) {
	if !c.sharded() {
		return true, nil
	}
	v, ok, err := c.facts.Get(idKey(nil, id))
	if err != nil || !ok {
		return ok || c.ledgerShard(id, nil) == c.opts.Shard.I, err
	}
	var f ledgerFacts
	if err := decodeFacts(v, &f); err != nil {
		return false, err
	}
	return c.ownsLedger(id, &f), nil
}

// holdNodeFinding keeps a finding of the metadata walk until its owner is
// known.
func (c *checker) holdNodeFinding(f report.Finding) {
	if c.heldNodes == nil {
		c.heldNodes = c.spill.NewSorter("node-findings", answerBudget)
	}
	if err := c.heldNodes.Add(seqKey(nil, uint64(c.major)), encodeFinding(nil, &f)); err != nil {
		c.out.fail(err)
	}
}

// addOwnedNodeFindings adds the metadata walk's findings this shard owns:
// ledger owners are known only after the walk.
func (c *checker) addOwnedNodeFindings(ctx context.Context) error {
	if c.heldNodes == nil {
		return nil
	}
	defer c.heldNodes.Close()
	return c.heldNodes.Sorted(ctx, func(k, v []byte) error {
		f, err := decodeFinding(v)
		if err != nil {
			return err
		}
		s, err := c.nodeShard(f.Path)
		if err != nil || s != c.opts.Shard.I {
			return err
		}
		c.addAt(f, int64(binary.BigEndian.Uint64(k)), "")
		return nil
	})
}

// nodeShard is the shard of the findings about the metadata node at path.
func (c *checker) nodeShard(path string) (int, error) {
	s := c.opts.Shard
	switch formats.ClassifyPath(path) {
	case formats.NodeLedgerMetadata:
		if id, err := formats.ParseLedgerPath(path); err == nil {
			v, ok, err := c.facts.Get(idKey(nil, id))
			if err != nil || !ok {
				return c.ledgerShard(id, nil), err
			}
			var f ledgerFacts
			if err := decodeFacts(v, &f); err != nil {
				return 0, err
			}
			return c.ledgerShard(id, &f), nil
		}
	case formats.NodeManagedLedger:
		if t, ok := formats.ParseManagedLedgerPath(path); ok {
			return s.TopicOf(t), nil
		}
	case formats.NodeCursor:
		if t, _, ok := formats.ParseCursorPath(path); ok {
			return s.TopicOf(t), nil
		}
	case formats.NodeSchemaLocator:
		if t, ok := formats.ParseSchemaLocatorPath(path); ok {
			return s.TopicOf(t), nil
		}
	}
	return s.Of(path), nil
}

// cutSlices cuts the ledger id space in N slices of as many ledgers the
// metadata names each (after the walk: every shard cuts the same): one pass
// over the facts counts them, another picks the cuts.
func (c *checker) cutSlices(ctx context.Context) error {
	var known int64
	err := c.facts.Scan(ctx, idKey(nil, 0), func(k, v []byte) error { known++; return nil })
	if err != nil {
		return err
	}
	n := int64(c.opts.Shard.N)
	c.cuts = make([]int64, 0, n-1)
	var i int64
	j := int64(1)
	err = c.facts.Scan(ctx, idKey(nil, 0), func(k, v []byte) error {
		for j < n && i == j*known/n {
			c.cuts = append(c.cuts, idOfKey(k))
			j++
		}
		i++
		return nil
	})
	for ; j < n; j++ {
		c.cuts = append(c.cuts, math.MaxInt64)
	}
	return err
}

// sliceOf is the slice (and shard) that holds ledger id.
func (c *checker) sliceOf(id int64) int {
	i, _ := slices.BinarySearchFunc(c.cuts, id, func(cut, id int64) int {
		return cmp.Compare(cut, id+1) // the number of cuts <= id
	})
	return i
}

// shardRanges are the ledger ranges a shard reads, in id order: its slice
// (cut again by the ledgers the metadata names in it, so that the workers
// share it), and one range for each ledger outside the slice that it owns or
// its topics refer to, found as the pass goes (shardFeed).
func (c *checker) shardRanges(ctx context.Context, workers int) (rangeFeed, error) {
	if err := c.cutSlices(ctx); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	me := c.opts.Shard.I
	lo, hi := int64(0), int64(math.MaxInt64)
	if me > 0 {
		lo = c.cuts[me-1]
	}
	if me < len(c.cuts) {
		hi = c.cuts[me]
	}
	var inSlice int64
	err := c.facts.Scan(ctx, idKey(nil, lo), func(k, v []byte) error {
		if idOfKey(k) >= hi {
			return errStopScan
		}
		inSlice++
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return nil, fmt.Errorf("check: %w", err)
	}
	// The slice in parts of as many named ledgers each, the first from lo, the
	// last to hi.
	parts := min(int64(workers*rangesPerWorker), max(inSlice, 1))
	var out rangeList
	from := lo
	var i, p int64 = 0, 1
	err = c.facts.Scan(ctx, idKey(nil, lo), func(k, v []byte) error {
		id := idOfKey(k)
		if id >= hi || p >= parts {
			return errStopScan
		}
		if i == p*inSlice/parts {
			if id > from {
				out = append(out, idRange(from, id))
			}
			from = id
			p++
		}
		i++
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return nil, fmt.Errorf("check: %w", err)
	}
	if hi > from {
		out = append(out, idRange(from, hi))
	}
	r, err := c.facts.NewReader()
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	return &shardFeed{c: c, slice: out, lo: lo, hi: hi, r: r}, nil
}

// errStopScan ends a scan early.
var errStopScan = errors.New("stop")

// shardFeed hands out a shard's ranges in id order: the parts of its slice,
// and between them the ledgers outside it that it owns or its topics refer to.
type shardFeed struct {
	c      *checker
	slice  rangeList
	lo, hi int64
	r      *spill.Reader
	next1  int64 // the next ledger outside the slice to read; -1: none found yet
	done   bool  // the facts are read to the end
	f      ledgerFacts
}

func (s *shardFeed) next() (store.LedgerRange, bool, error) {
	if !s.done && s.next1 < 0 {
		if err := s.findOutside(); err != nil {
			return store.LedgerRange{}, false, err
		}
	}
	if len(s.slice) > 0 && (s.next1 < 0 || int64(s.slice[0].First) <= s.next1) {
		return s.slice.next()
	}
	if s.next1 < 0 {
		return store.LedgerRange{}, false, nil
	}
	id := s.next1
	s.next1 = -1
	return store.OneLedger(id), true, nil
}

// findOutside reads on to the next ledger outside the slice that the shard
// reads.
func (s *shardFeed) findOutside() error {
	for s.r.Next() {
		id := idOfKey(s.r.Key())
		if id < 0 || (id >= s.lo && id < s.hi) {
			continue // a damaged LedgerInfo's id: nothing to read; or in the slice
		}
		if err := decodeFacts(s.r.Value(), &s.f); err != nil {
			return err
		}
		if s.f.needed || s.c.ownsLedger(id, &s.f) {
			s.next1 = id
			return nil
		}
	}
	s.done = true
	return s.r.Err()
}

// idRange is the ledger range [from, to); to math.MaxInt64 has no end.
func idRange(from, to int64) store.LedgerRange {
	return store.LedgerRange{First: uint64(from), End: uint64(to), HasEnd: to != math.MaxInt64}
}

// addSourced adds the findings of a check source or of the store's damage:
// those of a ledger go with the ledger, the others are shard 0's; the place is
// the finding's in the source's list, the same in every shard.
func (c *checker) addSourced(fs []report.Finding) {
	for i, f := range fs {
		if c.sharded() {
			owned := c.opts.Shard.I == 0
			if f.LedgerID != nil {
				var err error
				if owned, err = c.ownsLedgerID(*f.LedgerID); err != nil {
					c.out.fail(err)
					return
				}
			}
			if !owned {
				continue
			}
		}
		c.addAt(f, int64(i), "")
	}
}

// addUsage adds the schema-usage findings (of this shard's topics only: the
// pass counted no other), sorted by location like report.SortFindings.
func (c *checker) addUsage(fs []report.Finding) {
	c.step, c.major = stepUsage, 0
	for _, f := range fs {
		c.addAt(f, 0, f.Location)
	}
}

// MergeShardFindings puts the findings of every shard of a check (each shard's
// in its output order, shard after shard) in the order the whole check lists
// them, and clears their Order.
func MergeShardFindings(fs []report.Finding) {
	slices.SortStableFunc(fs, func(a, b report.Finding) int {
		return cmp.Or(bySeverityKind(a, b), strings.Compare(a.Order, b.Order))
	})
	for i := range fs {
		fs[i].Order = ""
	}
}

// ShardMerge puts the findings and coverage rows of every shard of a check in
// the order the whole check lists them, as MergeShardFindings and
// MergeShardStats do, on disk: a million-topic check's shards hold millions.
type ShardMerge struct {
	dir      *spill.Dir
	findings *spill.Sorter
	coverage *spill.Sorter
	counts   report.Counts
	buf      enc
}

// NewShardMerge starts a merge whose spill goes under spillDir ("": $TMPDIR).
func NewShardMerge(spillDir string) (*ShardMerge, error) {
	d, err := spill.Open(spillDir)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return &ShardMerge{dir: d, findings: d.NewSorter("findings", findingBudget),
		coverage: d.NewSorter("coverage", answerBudget), counts: report.Counts{}}, nil
}

// AddFinding takes one finding of a shard (its Order set).
func (m *ShardMerge) AddFinding(f report.Finding) error {
	k := append([]byte{byte(severityRank[f.Severity])}, f.Kind...)
	k = append(append(append(k, 0), f.Order...), 0)
	m.counts.Add(f)
	return m.findings.Add(k, encodeFinding(m.buf[:0], &f))
}

// AddCoverage takes one coverage row of a shard (its Order set).
func (m *ShardMerge) AddCoverage(tc TopicCoverage) error {
	return m.coverage.Add([]byte(tc.Order), encodeCoverage(m.buf[:0], &tc))
}

// Counts is how many findings of each kind and severity the shards have.
func (m *ShardMerge) Counts() report.Counts { return maps.Clone(m.counts) }

// Findings calls fn with every finding in the whole check's order, Order cleared.
func (m *ShardMerge) Findings(ctx context.Context, fn func(report.Finding) error) error {
	return m.findings.Sorted(ctx, func(_, v []byte) error {
		f, err := decodeFinding(v)
		if err != nil {
			return err
		}
		f.Order = ""
		return fn(f)
	})
}

// Coverage calls fn with every coverage row in the whole check's order, Order cleared.
func (m *ShardMerge) Coverage(ctx context.Context, fn func(TopicCoverage) error) error {
	return m.coverage.Sorted(ctx, func(_, v []byte) error {
		tc, err := decodeCoverage(v)
		if err != nil {
			return err
		}
		tc.Order = ""
		return fn(tc)
	})
}

// Close removes the merge's spill.
func (m *ShardMerge) Close() error { return m.dir.Close() }
