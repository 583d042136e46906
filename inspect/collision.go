package inspect

// Schema version collisions. When a broker clears a topic's schema
// history (autoSkipNonRecoverableData) the next producer
// registers its schema as a new version 0: from then on a version number stored
// in an old message may resolve to a schema of the new history. The new
// history's versions are registered after the old messages were published, and
// that is what gives them away here.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/schemaid"
	"github.com/ledgermedic/ledgermedic/store"
)

// KindSchemaVersionCollision: stored messages use a registry version whose
// SchemaInfo was registered after they were published: they were written with
// an older history's version of the same number, which may be another schema.
const KindSchemaVersionCollision = "schema-version-collision"

// UseCollision is the SchemaUse status of a version with a collision.
const UseCollision = "collision"

// MessageSpan is the stored messages of one schema version in one span of
// publish time.
type MessageSpan struct {
	Messages, Entries             int64
	First, Last                   Position // lowest and highest publish time
	FirstPublishMs, LastPublishMs uint64
}

func spanOf(c *useCounter) MessageSpan {
	return MessageSpan{Messages: c.messages, Entries: c.entries, First: c.first, Last: c.last,
		FirstPublishMs: c.firstMs, LastPublishMs: c.lastMs}
}

// String says "N messages in E entries (ledger:entry a to b, published x to y)".
func (s MessageSpan) String() string {
	if s.Entries == 0 {
		return "no messages"
	}
	return fmt.Sprintf("%d messages in %d entries (ledger:entry %s to %s, published %s to %s)",
		s.Messages, s.Entries, s.First, s.Last, usageTime(s.FirstPublishMs), usageTime(s.LastPublishMs))
}

// VersionSplit is the stored messages of a topic that carry one registry
// version, split at a time (the version's registration): Before holds those
// published earlier (an older history's), After the others. Without a split
// time every message is in After.
type VersionSplit struct {
	Version int64
	SplitMs int64 // -1 when no split was asked for
	Before  MessageSpan
	After   MessageSpan
}

