package repair

import (
	"context"
	"fmt"
	"github.com/ledgermedic/ledgermedic/datadir"
	"time"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/mutate"
)

// PushToBookies turns a committed schema repair run made on a working copy into
// a plan for the live cluster dd opens with its bookies (--ledgers bk:): the
// run's node changes as mutate.PushPlan makes them, except that each new ledger
// (its entries and its /ledgers node) becomes one bookie-ledger item with an id
// from the cluster's generator (takeIDs; else the working copy's id stands in,
// as a placeholder) and metadata made for the live cluster (a sibling schema
// ledger's sizes, writable bookies), and every locator and SchemaEntry the run
// wrote names the new ids. A run with no new ledger is PushPlan's.
func PushToBookies(ctx context.Context, rec *mutate.RunRecord, dd *datadir.DataDir, takeIDs bool, q Quorums) (*mutate.Plan, error) {
	p, err := mutate.PushPlan(rec, dd.Metadata)
	if err != nil {
		return nil, err
	}
	entries := map[int64][]mutate.LedgerEntry{}
	for _, ji := range rec.Items {
		if ji.Kind == mutate.KindLedger {
			entries[ji.LedgerID] = ji.Entries
		}
	}
	if len(entries) == 0 {
		return p, nil
	}
	u, err := scanLedgerIDs(ctx, dd)
	if err != nil {
		return nil, err
	}
	if u.live, err = newLiveBookies(ctx, dd, takeIDs, q); err != nil {
		return nil, err
	}
	if u.live == nil {
		return nil, fmt.Errorf("push run %s: the ledger store does not write to bookies: %w", rec.RunID, mutate.ErrInvalidPlan)
	}
	// New ids first: locators and entries name them.
	newID := map[int64]int64{}
	for _, it := range p.Items {
		old, err := formats.ParseLedgerPath(it.Path)
		if _, isNew := entries[old]; err != nil || !isNew || it.Kind != mutate.KindCreate {
			continue
		}
		id := old
		if takeIDs {
			if id, err = u.live.bw.NewLedgerID(ctx); err != nil {
				return nil, err
			}
		}
		newID[old] = id
	}
	if len(newID) != len(entries) {
		return nil, fmt.Errorf("push run %s: %d new ledgers, %d of them with a /ledgers node: %w", rec.RunID, len(entries), len(newID), mutate.ErrInvalidPlan)
	}
	out := &mutate.Plan{Command: p.Command, Args: p.Args, Flags: p.Flags, Notes: p.Notes}
	var ledgers, nodes []mutate.Item
	for _, it := range p.Items {
		old, err := formats.ParseLedgerPath(it.Path)
		if id, isNew := newID[old]; err == nil && isNew {
			li, err := pushedLedger(u, old, id, it.After, entries[old], newID)
			if err != nil {
				return nil, fmt.Errorf("push run %s: ledger %d: %w", rec.RunID, old, err)
			}
			ledgers = append(ledgers, li)
			continue
		}
		if formats.ClassifyPath(it.Path) == formats.NodeSchemaLocator && it.After != nil {
			if it.After, err = remapLocator(it.After, newID); err != nil {
				return nil, fmt.Errorf("push run %s: %s: %w", rec.RunID, it.Path, err)
			}
		}
		nodes = append(nodes, it)
	}
	out.Items = append(ledgers, nodes...)
	out.Notes = append(out.Notes, u.templateNote())
	out.Notes = append(out.Notes, u.live.notes()...)
	for _, it := range ledgers {
		out.Notes = append(out.Notes, it.Description)
	}
	return out, nil
}

// pushedLedger is the bookie-ledger item of a working copy's new schema ledger
// old, as ledger id: its schema key and ctime from the working copy's node, the
// positions its SchemaEntry names remapped by ids.
func pushedLedger(u *ledgerUniverse, old, id int64, node []byte, entries []mutate.LedgerEntry, ids map[int64]int64) (mutate.Item, error) {
	md, err := formats.DecodeLedgerMetadata(node)
	if err != nil {
		return mutate.Item{}, err
	}
	key, ok := formats.CustomMetadata(md, cluster.CustomSchemaID)
	if comp, _ := formats.CustomMetadata(md, cluster.CustomComponent); !ok || comp != cluster.ComponentSchema || len(entries) != 1 {
		return mutate.Item{}, fmt.Errorf("not a schema ledger with one entry (only schema repair runs write ledgers)")
	}
	entry, err := formats.DecodeSchemaEntry(entries[0].Value)
	if err != nil {
		return mutate.Item{}, err
	}
	remapIndex(entry.GetIndex(), ids)
	b, err := formats.EncodeSchemaEntry(entry)
	if err != nil {
		return mutate.Item{}, err
	}
	items, err := u.ledgerItems(key, id, b, fmt.Sprintf("schema %s (ledger %d of the run)", key, old), time.UnixMilli(md.GetCtime()))
	if err != nil {
		return mutate.Item{}, err
	}
	return items[0], nil
}

// remapLocator rewrites the ledger ids a locator names.
func remapLocator(b []byte, ids map[int64]int64) ([]byte, error) {
	loc, err := formats.DecodeSchemaLocator(b)
	if err != nil {
		return nil, err
	}
	remapIndex(append([]*schemapb.IndexEntry{loc.GetInfo()}, loc.GetIndex()...), ids)
	return formats.EncodeSchemaLocator(loc)
}

func remapIndex(index []*schemapb.IndexEntry, ids map[int64]int64) {
	for _, ie := range index {
		if pos := ie.GetPosition(); pos != nil {
			if id, ok := ids[pos.GetLedgerId()]; ok {
				pos.LedgerId = ptr(id)
			}
		}
	}
}
