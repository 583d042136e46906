package inspect

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/internal/spill"
	"github.com/ledgermedic/ledgermedic/schemaid"
)

// The schema-usage count keeps nothing per topic in memory while it reads the
// entries: each worker counts the references of the ledger it is reading,
// and at the ledger's end writes what it counted, once for each topic whose
// managed ledgers list the ledger, to a sort by base topic (the usage sort).
// The topics' own records (one per managed ledger) go to the same sort, so
// that finishing reads each topic's records together, adds them up and joins
// them with the topic's locator, one topic at a time.

// Records of the usage sort. Key: base topic, 0, then recTopic, or
// recLedgerUse and the ledger's idKey.
const (
	recTopic     = 0 // a managed ledger of the topic (value: partition)
	recLedgerUse = 1 // what one ledger's entries carry (usePartial)
)

func usageKey(base string, rec byte) []byte { return appendUsageKey(nil, base, rec) }

func appendUsageKey(b []byte, base string, rec byte) []byte {
	return append(append(append(b, base...), 0), rec)
}

// usageBudget is the memory of usage records held before they spill.
const usageBudget = 8 << 20

// usageScan is the schema-usage consumer of a pass.
type usageScan struct {
	out *spill.Sorter // the usage sort
	// ledgers says which topics count each ledger's entries (a file of
	// usageRef lists by ledger id), when Check's facts do not.
	ledgers *spill.File
	// versions is what Check found of each schema version, by schema key
	// (versions.go); nil: the join reads the store.
	versions *spill.File
	maxBad   int
	states   []*usageState // one per worker
}

func newUsageScan(d *spill.Dir, maxBad int) *usageScan {
	return &usageScan{out: d.NewSorter("usage", usageBudget), maxBad: maxBad}
}

// addTopic records one managed ledger of a topic (partition -1: not a partition).
func (u *usageScan) addTopic(t formats.TopicName) error {
	k := usageKey(t.Base().String(), recTopic)
	if err := u.out.Add(k, enc(nil).str(t.Base().String()).int(int64(t.PartitionIndex()))); err != nil {
		return fmt.Errorf("schema usage: %w", err)
	}
	return nil
}

// badEntry is an entry that could not be read, parsed or checked.
type badEntry struct {
	topic  string
	pos    Position
	kind   string
	detail string
}

// topicTotals are one topic's (or one ledger's) entry counts.
type topicTotals struct {
	entries, messages, bad int64
}

// useCounter is what the count keeps per schema reference.
type useCounter struct {
	messages, entries int64
	first, last       Position
	firstMs, lastMs   uint64
	// The partitions of the first and last entry (-1: not a partitioned topic).
	firstPart, lastPart int
}

func (c *useCounter) add(pos Position, publishMs uint64, messages int64) {
	if c.entries == 0 || publishMs < c.firstMs || publishMs == c.firstMs && pos.Less(c.first) {
		c.first, c.firstMs = pos, publishMs
	}
	if c.entries == 0 || publishMs > c.lastMs || publishMs == c.lastMs && c.last.Less(pos) {
		c.last, c.lastMs = pos, publishMs
	}
	c.entries++
	c.messages += messages
}

func (c *useCounter) merge(o *useCounter) {
	if o.entries == 0 {
		return
	}
	if c.entries == 0 {
		*c = *o
		return
	}
	if o.firstMs < c.firstMs || o.firstMs == c.firstMs && o.first.Less(c.first) {
		c.first, c.firstMs, c.firstPart = o.first, o.firstMs, o.firstPart
	}
	if o.lastMs > c.lastMs || o.lastMs == c.lastMs && c.last.Less(o.last) {
		c.last, c.lastMs, c.lastPart = o.last, o.lastMs, o.lastPart
	}
	c.entries += o.entries
	c.messages += o.messages
}

// usageState is one worker's count: the references of the ledger it reads
// (by reference key: the field number byte followed by the field's raw bytes;
// FieldUnknown and no bytes: no schema), and the unreadable entries with the
// lowest positions it met.
type usageState struct {
	uses   map[string]*useCounter
	spare  []*useCounter
	tot    topicTotals
	bad    []badEntry // at most 2*maxBad before trimming
	maxBad int
	key    []byte
	// Scratch for a usage record and its key, kept at their grown size.
	recKey []byte
	rec    enc
	ids    *idCursor // the ledgers file's, when the scan has one
	refs   []usageRef
}

