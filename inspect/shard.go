package inspect

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats"
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

// referredBy records that a topic's metadata refers to the ledger of f.
func (c *checker) referredBy(f *ledgerFacts, t formats.TopicName) {
	if !c.sharded() {
		return
	}
	s := c.opts.Shard.TopicOf(t)
	if f.ownerPlus1 == 0 {
		f.ownerPlus1 = int32(s) + 1
	}
	if s == c.opts.Shard.I {
		f.needed = true
	}
}

// ledgerShard is the shard that owns ledger id.
func (c *checker) ledgerShard(id int64) int {
	f := c.ledgers[id]
	switch {
	case f == nil || (!f.node && f.refs == 0):
		return c.sliceOf(id) // named by no metadata: found in the slice that holds it
	case f.ownerPlus1 > 0:
		return int(f.ownerPlus1 - 1)
	}
	return c.opts.Shard.LedgerOf(id)
}

func (c *checker) ownsLedger(id int64) bool {
	return !c.sharded() || c.ledgerShard(id) == c.opts.Shard.I
}

// keepOwnedNodeFindings drops the metadata walk's findings (from index start)
// that another shard reports: ledger owners are known only after the walk.
func (c *checker) keepOwnedNodeFindings(start int) {
	if !c.sharded() {
		return
	}
	kept := c.findings[:start]
	for _, f := range c.findings[start:] {
		if c.nodeShard(f.Path) == c.opts.Shard.I {
			kept = append(kept, f)
		}
	}
	c.findings = kept
}

// nodeShard is the shard of the findings about the metadata node at path.
func (c *checker) nodeShard(path string) int {
	s := c.opts.Shard
	switch formats.ClassifyPath(path) {
	case formats.NodeLedgerMetadata:
		if id, err := formats.ParseLedgerPath(path); err == nil {
			return c.ledgerShard(id)
		}
	case formats.NodeManagedLedger:
		if t, ok := formats.ParseManagedLedgerPath(path); ok {
			return s.TopicOf(t)
		}
	case formats.NodeCursor:
		if t, _, ok := formats.ParseCursorPath(path); ok {
			return s.TopicOf(t)
		}
	case formats.NodeSchemaLocator:
		if t, ok := formats.ParseSchemaLocatorPath(path); ok {
			return s.TopicOf(t)
		}
	}
	return s.Of(path)
}

// cutSlices cuts the ledger id space in N slices of as many ledgers the
// metadata names each (after the walk: every shard cuts the same).
func (c *checker) cutSlices() {
	known := make([]int64, 0, len(c.ledgers))
	for id := range c.ledgers {
		if id >= 0 {
			known = append(known, id)
		}
	}
	slices.Sort(known)
	n := c.opts.Shard.N
	c.cuts = make([]int64, 0, n-1)
	for j := 1; j < n; j++ {
		cut := int64(math.MaxInt64)
		if k := j * len(known) / n; k < len(known) {
			cut = known[k]
		}
		c.cuts = append(c.cuts, cut)
	}
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
// its topics refer to.
func (c *checker) shardRanges(workers int) []store.LedgerRange {
	c.cutSlices()
	me := c.opts.Shard.I
	lo, hi := int64(0), int64(math.MaxInt64)
	if me > 0 {
		lo = c.cuts[me-1]
	}
	if me < len(c.cuts) {
		hi = c.cuts[me]
	}
	var inSlice, outside []int64
	for id, f := range c.ledgers {
		switch {
		case id < 0: // a damaged LedgerInfo's id: nothing to read
		case id >= lo && id < hi:
			inSlice = append(inSlice, id)
		case f.needed || c.ownsLedger(id):
			outside = append(outside, id)
		}
	}
	slices.Sort(inSlice)
	var out []store.LedgerRange
	// The slice in parts of as many named ledgers each, the first from lo, the
	// last to hi.
	parts := min(workers*rangesPerWorker, max(len(inSlice), 1))
	from := lo
	for p := 1; p <= parts; p++ {
		to := hi
		if p < parts {
			to = inSlice[p*len(inSlice)/parts]
		}
		if to > from {
			out = append(out, idRange(from, to))
		}
		from = to
	}
	for _, id := range outside {
		out = append(out, store.OneLedger(id))
	}
	slices.SortFunc(out, func(a, b store.LedgerRange) int { return cmp.Compare(a.First, b.First) })
	return out
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
			owner := 0
			if f.LedgerID != nil {
				owner = c.ledgerShard(*f.LedgerID)
			}
			if owner != c.opts.Shard.I {
				continue
			}
		}
		c.major = int64(i)
		c.add(f)
	}
}

// addUsage adds the schema-usage findings (of this shard's topics only: the
// pass counted no other), sorted by location like report.SortFindings.
func (c *checker) addUsage(fs []report.Finding) {
	c.step, c.major = stepUsage, 0
	for _, f := range fs {
		if c.sharded() {
			f.Order = findingOrder(c.step, 0, f.Location)
		}
		c.findings = append(c.findings, f)
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
