package inspect

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// ErrNoSuchTopic means no managed ledger (or schema locator) exists for a topic.
var ErrNoSuchTopic = cluster.ErrNoSuchTopic

// Topics lists every managed ledger: its ledgers, entries and size, the encoding
// of its node, whether the topic is indexed and how many of its ledgers carry
// firstEntryIndex (indexKey; "" means cluster.FirstEntryIndexKey). It holds
// every row: TopicsTable reads them as the table prints.
func Topics(ctx context.Context, dd *datadir.DataDir, indexKey string) (*report.Table, error) {
	// Pointers: a cluster has tens of thousands of topics, and a growing slice
	// of rows would copy each row (pointers and all) at every doubling.
	var rows []*TopicRow
	if err := EachTopic(ctx, dd, indexKey, func(r *TopicRow) error { rows = append(rows, r); return nil }); err != nil {
		return nil, err
	}
	return report.Rows("topics", "", rows), nil
}

// TopicsTable is the topics view whose rows are read from the metadata as it
// prints, in walk order: memory stays flat however many topics there are.
func TopicsTable(ctx context.Context, dd *datadir.DataDir, indexKey string) *report.Table {
	return report.Stream("topics", "", func(yield func(*TopicRow) error) error {
		return EachTopic(ctx, dd, indexKey, yield)
	})
}

