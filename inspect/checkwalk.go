package inspect

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// scanMetadata walks every node once and writes down what later steps need:
// each node's word on a ledger to the by-ledger sort, managed ledgers and
// schema versions in walk order. Then it folds the by-ledger records into one
// per ledger (foldLedgers).
func (c *checker) scanMetadata(ctx context.Context) error {
	c.prog.Start("metadata nodes", 0)
	err := walkNodes(ctx, c.dd.Metadata, "", func(n store.Node) error {
		c.major = c.stats.Nodes
		c.stats.Nodes++
		c.prog.Add(1)
		c.fingerprint(n.Path, n.Value)
		return c.node(n)
	}, func(te *store.TruncatedError) error {
		c.major = c.stats.Nodes
		c.stats.Nodes++
		c.fingerprint(te.Path, nil)
		f := newFinding(KindValueTruncated, "node "+te.Path, "restore the node from a backup", "%s", truncatedDetail(te))
		f.Path = te.Path
		c.addNodeFinding(f)
		return c.noteBadNode(te.Path)
	})
	c.prog.Done()
	if err != nil {
		return fmt.Errorf("check metadata: %w", err)
	}
	c.endFingerprint()
	for _, f := range []interface{ Finish() error }{c.mls, c.svs} {
		if err := f.Finish(); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	if err := c.foldLedgers(ctx); err != nil {
		return err
	}
	return c.addOwnedNodeFindings(ctx)
}

// addNodeFinding adds a finding of the metadata walk about the node at its
// place; a sharded check keeps it until the ledgers' owners are known.
func (c *checker) addNodeFinding(f report.Finding) {
	if c.sharded() {
		c.holdNodeFinding(f)
		return
	}
	c.add(f)
}

// refRecord adds a record of what the node being walked says of ledger id to
// the by-ledger sort; place orders the records of one node.
// rec is encoded into c.buf (c.buf[:0]...), which keeps its grown size.
func (c *checker) refRecord(id int64, place uint32, rec enc) error {
	c.buf, c.key = rec, byLedgerKey(c.key[:0], id, uint64(c.major), place)
	if err := c.byLedger.Add(c.key, rec); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	return nil
}

// noteBadNode records that the node at path exists but cannot be read, so its
// ledger or owner is not reported again under another kind.
func (c *checker) noteBadNode(path string) error {
	switch formats.ClassifyPath(path) {
	case formats.NodeLedgerMetadata:
		id, _ := formats.ParseLedgerPath(path)
		c.stats.LedgerNodes++
		f := ledgerFacts{node: true, badNode: true, lastEntryID: -1}
		return c.refRecord(id, 0, c.nodeRecord(&f))
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
	return nil
}

func (c *checker) undecodable(n store.Node, kind formats.NodeKind, err error) error {
	f := newFinding(KindNodeUndecodable, "node "+n.Path, "inspect it with: ledgermedic inspect node "+n.Path,
		"%s node (%d bytes) does not decode: %v", kind, len(n.Value), err)
	f.Path = n.Path
	c.addNodeFinding(f)
	return c.noteBadNode(n.Path)
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

func (c *checker) node(n store.Node) error {
	kind := formats.ClassifyPath(n.Path)
	if kind == formats.NodeOther {
		return nil
	}
	d, err := decodeChecked(n)
	if err != nil {
		return c.undecodable(n, kind, err)
	}
	switch m := d.Message.(type) {
	case *mlpb.ManagedLedgerInfo:
		c.stats.ManagedLedgers++
		t, _ := formats.ParseManagedLedgerPath(n.Path)
		return c.managedLedger(t, n.Path, m)
	case *mlpb.ManagedCursorInfo:
		c.stats.Cursors++
		if id := m.GetCursorsLedgerId(); id >= 0 {
			t, _, _ := formats.ParseCursorPath(n.Path)
			return c.refRecord(id, 0, c.buf[:0].uint(recCursor).int(int64(c.topicShard(t))))
		}
	case *schemapb.SchemaLocator:
		c.stats.SchemaLocators++
		t, _ := formats.ParseSchemaLocatorPath(n.Path)
		return c.schemaLocator(t, n.Path, m)
	case *bkpb.LedgerMetadataFormat:
		c.stats.LedgerNodes++
		id, _ := formats.ParseLedgerPath(n.Path)
		return c.ledgerNode(id, m)
	}
	return nil
}

func (c *checker) managedLedger(t formats.TopicName, path string, info *mlpb.ManagedLedgerInfo) error {
	_, indexed := cluster.HasMLIndex(info)
	ml := mlFacts{topic: t.String(), path: path, indexProp: indexed, owned: c.ownsTopic(t)}
	ml.withEntries, ml.covered = cluster.Coverage(info, c.opts.FirstEntryIndexKey)
	seq, shard := c.nMLs, c.topicShard(t)
	base, partition := t.Base().String(), t.PartitionIndex()
	for i, li := range info.GetLedgerInfo() {
		id := li.GetLedgerId()
		rec := c.buf[:0].uint(recLI).uint(seq).uint(uint64(i)).
			flags(cluster.IsOpen(info, i), cluster.OffloadedAway(li), ml.owned).int(int64(shard))
		if ml.owned {
			rec = rec.str(base).int(int64(partition))
		}
		if err := c.refRecord(id, uint32(i), rec); err != nil {
			return err
		}
		ml.ledgers = append(ml.ledgers, mlLedger{id: id, entries: li.GetEntries()})
	}
	c.nMLs++
	if c.usage != nil && ml.owned {
		if err := c.usage.addTopic(t); err != nil {
			return err
		}
	}
	c.buf, c.key = ml.encode(c.buf[:0]), seqKey(c.key[:0], seq)
	if err := c.mls.Append(c.key, c.buf); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	return nil
}

func (c *checker) schemaLocator(t formats.TopicName, path string, loc *schemapb.SchemaLocator) error {
	shard := c.topicShard(t)
	for i, ie := range locatorVersions(loc) {
		c.stats.SchemaVersions++
		id := ie.GetPosition().GetLedgerId()
		seq := c.nSVs
		c.nSVs++
		rec := c.buf[:0].uint(recSchema).uint(seq).int(int64(shard)).int(ie.GetPosition().GetEntryId()).bytes(ie.GetHash())
		if err := c.refRecord(id, uint32(i), rec); err != nil {
			return err
		}
		sv := schemaVersion{key: t.SchemaKey(), topic: t.String(), path: path, version: ie.GetVersion(),
			ledger: id, entry: ie.GetPosition().GetEntryId(), hash: ie.GetHash(), owned: c.ownsTopic(t)}
		c.buf, c.key = sv.encode(c.buf[:0]), seqKey(c.key[:0], seq)
		if err := c.svs.Append(c.key, c.buf); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	return nil
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

func (c *checker) ledgerNode(id int64, m *bkpb.LedgerMetadataFormat) error {
	f := ledgerFacts{node: true, lastEntryID: m.GetLastEntryId()}
	// BookKeeper keeps lastEntryId -1 (and length 0) until a ledger holds an entry
	// and is closed: such a ledger may rightly have no entries.
	f.metaEmpty = (m.LastEntryId != nil && m.GetLastEntryId() < 0) || (m.LastEntryId == nil && m.GetLength() == 0)
	f.closed = m.GetState() == bkpb.LedgerMetadataFormat_CLOSED
	f.component, _ = formats.CustomMetadata(m, cluster.CustomComponent)
	switch f.component {
	case cluster.ComponentML:
		f.owner, _ = formats.CustomMetadata(m, cluster.CustomManagedLedger)
		f.cursorName, f.cursorLedger = formats.CustomMetadata(m, cluster.CustomCursor)
	case cluster.ComponentSchema:
		f.owner, _ = formats.CustomMetadata(m, cluster.CustomSchemaID)
	}
	return c.refRecord(id, 0, c.nodeRecord(&f))
}

// nodeRecord is the by-ledger record of a ledger's own node.
func (c *checker) nodeRecord(f *ledgerFacts) enc {
	return c.buf[:0].uint(recNode).flags(f.badNode, f.metaEmpty, f.closed, f.cursorLedger).
		int(f.lastEntryID).str(f.component).str(f.owner).str(f.cursorName)
}

// foldLedgers folds each ledger's by-ledger records, in walk order, into one
// facts record per ledger, by id.
func (c *checker) foldLedgers(ctx context.Context) error {
	var (
		cur   ledgerFacts
		curID int64
		have  bool
	)
	flush := func() error {
		if !have {
			return nil
		}
		c.buf, c.key = cur.encode(c.buf[:0]), idKey(c.key[:0], curID)
		return c.facts.Append(c.key, c.buf)
	}
	err := c.byLedger.Sorted(ctx, func(k, v []byte) error {
		id := idOfKey(k)
		if !have || id != curID {
			if err := flush(); err != nil {
				return err
			}
			cur = ledgerFacts{lastEntryID: -1, liRefs: cur.liRefs[:0], svRefs: cur.svRefs[:0], usage: cur.usage[:0]}
			curID, have = id, true
		}
		return c.foldRecord(&cur, v)
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = c.facts.Finish()
	}
	c.byLedger.Close()
	if err != nil {
		return fmt.Errorf("check: fold ledger records: %w", err)
	}
	return nil
}

// foldRecord adds one by-ledger record to f.
func (c *checker) foldRecord(f *ledgerFacts, v []byte) error {
	d := dec{b: v}
	switch d.uint() {
	case recNode:
		f.node = true
		d.flags(&f.badNode, &f.metaEmpty, &f.closed, &f.cursorLedger)
		f.lastEntryID, f.component, f.owner, f.cursorName = d.int(), d.str(), d.str(), d.str()
	case recLI:
		var openLast, gone, owned bool
		ref := liRef{ml: d.uint(), idx: uint32(d.uint())}
		d.flags(&openLast, &gone, &owned)
		c.referredBy(f, int(d.int()))
		f.refs |= refLedgerInfo
		f.openLast, f.offloadedGone = f.openLast || openLast, f.offloadedGone || gone
		f.liRefs = append(f.liRefs, ref)
		if owned {
			u := usageRef{base: d.str(), partition: int(d.int())}
			if !slices.Contains(f.usage, u) {
				f.usage = append(f.usage, u)
			}
		}
	case recSchema:
		seq := d.uint()
		c.referredBy(f, int(d.int()))
		f.svRefs = append(f.svRefs, svRef{seq: seq, entry: d.int(), hash: bytes.Clone(d.bytes())})
		f.refs |= refSchema
	case recCursor:
		c.referredBy(f, int(d.int()))
		f.refs |= refCursor
	default:
		d.err = errSpillRecord
	}
	return d.done("by-ledger record")
}