// SplitVersionUsage reads every stored entry of a topic's managed ledgers (all
// partitions of a base topic) and counts, per registry schema version, the
// messages published before splitMs[version] and the others. Entries that do not
// parse are skipped (Check and SchemaUsage report them). A topic without a
// managed ledger is ErrNoSuchTopic. Versions come back ascending.
func SplitVersionUsage(ctx context.Context, dd *datadir.DataDir, topic formats.TopicName, splitMs map[int64]int64) ([]VersionSplit, error) {
	base := topic.Base()
	ids, err := topicLedgerIDs(ctx, dd.Metadata, base)
	if err != nil {
		return nil, err
	}
	type pair struct{ before, after useCounter }
	counts := map[int64]*pair{}
	var (
		refs  formats.EntryRefs
		entry formats.Entry
	)
	for _, id := range ids {
		err := streamLedger(ctx, dd.Ledgers, id, 0, func(entryID int64, v []byte) error {
			if !formats.PeekEntry(v, &refs) {
				if formats.ParseEntryInto(v, &entry, nil, nil) != nil {
					return nil
				}
				refs = entry.Refs()
			}
			if refs.SchemaVersion == nil {
				return nil
			}
			version, err := formats.DecodeSchemaVersion(refs.SchemaVersion)
			if err != nil {
				return nil // legacy or unknown bytes: not a registry version
			}
			p := counts[version]
			if p == nil {
				p = &pair{}
				counts[version] = p
			}
			c := &p.after
			if at, ok := splitMs[version]; ok && int64(refs.PublishTime) < at {
				c = &p.before
			}
			c.add(Position{LedgerID: id, EntryID: entryID}, refs.PublishTime, int64(refs.NumMessages))
			return nil
		}, func(*store.TruncatedError) error { return nil })
		if err != nil {
			return nil, fmt.Errorf("split schema usage of %s: ledger %d: %w", base, id, err)
		}
	}
	out := make([]VersionSplit, 0, len(counts))
	for v, p := range counts {
		at, ok := splitMs[v]
		if !ok {
			at = -1
		}
		out = append(out, VersionSplit{Version: v, SplitMs: at, Before: spanOf(&p.before), After: spanOf(&p.after)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// topicLedgerIDs are the ledgers of a base topic's managed ledgers (every
// partition's), ascending, once each; those of nodes that do not decode are
// left out (the scan reports them).
func topicLedgerIDs(ctx context.Context, ms store.MetadataStore, base formats.TopicName) ([]int64, error) {
	mls, err := cluster.TopicManagedLedgers(ctx, ms, base)
	if err != nil {
		return nil, fmt.Errorf("schema usage: %w", err)
	}
	var ids []int64
	for _, ml := range mls {
		if ml.Damaged != nil {
			continue
		}
		info, _, err := formats.DecodeManagedLedgerInfo(ml.Node.Value)
		if err != nil {
			continue
		}
		for _, li := range info.GetLedgerInfo() {
			ids = append(ids, li.GetLedgerId())
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// topicCollisions looks, for every registry version the topic's stored messages
// use and the locator lists readably, whether the version was registered after
// the first of those messages was published; where one was, it splits the
// messages at the registration times and reports each version.
func topicCollisions(ctx context.Context, dd *datadir.DataDir, vs versionSource, locators *store.AheadReader, tu *TopicUsage) ([]report.Finding, error) {
	suspects := map[int64]int64{} // version -> registration time
	var locPath string
	for _, u := range tu.Uses {
		if u.Status != UseOK || u.Field != schemaid.FieldSchemaVersion || u.ID.Kind != schemaid.KindPulsarVersion {
			continue
		}
		if locPath == "" {
			locPath = formats.SchemasRoot + "/" + tu.SchemaKey
		}
		ts, ok, err := registeredAt(vs, locators, tu.SchemaKey, locPath, u.ID.Version)
		if err != nil {
			return nil, err
		}
		if ok && int64(u.FirstPublishMs) < ts {
			suspects[u.ID.Version] = ts
		}
	}
	if len(suspects) == 0 {
		return nil, nil
	}
	topic, err := formats.ParseTopic(tu.Topic)
	if err != nil {
		return nil, fmt.Errorf("schema collisions: topic %s: %w", tu.Topic, err)
	}
	splits, err := SplitVersionUsage(ctx, dd, topic, suspects)
	if err != nil {
		return nil, err
	}
	var out []report.Finding
	for _, s := range splits {
		if s.SplitMs < 0 || s.Before.Entries == 0 {
			continue
		}
		f := newFinding(KindSchemaVersionCollision, fmt.Sprintf("%s schema version %d", tu.Topic, s.Version),
			"the schema history was reset: do not let consumers read the old messages with this version; "+
				"see docs/runbook-lost-schema-ledger.md (schema repair --from CAPTURE --resolve-collision old|new)",
			"version %d was registered at %s, after stored messages using it were published: old history: %s; "+
				"new history: %s",
			s.Version, usageTime(uint64(s.SplitMs)), s.Before, s.After)
		f.Topic, f.Path, f.Version = tu.Topic, locPath, report.Int64(s.Version)
		out = append(out, f)
		for j := range tu.Uses {
			u := &tu.Uses[j]
			if u.Field == schemaid.FieldSchemaVersion && u.ID.Kind == schemaid.KindPulsarVersion && u.ID.Version == s.Version {
				u.Status = UseCollision
				u.Detail = fmt.Sprintf("old history: %d messages, new history: %d messages", s.Before.Messages, s.After.Messages)
			}
		}
	}
	return out, nil
}

// registeredAt is the SchemaInfo timestamp of one version the locator at
// path lists; ok is false when it cannot be read (other findings say why).
func registeredAt(vs versionSource, locators *store.AheadReader, key, path string, version int64) (ts int64, ok bool, err error) {
	n, err := locators.Get(path)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTruncatedValue) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("schema collisions: %s: %w", path, err)
	}
	loc, err := formats.DecodeSchemaLocator(n.Value)
	if err != nil {
		return 0, false, nil
	}
	ie := findVersion(loc, version)
	if ie == nil {
		return 0, false, nil
	}
	vf, err := vs.version(key, version, ie.GetPosition().GetLedgerId(), ie.GetPosition().GetEntryId())
	if err != nil {
		return 0, false, fmt.Errorf("schema collisions: %s version %d: %w", path, version, err)
	}
	return vf.ts, vf.hasTS, nil
}