// EachTopic calls fn with the topics view's row of every managed ledger, in
// walk order.
func EachTopic(ctx context.Context, dd *datadir.DataDir, indexKey string, fn func(*TopicRow) error) error {
	indexKey = cluster.KeyFor(indexKey)
	err := walkNodes(ctx, dd.Metadata, formats.ManagedLedgersRoot+"/", func(n store.Node) error {
		topic, ok := formats.ParseManagedLedgerPath(n.Path)
		if !ok {
			return nil // a cursor or an intermediate node
		}
		info, enc, err := formats.DecodeManagedLedgerInfo(n.Value)
		if err != nil {
			return fn(&TopicRow{Topic: topic.String(), Error: err.Error()})
		}
		var entries, size int64
		for _, li := range info.GetLedgerInfo() {
			entries += li.GetEntries()
			size += li.GetSize()
		}
		withEntries, covered := cluster.Coverage(info, indexKey)
		// Read errors other than lost and damaged entries are returned
		// rather than shown as not indexed.
		by, err := cluster.InfoIndexed(info, dd.Ledgers)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Path, err)
		}
		row := &TopicRow{Topic: topic.String(), Ledgers: report.Ptr(len(info.GetLedgerInfo())), Entries: report.Ptr(entries),
			Size: report.Ptr(size), Encoding: enc.String(),
			Coverage: fmt.Sprintf("%d/%d", covered, withEntries), LedgersWithEntries: report.Ptr(withEntries),
			LedgersWithIndex: report.Ptr(covered)}
		property, _ := cluster.HasMLIndex(info)
		row.setIndexed(by, property)
		return fn(row)
	}, func(te *store.TruncatedError) error {
		if topic, ok := formats.ParseManagedLedgerPath(te.Path); ok {
			return fn(&TopicRow{Topic: topic.String(), Error: te.Error()})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	return nil
}

// TopicRow is one managed ledger of the topics view. A node that does not
// decode has only Topic and Error.
type TopicRow struct {
	Topic       string `json:"topic" table:"TOPIC"`
	Ledgers     *int   `json:"ledgers,omitempty" table:"LEDGERS"`
	Entries     *int64 `json:"entries,omitempty" table:"ENTRIES"`
	Size        *int64 `json:"size,omitempty" table:"SIZE"` // bytes
	Encoding    string `json:"encoding,omitempty" table:"ENCODING"`
	IndexedText string `json:"-" table:"INDEXED"`
	Indexed     *bool  `json:"indexed,omitempty"`
	// IndexedBy is how the topic is known to be indexed: ml-property (the
	// managed ledger's "index" property, whose value is IndexProperty) or
	// entry-metadata (broker entry metadata with an index in a ledger's entry 0).
	IndexedBy string `json:"indexed_by,omitempty"`
	// IndexProperty is the property's value, the broker's last index; a value
	// that is not a decimal integer is IndexPropertyText instead.
	IndexProperty      *int64 `json:"index_property,omitempty"`
	IndexPropertyText  string `json:"index_property_text,omitempty"`
	Coverage           string `json:"-" table:"FIRST ENTRY INDEX"`
	LedgersWithEntries *int   `json:"ledgers_with_entries,omitempty"`
	LedgersWithIndex   *int   `json:"ledgers_with_first_entry_index,omitempty"`
	Error              string `json:"error,omitempty" table:"ERROR"`
}

// setIndexed fills the indexed fields of a topics row from how the topic is
// known to be indexed (cluster.InfoIndexed) and, when by the managed-ledger
// property, its value. The table shows "ml-property(<value>)",
// "entry-metadata" or "no".
func (r *TopicRow) setIndexed(by cluster.Indexed, property string) {
	r.Indexed = report.Ptr(by != cluster.NotIndexed)
	r.IndexedText = by.String()
	if by == cluster.NotIndexed {
		return
	}
	r.IndexedBy = by.String()
	if by == cluster.IndexedByProperty {
		if v, err := strconv.ParseInt(property, 10, 64); err == nil {
			r.IndexProperty = &v
		} else {
			r.IndexPropertyText = property
		}
		r.IndexedText += "(" + property + ")"
	}
}

// managedLedgersOf returns the managed-ledger nodes of a topic, values copied
// (cluster.TopicManagedLedgers); a damaged node is an error here: its ledgers
// cannot be listed.
func managedLedgersOf(ctx context.Context, ms store.MetadataStore, topic formats.TopicName) ([]store.Node, error) {
	mls, err := cluster.TopicManagedLedgers(ctx, ms, topic)
	if err != nil {
		return nil, err
	}
	nodes := make([]store.Node, len(mls))
	for i, ml := range mls {
		if ml.Damaged != nil {
			return nil, ml.Damaged
		}
		nodes[i] = ml.Node
	}
	return nodes, nil
}

// Ledgers lists every LedgerInfo of a topic (every partition of a partitioned
// topic) beside what the data dir holds: the ledger node and the stored entries.
func Ledgers(ctx context.Context, dd *datadir.DataDir, topic formats.TopicName) (*report.Table, error) {
	nodes, err := managedLedgersOf(ctx, dd.Metadata, topic)
	if err != nil {
		return nil, err
	}
	type row struct {
		topic string
		li    *mlpb.ManagedLedgerInfo_LedgerInfo
	}
	var rows []row
	want := map[int64]int64{}
	for _, n := range nodes {
		info, _, err := formats.DecodeManagedLedgerInfo(n.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Path, err)
		}
		tn, _ := formats.ParseManagedLedgerPath(n.Path)
		for _, li := range info.GetLedgerInfo() {
			rows = append(rows, row{tn.String(), li})
			want[li.GetLedgerId()] = 0
		}
	}
	if err := countEntries(ctx, dd.Ledgers, want); err != nil {
		return nil, err
	}
	out := make([]LedgerRow, 0, len(rows))
	for _, r := range rows {
		id := r.li.GetLedgerId()
		node, err := cluster.LedgerNodeExists(dd.Metadata, id)
		if err != nil {
			return nil, err
		}
		row := LedgerRow{Topic: r.topic, LedgerID: id, Entries: r.li.GetEntries(), Size: r.li.GetSize(),
			Timestamp: report.Millis(r.li.GetTimestamp()), OffloadedText: cluster.OffloadState(r.li),
			Properties: kvs(r.li.GetProperties()), NodeExists: node, StoredEntries: want[id]}
		if ms := r.li.GetTimestamp(); ms != 0 {
			row.TimestampMs = report.Ptr(ms)
		}
		if oc := r.li.GetOffloadContext(); oc != nil {
			row.Offload = &OffloadView{Complete: oc.GetComplete(), BookkeeperDeleted: oc.GetBookkeeperDeleted()}
		}
		out = append(out, row)
	}
	return report.Rows("ledgers", "", out), nil
}