func newUsageState(u *usageScan) (*usageState, error) {
	st := &usageState{uses: map[string]*useCounter{}, maxBad: u.maxBad}
	if u.ledgers != nil {
		c, err := newIDCursor(u.ledgers)
		if err != nil {
			return nil, err
		}
		st.ids = c
	}
	return st, nil
}

// topicsOf returns the topics that count ledger id's entries, from the
// ledgers file (valid until the next call).
func (st *usageState) topicsOf(id int64) ([]usageRef, error) {
	v, err := st.ids.at(id)
	if err != nil || v == nil {
		return nil, err
	}
	d := dec{b: v}
	st.refs = st.refs[:0]
	for n := d.uint(); n > 0 && d.err == nil; n-- {
		st.refs = append(st.refs, usageRef{base: d.str(), partition: int(d.int())})
	}
	return st.refs, d.done("usage ledger")
}

// account counts one entry of a ledger that topics count; r and err are what
// passWorker.decode made of it.
func (st *usageState) account(topics []usageRef, pos Position, v []byte, r *formats.EntryRefs, err error) {
	st.tot.entries++
	if err != nil {
		st.addBad(topics, pos, KindEntryUndecodable, err.Error())
		return
	}
	if r.HasChecksum && !r.ChecksumOK {
		// The metadata parsed, so the entry still counts; the bytes are damaged.
		st.addBad(topics, pos, KindEntryCRCMismatch, fmt.Sprintf("stored CRC32C %08x does not match the entry's %d bytes from offset %d",
			r.Checksum, len(v)-r.MetadataOffset, r.MetadataOffset))
	}
	messages := int64(r.NumMessages)
	st.tot.messages += messages
	if r.SchemaVersion != nil {
		st.count(schemaid.FieldSchemaVersion, r.SchemaVersion, pos, r.PublishTime, messages)
	}
	if r.SchemaID != nil {
		st.count(schemaid.FieldSchemaID, r.SchemaID, pos, r.PublishTime, messages)
	}
	if r.SchemaVersion == nil && r.SchemaID == nil {
		st.count(schemaid.FieldUnknown, nil, pos, r.PublishTime, messages)
	}
}

// truncated counts an entry whose value is truncated in the store.
func (st *usageState) truncated(topics []usageRef, pos Position, detail string) {
	st.tot.entries++
	st.addBad(topics, pos, KindValueTruncated, detail)
}

func (st *usageState) count(field schemaid.Field, raw []byte, pos Position, publishMs uint64, messages int64) {
	st.key = append(append(st.key[:0], byte(field)), raw...)
	c := st.uses[string(st.key)] // no allocation for the lookup
	if c == nil {
		if n := len(st.spare); n > 0 {
			c, st.spare = st.spare[n-1], st.spare[:n-1]
			*c = useCounter{}
		} else {
			c = &useCounter{}
		}
		st.uses[string(st.key)] = c
	}
	c.add(pos, publishMs, messages)
}

func (st *usageState) addBad(topics []usageRef, pos Position, kind, detail string) {
	st.tot.bad++
	for _, t := range topics {
		st.bad = append(st.bad, badEntry{topic: t.base, pos: pos, kind: kind, detail: detail})
	}
	if len(st.bad) >= 2*st.maxBad {
		st.bad = lowestBad(st.bad, st.maxBad)
	}
}

// endLedger writes what ledger id's entries carry for each topic that counts
// them, and starts the next ledger's count.
func (st *usageState) endLedger(out *spill.Sorter, id int64, topics []usageRef) error {
	if st.tot.entries > 0 {
		for _, t := range topics {
			st.recKey = idKey(appendUsageKey(st.recKey[:0], t.base, recLedgerUse), id)
			st.rec = st.partial(st.rec[:0], t)
			if err := out.Add(st.recKey, st.rec); err != nil {
				return fmt.Errorf("schema usage: %w", err)
			}
		}
	}
	for k, c := range st.uses {
		st.spare = append(st.spare, c)
		delete(st.uses, k)
	}
	st.tot = topicTotals{}
	return nil
}

// partial appends the usage record of the ledger being counted, for topic t.
func (st *usageState) partial(b enc, t usageRef) enc {
	b = b.str(t.base).int(int64(t.partition)).uint(uint64(st.tot.entries)).uint(uint64(st.tot.messages)).
		uint(uint64(st.tot.bad)).uint(uint64(len(st.uses)))
	for k, c := range st.uses {
		b = b.str(k).uint(uint64(c.messages)).uint(uint64(c.entries)).
			int(c.first.LedgerID).int(c.first.EntryID).int(c.last.LedgerID).int(c.last.EntryID).
			uint(c.firstMs).uint(c.lastMs)
	}
	return b
}

