package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/store"
)

// State says whether a schema version can be read.
type State string

// States of a schema version.
const (
	// StateOK: ledger node and entry exist and the entry decodes.
	StateOK State = "ok"
	// StateLostLedger: neither the ledger's /ledgers/... node nor any of its entries exist.
	StateLostLedger State = "lost-ledger"
	// StateLostEntry: the entry the locator points at is gone (the ledger node or other entries remain).
	StateLostEntry State = "lost-entry"
	// StateNoLedgerNode: the entry is there but its /ledgers/... node is gone, so
	// BookKeeper cannot open the ledger (NoSuchLedgerExists).
	StateNoLedgerNode State = "no-ledger-node"
	// StateUnreadable: the entry exists but is not this key's SchemaEntry.
	StateUnreadable State = "unreadable"
)

// Lost reports whether a broker reading the version would fail.
func (s State) Lost() bool { return s != StateOK }

// locatorView is one schema locator as read.
type locatorView struct {
	Path      string
	Key       string // schema key, tenant/ns/<encoded topic>
	Version   uint64 // node version, for compare-and-set
	Value     []byte // node bytes (a copy)
	Locator   *schemapb.SchemaLocator
	DecodeErr error
	// ledgers has its versions' ledger nodes read ahead (scanLocators).
	ledgers *store.AheadReader
}

// locatorBatch locators are read before the ledger nodes of their versions are
// looked up, at once (store.ReadAhead): a Get per version cost a round trip each on
// a live store (5,000 topics on etcd: 8 s for a dry run of schema repair).
const locatorBatch = 100

// scanLocators calls fn for every schema locator (only keyFilter's when not empty),
// in path order. Nodes under /schemas/ that are not locator paths are skipped.
func scanLocators(ctx context.Context, dd *datadir.DataDir, keyFilter string, fn func(*locatorView) error) error {
	var pending []*locatorView
	flush := func() error {
		var paths []string
		for _, lv := range pending {
			if lv.DecodeErr != nil {
				continue
			}
			for _, ie := range locatorVersions(lv.Locator) {
				if p := formats.LedgerPath(ie.GetPosition().GetLedgerId()); p != "" {
					paths = append(paths, p)
				}
			}
		}
		ahead := store.ReadAhead(dd.Metadata, paths)
		batch := pending
		pending = nil
		for _, lv := range batch {
			lv.ledgers = ahead
			if err := fn(lv); err != nil {
				return err
			}
		}
		return nil
	}
	visit := func(n store.Node) error {
		t, ok := formats.ParseSchemaLocatorPath(n.Path)
		if !ok {
			return nil
		}
		lv := &locatorView{Path: n.Path, Key: t.SchemaKey(), Version: n.Version, Value: bytes.Clone(n.Value)}
		if keyFilter != "" && lv.Key != keyFilter {
			return nil
		}
		lv.Locator, lv.DecodeErr = formats.DecodeSchemaLocator(lv.Value)
		if pending = append(pending, lv); len(pending) >= locatorBatch {
			return flush()
		}
		return nil
	}
	if keyFilter != "" {
		n, err := dd.Metadata.Get(formats.SchemasRoot + "/" + keyFilter)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("schema locator %s: %w", keyFilter, err)
		}
		if err := visit(n); err != nil {
			return err
		}
		return flush()
	}
	if err := dd.Metadata.Walk(ctx, formats.SchemasRoot+"/", visit); err != nil {
		return err
	}
	return flush()
}

// locatorVersions returns one IndexEntry per version, ascending: the index, plus
// info when the index lacks its version.
func locatorVersions(loc *schemapb.SchemaLocator) []*schemapb.IndexEntry {
	byVersion := make(map[int64]*schemapb.IndexEntry)
	for _, ie := range loc.GetIndex() {
		if _, dup := byVersion[ie.GetVersion()]; !dup {
			byVersion[ie.GetVersion()] = ie
		}
	}
	if info := loc.GetInfo(); info != nil {
		if _, ok := byVersion[info.GetVersion()]; !ok {
			byVersion[info.GetVersion()] = info
		}
	}
	out := make([]*schemapb.IndexEntry, 0, len(byVersion))
	for _, ie := range byVersion {
		out = append(out, ie)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetVersion() < out[j].GetVersion() })
	return out
}