// LedgerRow is one LedgerInfo of the ledgers view beside what the data dir holds.
type LedgerRow struct {
	Topic         string       `json:"topic" table:"TOPIC"`
	LedgerID      int64        `json:"ledger_id" table:"LEDGER"`
	Entries       int64        `json:"entries" table:"ENTRIES"`
	Size          int64        `json:"size" table:"SIZE"` // bytes
	Timestamp     report.Time  `json:"timestamp,omitzero" table:"TIMESTAMP"`
	TimestampMs   *int64       `json:"timestamp_ms,omitempty"` // LedgerInfo.timestamp: close time, epoch ms
	OffloadedText string       `json:"-" table:"OFFLOADED"`
	Offload       *OffloadView `json:"offload,omitempty"` // absent: not offloaded
	Properties    report.KVs   `json:"properties,omitempty" table:"PROPERTIES"`
	NodeExists    bool         `json:"node_exists" table:"NODE"`
	StoredEntries int64        `json:"stored_entries" table:"STORED"`
}

// OffloadView is a LedgerInfo's offload context.
type OffloadView struct {
	Complete          bool `json:"complete"`
	BookkeeperDeleted bool `json:"bookkeeper_deleted"`
}

// countEntries fills want[id] with each wanted ledger's stored entry count, with
// one key-only pass that stops after the largest wanted id.
func countEntries(ctx context.Context, ls store.LedgerStore, want map[int64]int64) error {
	if len(want) == 0 {
		return nil
	}
	maxID := int64(-1)
	for id := range want {
		maxID = max(maxID, id)
	}
	errStop := errors.New("stop")
	err := ls.LedgerIDs(ctx, func(id, n int64) error {
		if _, ok := want[id]; ok {
			want[id] = n
		}
		if id >= maxID {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("count entries: %w", err)
	}
	return nil
}

func kvs(props []*mlpb.KeyValue) report.KVs {
	out := make(report.KVs, len(props))
	for i, kv := range props {
		out[i] = report.KV{Key: kv.GetKey(), Value: kv.GetValue()}
	}
	return out
}

// Schemas lists every version of every schema locator (or of one topic's):
// where it is stored and what state its entry is in. It holds every row:
// SchemasTable reads them as the table prints.
func Schemas(ctx context.Context, dd *datadir.DataDir, topic *formats.TopicName) (*report.Table, error) {
	var rows []SchemaRow
	err := EachSchema(ctx, dd, topic, func(r *SchemaRow) error { rows = append(rows, *r); return nil })
	return report.Rows("schemas", "", rows), err
}

// SchemasTable is the schemas view of every locator, its rows read from the
// stores as it prints: memory stays flat however many versions there are.
func SchemasTable(ctx context.Context, dd *datadir.DataDir) *report.Table {
	return report.Stream("schemas", "", func(yield func(*SchemaRow) error) error {
		return EachSchema(ctx, dd, nil, yield)
	})
}

// schemaChunk is how many versions EachSchema holds before it looks up their
// ledgers, in one batch: one Get per version cost a round trip each on a live
// store (5,000 topics on etcd: 10 s), and all of them at once grew with the
// cluster (300,000 topics: 984 MB).
const schemaChunk = 4096

// EachSchema calls fn with the schemas view's row of every version of every
// schema locator (or of one topic's), in walk and version order.
func EachSchema(ctx context.Context, dd *datadir.DataDir, topic *formats.TopicName, fn func(*SchemaRow) error) error {
	var pending []pendingSchemaRow
	flush := func() error {
		err := schemaRows(dd, pending, fn)
		pending = pending[:0]
		return err
	}
	visit := func(n store.Node) error {
		tn, ok := formats.ParseSchemaLocatorPath(n.Path)
		if !ok {
			return nil
		}
		loc, err := formats.DecodeSchemaLocator(n.Value)
		if err != nil {
			pending = append(pending, pendingSchemaRow{row: &SchemaRow{Schema: tn.SchemaKey(), State: StateUndecodable, Detail: err.Error()}})
		} else {
			for _, ie := range locatorVersions(loc) {
				sv := schemaVersion{key: tn.SchemaKey(), version: ie.GetVersion(),
					ledger: ie.GetPosition().GetLedgerId(), entry: ie.GetPosition().GetEntryId(), hash: ie.GetHash()}
				pending = append(pending, pendingSchemaRow{sv: sv, latest: loc.GetInfo() != nil && sv.version == loc.GetInfo().GetVersion()})
			}
		}
		if len(pending) >= schemaChunk {
			return flush()
		}
		return nil
	}
	bad := func(te *store.TruncatedError) error {
		if tn, ok := formats.ParseSchemaLocatorPath(te.Path); ok {
			pending = append(pending, pendingSchemaRow{row: &SchemaRow{Schema: tn.SchemaKey(), State: StateTruncated, Detail: te.Error()}})
		}
		return nil
	}
	if topic != nil {
		n, err := dd.Metadata.Get(topic.SchemaLocatorPath())
		var te *store.TruncatedError
		switch {
		case errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("topic %s: no schema locator at %s: %w", topic, topic.SchemaLocatorPath(), ErrNoSuchTopic)
		case errors.As(err, &te):
			err = bad(te)
		case err != nil:
			return err
		default:
			err = visit(n)
		}
		if err != nil {
			return err
		}
	} else if err := walkNodes(ctx, dd.Metadata, formats.SchemasRoot+"/", visit, bad); err != nil {
		return fmt.Errorf("list schemas: %w", err)
	}
	return flush()
}

// pendingSchemaRow is a row of the schemas view before its ledger is looked up:
// a finished row (a locator that does not decode), or a version.
type pendingSchemaRow struct {
	row    *SchemaRow
	sv     schemaVersion
	latest bool
}

// schemaRows finishes the rows, in order, looking up every version's ledger at
// once, and calls fn with each.
func schemaRows(dd *datadir.DataDir, pending []pendingSchemaRow, fn func(*SchemaRow) error) error {
	var ids []int64
	for _, p := range pending {
		if p.row == nil {
			ids = append(ids, p.sv.ledger)
		}
	}
	facts, err := ledgerPresences(dd, ids)
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.row != nil {
			if err := fn(p.row); err != nil {
				return err
			}
			continue
		}
		sv, f := p.sv, facts[p.sv.ledger]
		state, detail, info, err := schemaState(dd.Ledgers, &f, sv)
		if err != nil {
			return fmt.Errorf("%s: %w", schemaLoc(sv.key, sv.version), err)
		}
		var typ string
		if info != nil {
			typ = cluster.SchemaTypeName(info.GetType())
		}
		row := SchemaRow{Schema: sv.key, Version: report.Ptr(sv.version), Type: typ,
			Hash: hex.EncodeToString(sv.hash), LedgerID: report.Ptr(sv.ledger), EntryID: report.Ptr(sv.entry),
			State: state, Latest: p.latest, Detail: detail}
		if err := fn(&row); err != nil {
			return err
		}
	}
	return nil
}

// SchemaRow is one version of a schema locator in the schemas view. A locator
// that does not decode (or is truncated) has only Schema, State and Detail.
type SchemaRow struct {
	Schema   string `json:"schema" table:"SCHEMA"` // the schema key, tenant/ns/topic
	Version  *int64 `json:"version,omitempty" table:"VERSION"`
	Type     string `json:"type,omitempty" table:"TYPE"` // absent when the entry cannot be read
	Hash     string `json:"hash,omitempty" table:"HASH"` // hex SHA-256 the locator holds
	LedgerID *int64 `json:"ledger_id,omitempty" table:"LEDGER"`
	EntryID  *int64 `json:"entry_id,omitempty" table:"ENTRY"`
	State    string `json:"state" table:"STATE"`
	Latest   bool   `json:"latest" table:"LATEST"`
	Detail   string `json:"detail,omitempty" table:"DETAIL"`
}

// ledgerPresences is ledgerPresence for many ledgers (repeats allowed), their
// nodes looked up in batches (cluster.LedgerPresences). Each use takes a copy.
func ledgerPresences(dd *datadir.DataDir, ids []int64) (map[int64]ledgerFacts, error) {
	uniq := slices.Compact(slices.Sorted(slices.Values(ids)))
	ps, err := cluster.LedgerPresences(dd.Metadata, dd.Ledgers, uniq)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]ledgerFacts, len(uniq))
	for i, id := range uniq {
		out[id] = factsOf(ps[i])
	}
	return out, nil
}

