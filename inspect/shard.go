package inspect

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
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
//     refers to (an orphan, entries without a node) to cluster.Shard.LedgerOf its
//     id. A shard reads the entries of the ledgers it owns and of any other
//     ledger its topics refer to, and counts and reports only those it owns.
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
	if f := c.ledgers[id]; f != nil && f.ownerPlus1 > 0 {
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

// shardRanges are the ledgers whose entries a shard reads, one range each, in
// id order: those it owns and those its topics refer to. The ledger store's
// own list of ledgers finds the ones the metadata does not name.
func (c *checker) shardRanges(ctx context.Context) ([]store.LedgerRange, error) {
	var out []store.LedgerRange
	err := c.dd.Ledgers.LedgerIDs(ctx, func(id, _ int64) error {
		f := c.ledgers[id]
		if (f != nil && f.needed) || c.ownsLedger(id) {
			out = append(out, store.OneLedger(id))
		}
		return nil
	})
	return out, err
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