// readVersions reads every version of a decoded locator, ascending, and calls fn
// with what the data dir holds for it.
func readVersions(ctx context.Context, dd *datadir.DataDir, lv *locatorView, fn func(*schemapb.IndexEntry, storedVersion) error) error {
	getNode := dd.Metadata.Get
	if lv.ledgers != nil {
		getNode = lv.ledgers.Get
	}
	for _, ie := range locatorVersions(lv.Locator) {
		if err := ctx.Err(); err != nil {
			return err
		}
		sv, err := readVersion(dd, getNode, lv.Key, ie)
		if err != nil {
			return err
		}
		if err := fn(ie, sv); err != nil {
			return err
		}
	}
	return nil
}

// storedVersion is what the data dir holds for one version.
type storedVersion struct {
	State  State
	Reason string // why it is not ok
	Entry  *schemapb.SchemaEntry
	Info   *schemapb.SchemaInfo
}

// readVersion reads the ledger entry an IndexEntry points at; getNode reads ledger nodes.
func readVersion(dd *datadir.DataDir, getNode func(string) (store.Node, error), key string, ie *schemapb.IndexEntry) (storedVersion, error) {
	ledger, entry := ie.GetPosition().GetLedgerId(), ie.GetPosition().GetEntryId()
	// A damaged ledger node exists, as check counts it (cluster's rule).
	nodeExists, err := cluster.LedgerNodeExistsIn(getNode, ledger)
	if err != nil {
		return storedVersion{}, fmt.Errorf("schema %s version %d: ledger %d node: %w", key, ie.GetVersion(), ledger, err)
	}
	b, err := dd.Ledgers.Entry(ledger, entry)
	if errors.Is(err, store.ErrNotFound) {
		p, err := cluster.PresenceWithNode(dd.Ledgers, ledger, nodeExists)
		if err != nil {
			return storedVersion{}, fmt.Errorf("schema %s version %d: ledger %d: %w", key, ie.GetVersion(), ledger, err)
		}
		if p.Lost() {
			return storedVersion{State: StateLostLedger, Reason: fmt.Sprintf("ledger %d: no /ledgers node and no entries", ledger)}, nil
		}
		return storedVersion{State: StateLostEntry, Reason: fmt.Sprintf("ledger %d entry %d is missing", ledger, entry)}, nil
	}
	if err != nil {
		if errors.Is(err, store.ErrTruncatedValue) {
			return storedVersion{State: StateUnreadable, Reason: fmt.Sprintf("ledger %d entry %d: %v", ledger, entry, err)}, nil
		}
		return storedVersion{}, fmt.Errorf("schema %s version %d: ledger %d entry %d: %w", key, ie.GetVersion(), ledger, entry, err)
	}
	se, info, why := decodeStored(b, key)
	if why != "" {
		return storedVersion{State: StateUnreadable, Reason: fmt.Sprintf("ledger %d entry %d: %s", ledger, entry, why)}, nil
	}
	sv := storedVersion{State: StateOK, Entry: se, Info: info}
	if !nodeExists {
		sv.State, sv.Reason = StateNoLedgerNode, fmt.Sprintf("ledger %d has entries but no /ledgers node", ledger)
	}
	return sv, nil
}

// decodeStored decodes a schema ledger entry; why says what is wrong with it.
func decodeStored(b []byte, key string) (*schemapb.SchemaEntry, *schemapb.SchemaInfo, string) {
	se, err := formats.DecodeSchemaEntry(b)
	if err != nil {
		return nil, nil, err.Error()
	}
	if se.SchemaData == nil {
		return nil, nil, "schema entry has no schema_data"
	}
	info, err := formats.DecodeSchemaInfo(se.SchemaData)
	if err != nil {
		return nil, nil, err.Error()
	}
	if id := info.GetSchemaId(); id != "" && id != key {
		return nil, nil, fmt.Sprintf("entry belongs to schema key %q", id)
	}
	return se, info, ""
}