// ledgerPresence learns of one ledger what schemaState needs: whether its node
// exists and whether it has any entry (cluster.LedgerPresence).
func ledgerPresence(dd *datadir.DataDir, id int64) (*ledgerFacts, error) {
	p, err := cluster.LedgerPresence(dd.Metadata, dd.Ledgers, id)
	if err != nil {
		return nil, err
	}
	f := factsOf(p)
	return &f, nil
}

// factsOf is what schemaState needs of a ledger's presence.
func factsOf(p cluster.Presence) ledgerFacts {
	f := ledgerFacts{node: p.Node}
	if p.Entries {
		f.stored = 1
	}
	return f
}

// EntriesOptions selects entries of one ledger.
type EntriesOptions struct {
	Ledger int64
	From   int64 // first entry id
	To     int64 // last entry id, inclusive; -1 (any negative) means to the end, 0 is entry 0
	Limit  int   // at most this many rows; <= 0 means DefaultEntriesLimit
}

// DefaultEntriesLimit caps the entries view unless told otherwise.
const DefaultEntriesLimit = 1000

// Entries lists a ledger's entries one row each, every field named; an entry that
// does not parse gets its error with the byte offset. A schema ledger (see
// isSchemaLedger) gets the schema_entries table instead: one row per SchemaEntry
// with its schema key, type, deleted flag, definition size and SHA-256, and
// index length. more is true when Limit stopped the listing before To.
func Entries(ctx context.Context, dd *datadir.DataDir, o EntriesOptions) (t *report.Table, more bool, err error) {
	if o.Limit <= 0 {
		o.Limit = DefaultEntriesLimit
	}
	schema, node, err := isSchemaLedger(ctx, dd, o.Ledger)
	if err != nil {
		return nil, false, fmt.Errorf("ledger %d: %w", o.Ledger, err)
	}
	var e formats.Entry
	var entries []EntryRow
	var schemaEntries []SchemaEntryRow
	add := func(id int64, v []byte, cannot string) {
		switch {
		case schema && cannot != "":
			schemaEntries = append(schemaEntries, SchemaEntryRow{EntryID: id, Error: cannot})
		case schema:
			schemaEntries = append(schemaEntries, schemaEntryRow(id, v))
		case cannot != "":
			entries = append(entries, EntryRow{EntryID: id, Error: cannot})
		default:
			entries = append(entries, entryRow(id, v, &e))
		}
	}
	errLimit := errors.New("limit reached")
	full := func() error {
		if len(entries)+len(schemaEntries) >= o.Limit {
			more = true
			return errLimit
		}
		return nil
	}
	err = streamLedger(ctx, dd.Ledgers, o.Ledger, max(o.From, 0), func(id int64, v []byte) error {
		if o.To >= 0 && id > o.To {
			return errLimit
		}
		if id < o.From {
			return nil
		}
		if err := full(); err != nil {
			return err
		}
		add(id, v, "")
		return nil
	}, func(te *store.TruncatedError) error {
		id := te.EntryID
		if id < o.From || (o.To >= 0 && id > o.To) {
			return nil
		}
		if err := full(); err != nil {
			return err
		}
		add(id, nil, te.Error())
		return nil
	})
	if errors.Is(err, errLimit) {
		err = nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledger %d entries: %w", o.Ledger, err)
	}
	if len(entries)+len(schemaEntries) == 0 && !node {
		return nil, false, fmt.Errorf("ledger %d: no node at %s and no entries: %w", o.Ledger, formats.LedgerPath(o.Ledger), store.ErrNotFound)
	}
	if schema {
		return report.Rows("schema_entries", "", schemaEntries), more, nil
	}
	return report.Rows("entries", "", entries), more, nil
}

