package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// ErrNoSuchTopic means no managed ledger (or schema locator) exists for a topic.
var ErrNoSuchTopic = errors.New("no such topic in the metadata store")

// Topics lists every managed ledger: its ledgers, entries and size, the encoding
// of its node, whether the topic is indexed and how many of its ledgers carry
// firstEntryIndex (indexKey; "" means DefaultFirstEntryIndexKey).
func Topics(ctx context.Context, dd *store.DataDir, indexKey string) (*report.Table, error) {
	if indexKey == "" {
		indexKey = DefaultFirstEntryIndexKey
	}
	t := report.NewTable("topics", "",
		"TOPIC", "topic", "LEDGERS", "ledgers", "ENTRIES", "entries", "SIZE", "size", "ENCODING", "encoding",
		"INDEXED", "indexed", "FIRST ENTRY INDEX", "first_entry_index", "ERROR", "error")
	err := walkNodes(ctx, dd.Metadata, formats.ManagedLedgersRoot+"/", func(n store.Node) error {
		topic, ok := formats.ParseManagedLedgerPath(n.Path)
		if !ok {
			return nil // a cursor or an intermediate node
		}
		info, enc, err := formats.DecodeManagedLedgerInfo(n.Value)
		if err != nil {
			t.Add(topic.String(), nil, nil, nil, nil, nil, nil, err.Error())
			return nil
		}
		var entries, size int64
		var withEntries, covered int
		for _, li := range info.GetLedgerInfo() {
			entries += li.GetEntries()
			size += li.GetSize()
			if li.GetEntries() > 0 {
				withEntries++
				if _, ok := formats.LedgerProperty(li, indexKey); ok {
					covered++
				}
			}
		}
		indexed, err := indexedBy(dd.Ledgers, info)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Path, err)
		}
		t.Add(topic.String(), len(info.GetLedgerInfo()), entries, size, enc.String(),
			indexed, fmt.Sprintf("%d/%d", covered, withEntries), "")
		return nil
	}, func(te *store.TruncatedError) error {
		topic, ok := formats.ParseManagedLedgerPath(te.Path)
		if ok {
			t.Add(topic.String(), nil, nil, nil, nil, nil, nil, te.Error())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	return t, nil
}

// indexedBy says how a topic is known to be indexed: the ML property `index`,
// broker entry metadata in entry 0 of one of its ledgers (newest first), or "no".
// Lost and damaged entries are skipped (check reports them); other read errors
// are returned rather than shown as "no".
func indexedBy(ls store.LedgerStore, info *mlpb.ManagedLedgerInfo) (string, error) {
	if v, ok := formats.MLProperty(info, mlIndexProperty); ok {
		return "ml-property(" + v + ")", nil
	}
	lis := info.GetLedgerInfo()
	for i := len(lis) - 1; i >= 0; i-- {
		v, err := ls.Entry(lis[i].GetLedgerId(), 0)
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTruncatedValue):
			continue
		case err != nil:
			return "", err
		}
		if formats.HasBrokerIndex(v) {
			return "entry-metadata", nil
		}
	}
	return "no", nil
}