// lowestBad keeps the n entries with the lowest positions, so the list does not
// depend on which decoder saw what.
func lowestBad(es []badEntry, n int) []badEntry {
	sort.Slice(es, func(i, j int) bool {
		if es[i].pos != es[j].pos {
			return es[i].pos.Less(es[j].pos)
		}
		return es[i].topic < es[j].topic
	})
	if len(es) > n {
		es = es[:n]
	}
	return es
}

// topicUsageOf adds up one topic's usage records into tu. key and value are
// the usage sort's.
func (tu *TopicUsage) add(key, v []byte, uses map[string]*useCounter) error {
	d := dec{b: v}
	base := d.str()
	if tu.Topic == "" {
		tu.Topic = base
	}
	switch key[len(base)+1] {
	case recTopic:
		tu.ManagedLedgers++
		d.int()
	case recLedgerUse:
		part := int(d.int())
		tu.Entries += int64(d.uint())
		tu.Messages += int64(d.uint())
		tu.BadEntries += int64(d.uint())
		for n := d.uint(); n > 0 && d.err == nil; n-- {
			k := d.str()
			c := useCounter{messages: int64(d.uint()), entries: int64(d.uint()), firstPart: part, lastPart: part}
			c.first = Position{LedgerID: d.int(), EntryID: d.int()}
			c.last = Position{LedgerID: d.int(), EntryID: d.int()}
			c.firstMs, c.lastMs = d.uint(), d.uint()
			if m := uses[k]; m != nil {
				m.merge(&c)
			} else {
				uses[k] = &c
			}
		}
	}
	return d.done("usage record")
}

// eachTopicUsage calls fn with each topic's usage from the usage sort, by base
// topic, its references sorted (sortUses).
func eachTopicUsage(ctx context.Context, out *spill.Sorter, fn func(*TopicUsage) error) error {
	var (
		tu   TopicUsage
		base []byte
		have bool
		uses = map[string]*useCounter{}
	)
	flush := func() error {
		if !have {
			return nil
		}
		for k, c := range uses {
			tu.Uses = append(tu.Uses, newSchemaUse(k, c))
		}
		sortUses(tu.Uses)
		clear(uses)
		return fn(&tu)
	}
	err := out.Sorted(ctx, func(k, v []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 0 || i+1 >= len(k) {
			return fmt.Errorf("schema usage: %w", errSpillRecord)
		}
		if !have || !bytes.Equal(k[:i], base) {
			if err := flush(); err != nil {
				return err
			}
			tu, have = TopicUsage{}, true
			base = append(base[:0], k[:i]...)
		}
		return tu.add(k, v, uses)
	})
	if err == nil {
		err = flush()
	}
	return err
}

// topicName fills in what follows from the topic's name.
func (tu *TopicUsage) topicName() (formats.TopicName, error) {
	t, err := formats.ParseTopic(tu.Topic)
	if err != nil {
		return t, fmt.Errorf("schema usage: topic %q: %w", tu.Topic, err)
	}
	tu.SchemaKey = t.SchemaKey()
	return t, nil
}

// idCursor reads a File keyed by idKey in (mostly) ascending id order.
type idCursor struct {
	r    *spill.Reader
	have bool
	last []byte
	want []byte
}

func newIDCursor(file *spill.File) (*idCursor, error) {
	r, err := file.NewReader()
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	return &idCursor{r: r}, nil
}

// at returns the value of ledger id, nil when there is none; valid until the
// next call.
func (ic *idCursor) at(id int64) ([]byte, error) {
	ic.want = idKey(ic.want[:0], id)
	forward := ic.last != nil && bytes.Compare(ic.want, ic.last) > 0
	ic.last = append(ic.last[:0], ic.want...)
	if ic.have {
		switch c := bytes.Compare(ic.r.Key(), ic.want); {
		case c == 0:
			return ic.r.Value(), nil
		case c > 0 && forward:
			return nil, nil // between the id asked for before and the one held
		}
	}
	ic.r.Seek(ic.want)
	if ic.have = ic.r.Next(); !ic.have {
		return nil, ic.r.Err()
	}
	if !bytes.Equal(ic.r.Key(), ic.want) {
		return nil, nil
	}
	return ic.r.Value(), nil
}

// sortedRefs orders a ledger's topic references and drops repeats.
func sortedRefs(refs []usageRef) []usageRef {
	slices.SortFunc(refs, func(a, b usageRef) int {
		if a.base != b.base {
			return cmpString(a.base, b.base)
		}
		return a.partition - b.partition
	})
	return slices.Compact(refs)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