// EntryRow is one entry of a topic ledger in the entries view. An entry that
// does not parse has only EntryID and Error (with the byte offset).
type EntryRow struct {
	EntryID           int64       `json:"entry_id" table:"ENTRY"`
	BrokerIndex       *int64      `json:"broker_index,omitempty" table:"INDEX"`
	BrokerTimestampMs *uint64     `json:"broker_timestamp_ms,omitempty" table:"BROKER TS"`
	BrokerTimestamp   report.Time `json:"broker_timestamp,omitzero"`
	PublishTimeMs     *uint64     `json:"publish_time_ms,omitempty" table:"PUBLISH TIME"`
	PublishTime       report.Time `json:"publish_time,omitzero"`
	Producer          string      `json:"producer,omitempty" table:"PRODUCER"`
	SequenceID        *uint64     `json:"sequence_id,omitempty" table:"SEQUENCE"`
	BatchSize         *int32      `json:"batch_size,omitempty" table:"BATCH"` // num_messages_in_batch
	SchemaVersion     []byte      `json:"-" table:"SCHEMA VERSION"`
	SchemaVersionHex  string      `json:"schema_version_hex,omitempty"`
	SchemaID          []byte      `json:"-" table:"SCHEMA ID"`
	SchemaIDHex       string      `json:"schema_id_hex,omitempty"`
	CRC               string      `json:"crc,omitempty" table:"CRC"` // ok, bad or none (no checksum)
	Error             string      `json:"error,omitempty" table:"ERROR"`
}