// managedLedgersOf returns the managed-ledger nodes of a topic, values copied:
// the topic's own node, or for a partitioned topic every partition's, in
// partition order. Each node is read once.
func managedLedgersOf(ctx context.Context, ms store.MetadataStore, topic formats.TopicName) ([]store.Node, error) {
	n, err := ms.Get(topic.ManagedLedgerPath())
	switch {
	case err == nil:
		return []store.Node{n}, nil
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	type part struct {
		i    int
		node store.Node
	}
	var parts []part
	prefix := topic.Partition(0).ManagedLedgerPath()
	prefix = prefix[:len(prefix)-1]
	err = walkNodes(ctx, ms, prefix, func(n store.Node) error {
		if p, ok := formats.ParseManagedLedgerPath(n.Path); ok && p.Base() == topic && p.PartitionIndex() >= 0 {
			n.Value = bytes.Clone(n.Value) // valid only during the walk
			parts = append(parts, part{p.PartitionIndex(), n})
		}
		return nil
	}, func(te *store.TruncatedError) error {
		if p, ok := formats.ParseManagedLedgerPath(te.Path); ok && p.Base() == topic && p.PartitionIndex() >= 0 {
			return te // one partition's ledgers cannot be listed
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || topic.PartitionIndex() >= 0 {
		return nil, fmt.Errorf("topic %s: no managed ledger at %s nor partitions of it: %w", topic, topic.ManagedLedgerPath(), ErrNoSuchTopic)
	}
	slices.SortFunc(parts, func(a, b part) int { return a.i - b.i })
	nodes := make([]store.Node, len(parts))
	for i, p := range parts {
		nodes[i] = p.node
	}
	return nodes, nil
}

// Ledgers lists every LedgerInfo of a topic (every partition of a partitioned
// topic) beside what the data dir holds: the ledger node and the stored entries.
func Ledgers(ctx context.Context, dd *store.DataDir, topic formats.TopicName) (*report.Table, error) {
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
	t := report.NewTable("ledgers", "",
		"TOPIC", "topic", "LEDGER", "ledger_id", "ENTRIES", "entries", "SIZE", "size", "TIMESTAMP", "timestamp",
		"OFFLOADED", "offloaded", "PROPERTIES", "properties", "NODE", "node_exists", "STORED", "stored_entries")
	for _, r := range rows {
		id := r.li.GetLedgerId()
		node, err := ledgerNodeExists(dd.Metadata, id)
		if err != nil {
			return nil, err
		}
		t.Add(r.topic, id, r.li.GetEntries(), r.li.GetSize(), msTime(r.li.GetTimestamp()),
			offloadState(r.li.GetOffloadContext()), kvString(r.li.GetProperties()), node, want[id])
	}
	return t, nil
}

// ledgerNodeExists reports whether a ledger's metadata node exists; a node whose
// value is damaged exists.
func ledgerNodeExists(ms store.MetadataStore, id int64) (bool, error) {
	_, err := ms.Get(formats.LedgerPath(id))
	switch {
	case err == nil, errors.Is(err, store.ErrTruncatedValue):
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
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

func msTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func offloadState(oc *mlpb.OffloadContext) string {
	switch {
	case oc == nil:
		return "no"
	case oc.GetComplete() && oc.GetBookkeeperDeleted():
		return "complete,bk-deleted"
	case oc.GetComplete():
		return "complete"
	}
	return "in-progress"
}

func kvString(kvs []*mlpb.KeyValue) string {
	parts := make([]string, len(kvs))
	for i, kv := range kvs {
		parts[i] = kv.GetKey() + "=" + kv.GetValue()
	}
	return strings.Join(parts, ",")
}

// Schemas lists every version of every schema locator (or of one topic's):
// where it is stored and what state its entry is in.
func Schemas(ctx context.Context, dd *store.DataDir, topic *formats.TopicName) (*report.Table, error) {
	t := report.NewTable("schemas", "",
		"SCHEMA", "schema", "VERSION", "version", "TYPE", "type", "HASH", "hash", "LEDGER", "ledger_id",
		"ENTRY", "entry_id", "STATE", "state", "LATEST", "latest", "DETAIL", "detail")
	visit := func(n store.Node) error {
		tn, ok := formats.ParseSchemaLocatorPath(n.Path)
		if !ok {
			return nil
		}
		loc, err := formats.DecodeSchemaLocator(n.Value)
		if err != nil {
			t.Add(tn.SchemaKey(), nil, nil, nil, nil, nil, StateUndecodable, false, err.Error())
			return nil
		}
		for _, ie := range locatorVersions(loc) {
			sv := schemaVersion{key: tn.SchemaKey(), version: ie.GetVersion(),
				ledger: ie.GetPosition().GetLedgerId(), entry: ie.GetPosition().GetEntryId(), hash: ie.GetHash()}
			f, err := ledgerPresence(dd, sv.ledger)
			if err != nil {
				return err
			}
			state, detail, info, err := schemaState(dd.Ledgers, f, sv)
			if err != nil {
				return fmt.Errorf("%s: %w", schemaLoc(sv.key, sv.version), err)
			}
			var typ any
			if info != nil {
				typ = info.GetType().String()
			}
			t.Add(sv.key, sv.version, typ, sv.hash, sv.ledger, sv.entry, state,
				loc.GetInfo() != nil && sv.version == loc.GetInfo().GetVersion(), detail)
		}
		return nil
	}
	bad := func(te *store.TruncatedError) error {
		if tn, ok := formats.ParseSchemaLocatorPath(te.Path); ok {
			t.Add(tn.SchemaKey(), nil, nil, nil, nil, nil, StateTruncated, false, te.Error())
		}
		return nil
	}
	if topic != nil {
		n, err := dd.Metadata.Get(topic.SchemaLocatorPath())
		var te *store.TruncatedError
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("topic %s: no schema locator at %s: %w", topic, topic.SchemaLocatorPath(), ErrNoSuchTopic)
		case errors.As(err, &te):
			return t, bad(te)
		case err != nil:
			return nil, err
		}
		return t, visit(n)
	}
	if err := walkNodes(ctx, dd.Metadata, formats.SchemasRoot+"/", visit, bad); err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	return t, nil
}

// ledgerPresence learns of one ledger what schemaState needs: whether its node
// exists and whether it has any entry.
func ledgerPresence(dd *store.DataDir, id int64) (*ledgerFacts, error) {
	node, err := ledgerNodeExists(dd.Metadata, id)
	if err != nil {
		return nil, err
	}
	f := &ledgerFacts{node: node}
	_, err = dd.Ledgers.LastEntry(id)
	switch {
	case err == nil:
		f.stored = 1
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	return f, nil
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
func Entries(ctx context.Context, dd *store.DataDir, o EntriesOptions) (t *report.Table, more bool, err error) {
	if o.Limit <= 0 {
		o.Limit = DefaultEntriesLimit
	}
	schema, node, err := isSchemaLedger(ctx, dd, o.Ledger)
	if err != nil {
		return nil, false, fmt.Errorf("ledger %d: %w", o.Ledger, err)
	}
	var e formats.Entry
	row := func(id int64, v []byte) []any { return entryRow(id, v, &e) }
	t = report.NewTable("entries", "",
		"ENTRY", "entry_id", "INDEX", "broker_index", "BROKER TS", "broker_timestamp", "PUBLISH TIME", "publish_time",
		"PRODUCER", "producer", "SEQUENCE", "sequence_id", "BATCH", "batch_size", "SCHEMA VERSION", "schema_version",
		"SCHEMA ID", "schema_id", "CRC", "crc", "ERROR", "error")
	if schema {
		row = schemaEntryRow
		t = report.NewTable("schema_entries", "",
			"ENTRY", "entry_id", "SCHEMA", "schema_key", "TYPE", "type", "DELETED", "deleted",
			"DEFINITION SIZE", "definition_size", "DEFINITION SHA256", "definition_sha256",
			"INDEX ENTRIES", "index_entries", "ERROR", "error")
	}
	errLimit := errors.New("limit reached")
	full := func() error {
		if len(t.Rows) >= o.Limit {
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
		t.Add(row(id, v)...)
		return nil
	}, func(te *store.TruncatedError) error {
		id := te.EntryID
		if id < o.From || (o.To >= 0 && id > o.To) {
			return nil
		}
		if err := full(); err != nil {
			return err
		}
		cells := make([]any, len(t.Columns))
		cells[0], cells[len(cells)-1] = id, te.Error()
		t.Add(cells...)
		return nil
	})
	if errors.Is(err, errLimit) {
		err = nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledger %d entries: %w", o.Ledger, err)
	}
	if len(t.Rows) == 0 && !node {
		return nil, false, fmt.Errorf("ledger %d: no node at %s and no entries: %w", o.Ledger, formats.LedgerPath(o.Ledger), store.ErrNotFound)
	}
	return t, more, nil
}

func entryRow(id int64, v []byte, e *formats.Entry) []any {
	if err := formats.ParseEntryInto(v, e, nil, nil); err != nil {
		return []any{id, nil, nil, nil, nil, nil, nil, nil, nil, nil, err.Error()}
	}
	var index, ts any
	if bm := e.BrokerMeta; bm != nil {
		if bm.Index != nil {
			index = bm.GetIndex()
		}
		if bm.BrokerTimestamp != nil {
			ts = bm.GetBrokerTimestamp()
		}
	}
	crc := "none"
	if e.HasChecksum {
		crc = "ok"
		if !e.ChecksumOK {
			crc = "bad"
		}
	}
	md := e.Metadata
	return []any{id, index, ts, md.GetPublishTime(), md.GetProducerName(), md.GetSequenceId(),
		md.GetNumMessagesInBatch(), nilIfEmpty(md.GetSchemaVersion()), nilIfEmpty(md.GetSchemaId()), crc, ""}
}

// isSchemaLedger reports whether a ledger holds SchemaEntry values rather than
// topic entry frames: its node's custom metadata says component=schema, or,
// when the node does not say, a schema locator names the ledger. node is
// whether the ledger's node exists (a damaged one does).
func isSchemaLedger(ctx context.Context, dd *store.DataDir, id int64) (schema, node bool, err error) {
	n, err := dd.Metadata.Get(formats.LedgerPath(id))
	switch {
	case err == nil:
		if m, derr := formats.DecodeLedgerMetadata(n.Value); derr == nil {
			switch component, _ := formats.CustomMetadata(m, cmComponent); component {
			case componentSchema:
				return true, true, nil
			case componentML:
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

// schemaEntryRow decodes one schema ledger entry: SchemaEntry, then its
// SchemaInfo. Cells are left empty from the first part that does not decode.
func schemaEntryRow(id int64, v []byte) []any {
	row := []any{id, nil, nil, nil, nil, nil, nil, ""}
	se, err := formats.DecodeSchemaEntry(v)
	if err != nil {
		row[7] = err.Error()
		return row
	}
	row[6] = len(se.GetIndex())
	info, err := formats.DecodeSchemaInfo(se.GetSchemaData())
	if err != nil {
		row[7] = err.Error()
		return row
	}
	def := info.GetSchema()
	row[1], row[2], row[3], row[4], row[5] = info.GetSchemaId(), info.GetType().String(), info.GetDeleted(), len(def), formats.SchemaHash(def)
	return row
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Node decodes one metadata node by what its path says it is and returns it as
// field/value rows. A node of no known kind is shown as raw hex; one of a known
// kind that does not decode is shown as raw hex with the error, and undecodable
// is true.
func Node(dd *store.DataDir, path string) (t *report.Table, undecodable bool, err error) {
	n, err := dd.Metadata.Get(path)
	if err != nil {
		return nil, false, err
	}
	t = report.NewTable("node", "", "FIELD", "field", "VALUE", "value")
	t.Add("path", path)
	d, derr := formats.DecodeNode(path, n.Value)
	if derr == nil && d.Message != nil {
		derr = proto.CheckInitialized(d.Message)
	}
	t.Add("kind", d.Kind.String())
	t.Add("size", len(n.Value))
	if derr != nil || d.Message == nil {
		if derr != nil {
			t.Add("error", derr.Error())
		}
		t.Add("raw", n.Value)
		return t, derr != nil, nil
	}
	t.Add("encoding", d.Encoding)
	flatten(d.Message.ProtoReflect(), "", func(field, value string) { t.Add(field, value) })
	return t, false, nil
}