func entryRow(id int64, v []byte, e *formats.Entry) EntryRow {
	if err := formats.ParseEntryInto(v, e, nil, nil); err != nil {
		return EntryRow{EntryID: id, Error: err.Error()}
	}
	r := EntryRow{EntryID: id, CRC: "none"}
	if bm := e.BrokerMeta; bm != nil {
		if bm.Index != nil {
			r.BrokerIndex = report.Ptr(int64(bm.GetIndex()))
		}
		if bm.BrokerTimestamp != nil {
			r.BrokerTimestampMs = report.Ptr(bm.GetBrokerTimestamp())
			r.BrokerTimestamp = report.Millis(int64(bm.GetBrokerTimestamp()))
		}
	}
	if e.HasChecksum {
		r.CRC = "ok"
		if !e.ChecksumOK {
			r.CRC = "bad"
		}
	}
	md := e.Metadata
	r.PublishTimeMs, r.PublishTime = report.Ptr(md.GetPublishTime()), report.Millis(int64(md.GetPublishTime()))
	r.Producer, r.SequenceID, r.BatchSize = md.GetProducerName(), report.Ptr(md.GetSequenceId()), report.Ptr(md.GetNumMessagesInBatch())
	r.SchemaVersion, r.SchemaID = nilIfEmpty(md.GetSchemaVersion()), nilIfEmpty(md.GetSchemaId())
	r.SchemaVersionHex, r.SchemaIDHex = hex.EncodeToString(r.SchemaVersion), hex.EncodeToString(r.SchemaID)
	return r
}

// isSchemaLedger reports whether a ledger holds SchemaEntry values rather than
// topic entry frames: its node's custom metadata says component=schema, or,
// when the node does not say, a schema locator names the ledger. node is
// whether the ledger's node exists (a damaged one does).
func isSchemaLedger(ctx context.Context, dd *datadir.DataDir, id int64) (schema, node bool, err error) {
	n, err := dd.Metadata.Get(formats.LedgerPath(id))
	switch {
	case err == nil:
		if m, derr := formats.DecodeLedgerMetadata(n.Value); derr == nil {
			switch component, _ := formats.CustomMetadata(m, cluster.CustomComponent); component {
			case cluster.ComponentSchema:
				return true, true, nil
			case cluster.ComponentML:
				return false, true, nil
			}
		}
	case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrTruncatedValue):
		return false, false, err
	}
	node = !errors.Is(err, store.ErrNotFound)
	errFound := errors.New("found")
	err = walkNodes(ctx, dd.Metadata, formats.SchemasRoot+"/", func(n store.Node) error {
		if _, ok := formats.ParseSchemaLocatorPath(n.Path); !ok {
			return nil
		}
		loc, err := formats.DecodeSchemaLocator(n.Value)
		if err != nil {
			return nil // the schemas view and check report it
		}
		for _, ie := range locatorVersions(loc) {
			if ie.GetPosition().GetLedgerId() == id {
				return errFound
			}
		}
		return nil
	}, func(*store.TruncatedError) error { return nil })
	if errors.Is(err, errFound) {
		return true, node, nil
	}
	return false, node, err
}

// SchemaEntryRow is one entry of a schema ledger: a SchemaEntry and its
// SchemaInfo. Fields are absent from the first part that does not decode.
type SchemaEntryRow struct {
	EntryID          int64  `json:"entry_id" table:"ENTRY"`
	SchemaKey        string `json:"schema_key,omitempty" table:"SCHEMA"`
	Type             string `json:"type,omitempty" table:"TYPE"`
	Deleted          *bool  `json:"deleted,omitempty" table:"DELETED"`
	DefinitionSize   *int   `json:"definition_size,omitempty" table:"DEFINITION SIZE"` // bytes
	DefinitionSHA256 string `json:"definition_sha256,omitempty" table:"DEFINITION SHA256"`
	IndexEntries     *int   `json:"index_entries,omitempty" table:"INDEX ENTRIES"`
	Error            string `json:"error,omitempty" table:"ERROR"`
}

// schemaEntryRow decodes one schema ledger entry: SchemaEntry, then its
// SchemaInfo.
func schemaEntryRow(id int64, v []byte) SchemaEntryRow {
	row := SchemaEntryRow{EntryID: id}
	se, err := formats.DecodeSchemaEntry(v)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.IndexEntries = report.Ptr(len(se.GetIndex()))
	info, err := formats.DecodeSchemaInfo(se.GetSchemaData())
	if err != nil {
		row.Error = err.Error()
		return row
	}
	def := info.GetSchema()
	row.SchemaKey, row.Type, row.Deleted = info.GetSchemaId(), cluster.SchemaTypeName(info.GetType()), report.Ptr(info.GetDeleted())
	row.DefinitionSize, row.DefinitionSHA256 = report.Ptr(len(def)), hex.EncodeToString(formats.SchemaHash(def))
	return row
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// NodeView is one metadata node decoded by what its path says it is.
type NodeView struct {
	Path     string `json:"path" table:"path"`
	Kind     string `json:"kind" table:"kind"`
	Size     int    `json:"size" table:"size"` // bytes stored
	Encoding string `json:"encoding,omitempty" table:"encoding"`
	Error    string `json:"error,omitempty" table:"error"`
	// RawHex is the stored bytes, for a node of no known kind or one that does
	// not decode.
	RawHex string `json:"raw_hex,omitempty"`
	// Message is the decoded protobuf message: fields by their .proto names,
	// numbers as numbers, enums by name, bytes as hex.
	Message *report.Object `json:"message,omitempty"`
}

// Node decodes one metadata node by what its path says it is and returns it as
// field/value rows (JSON: the NodeView). A node of no known kind is shown as
// raw hex; one of a known kind that does not decode is shown as raw hex with
// the error, and undecodable is true.
func Node(dd *datadir.DataDir, path string) (t *report.Table, undecodable bool, err error) {
	n, err := dd.Metadata.Get(path)
	if err != nil {
		return nil, false, err
	}
	d, derr := formats.DecodeNode(path, n.Value)
	if derr == nil && d.Message != nil {
		derr = proto.CheckInitialized(d.Message)
	}
	v := NodeView{Path: path, Kind: d.Kind.String(), Size: len(n.Value)}
	if derr != nil || d.Message == nil {
		if derr != nil {
			v.Error = derr.Error()
		}
		v.RawHex = hex.EncodeToString(n.Value)
		t = report.Fields("node", "", v)
		t.AddField("raw", n.Value) // shown even when empty ("-")
		return t, derr != nil, nil
	}
	v.Encoding = d.Encoding
	v.Message = messageObject(d.Message.ProtoReflect())
	t = report.Fields("node", "", v)
	flatten(d.Message.ProtoReflect(), "", func(field, value string) { t.AddField(field, value) })
	return t, false, nil
}
