package inspect

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/internal/spill"
	"github.com/ledgermedic/ledgermedic/report"
)

// factsCursor reads the facts of ledgers in (mostly) ascending id order: a
// worker of the entry pass asks for each ledger it meets.
type factsCursor struct {
	ids *idCursor
	f   ledgerFacts
}

func newFactsCursor(file *spill.File) (*factsCursor, error) {
	ic, err := newIDCursor(file)
	if err != nil {
		return nil, err
	}
	return &factsCursor{ids: ic}, nil
}

// at returns the facts of ledger id, nil when no metadata names it. The
// result is valid until the next call.
func (fc *factsCursor) at(id int64) (*ledgerFacts, error) {
	v, err := fc.ids.at(id)
	if err != nil || v == nil {
		return nil, err
	}
	if err := decodeFacts(v, &fc.f); err != nil {
		return nil, err
	}
	return &fc.f, nil
}

// checkLedgers compares each ledger's node with its entries and its
// referrers, in id order: the facts of the metadata joined with what the entry
// pass found. It tells the LedgerInfos and schema versions that name each
// ledger what became of it (the answers the next steps read).
func (c *checker) checkLedgers(ctx context.Context) error {
	r, err := c.facts.NewReader()
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	more := r.Next()
	var (
		f     ledgerFacts
		seg   ledgerSeg
		inSeg bool
	)
	// factsBefore checks the ledgers the metadata names below id (all: id nil)
	// that have no entries.
	factsBefore := func(key []byte) error {
		for more && (key == nil || bytes.Compare(r.Key(), key) < 0) {
			if err := decodeFacts(r.Value(), &f); err != nil {
				return err
			}
			if err := c.ledger(idOfKey(r.Key()), &f); err != nil {
				return err
			}
			more = r.Next()
		}
		return r.Err()
	}
	endSeg := func() error {
		if !inSeg {
			return nil
		}
		key := idKey(nil, seg.id)
		if err := factsBefore(key); err != nil {
			return err
		}
		f = ledgerFacts{lastEntryID: -1, liRefs: f.liRefs[:0], svRefs: f.svRefs[:0], usage: f.usage[:0]}
		if more && bytes.Equal(r.Key(), key) {
			if err := decodeFacts(r.Value(), &f); err != nil {
				return err
			}
			more = r.Next()
		}
		f.stored, f.entry0Indexed = seg.stored, seg.entry0Indexed
		return c.ledger(seg.id, &f)
	}
	err = c.segs.Sorted(ctx, func(k, v []byte) error {
		id := idOfKey(k)
		if inSeg && id != seg.id {
			if err := endSeg(); err != nil {
				return err
			}
			inSeg = false
		}
		if !inSeg {
			seg, inSeg = ledgerSeg{id: id}, true
		}
		d := dec{b: v}
		var e0 bool
		seg.stored += int64(d.uint())
		d.flags(&e0)
		seg.entry0Indexed = seg.entry0Indexed || e0
		return d.done("ledger entries")
	})
	if err == nil {
		err = endSeg()
	}
	if err == nil {
		err = factsBefore(nil)
	}
	c.segs.Close()
	if err != nil {
		return fmt.Errorf("check ledgers: %w", err)
	}
	return nil
}

// ledger checks one ledger, and answers those that name it.
func (c *checker) ledger(id int64, f *ledgerFacts) error {
	if err := c.answer(f); err != nil {
		return err
	}
	if f.offloadedGone || !c.ownsLedger(id, f) {
		return nil // offloaded to tiered storage and deleted from BookKeeper: as expected
	}
	c.major = id
	path := formats.LedgerPath(id)
	orphan := f.node && !f.badNode && f.refs == 0 && c.ownedByPulsar(f)
	if c.live && f.node && !f.badNode {
		if fd, ok := openLedgerFinding(id, path, f); ok {
			c.add(fd)
		}
	}
	probe, lost := c.notOnBookies[id]
	switch {
	case lost && f.refs&refSchema == 0:
		c.add(notOnBookiesFinding(id, path, f, probe))
	case lost:
		// A schema version's ledger: schema-entry-lost already names the
		// version and its repair, as for a data dir's ledger node without
		// entries below.
	case orphan && c.live && f.component == cluster.ComponentSchema:
		// On a live cluster an unreferenced schema ledger is the expected
		// leftover of concurrent first puts of one schema: each broker created
		// a ledger and one locator write won (fixed in later Pulsar releases).
		fd := newFinding(KindOrphanSchemaLedger, ledgerLoc(id), "expected on clusters that ran Pulsar before pulsar#25514; keep it until repairs are done, it may hold a lost schema",
			"schema ledger of %q (%s) is referenced by no schema locator: concurrent first puts of a schema each created a ledger and one locator won (before pulsar#25514)",
			f.owner, plural(f.stored, "entry", "entries"))
		fd.LedgerID, fd.Path = report.Int64(id), path
		c.add(fd)
	case orphan:
		fd := newFinding(KindOrphanLedger, ledgerLoc(id), "nothing points at it; keep it until repairs are done, it may hold a lost schema or topic data",
			"%s ledger of %q (%s) is referenced by no LedgerInfo, schema locator or cursor", f.component, f.owner, plural(f.stored, "entry", "entries"))
		fd.LedgerID, fd.Path = report.Int64(id), path
		c.add(fd)
	case f.node && c.unreachable[id]:
		// Every bookie asked failed: the bookie-unavailable findings say
		// so; that the store holds fewer entries proves nothing lost.
	case f.node && !f.badNode && f.stored == 0 && !f.metaEmpty && !f.openLast && f.refs&refSchema == 0:
		fd := newFinding(KindLedgerNodeWithoutEntries, ledgerLoc(id), "the ledger's entries are lost; restore them from a bookie replica",
			"ledger node %s exists (lastEntryId %d) but the ledger store holds no entry of it", path, f.lastEntryID)
		fd.LedgerID, fd.Path = report.Int64(id), path
		c.add(fd)
	case !f.node && f.stored > 0:
		fd := newFinding(KindEntriesWithoutNode, ledgerLoc(id), "BookKeeper will not serve a ledger without metadata; recreate "+path+" or remove the entries",
			"%s stored but ledger node %s does not exist", plural(f.stored, "entry is", "entries are"), path)
		fd.LedgerID, fd.Path = report.Int64(id), path
		c.add(fd)
	case f.node && !f.badNode && f.closed && f.stored > 0 && f.lastEntryID+1 > f.stored:
		fd := newFinding(KindLedgerEntriesMissing, ledgerLoc(id), "the missing entries are lost; restore them from a bookie replica",
			"closed ledger has lastEntryId %d (%d entries) but the ledger store holds %d", f.lastEntryID, f.lastEntryID+1, f.stored)
		fd.LedgerID, fd.Path = report.Int64(id), path
		c.add(fd)
	}
	return nil
}

// Answers: what became of the ledger each LedgerInfo and schema version names.
// A LedgerInfo's is keyed by its managed ledger's ordinal and its place in
// it, a schema version's by its ordinal.

type mlAnswer struct{ lost, entry0Indexed bool }

type svAnswer struct{ node, entries bool }

// The places of a schema version's answers: what checkLedgers found of its
// ledger, and what the entry pass found of its entry (none: not stored).
const (
	svPresence = 0
	svEntry    = 1
)

// svEntryAnswer is what the entry pass found of a schema version's entry:
// one of StateTruncated, StateUndecodable, StateHashMismatch or StateOK.
type svEntryAnswer struct {
	state, detail string
	ts            int64 // the SchemaInfo's registration time, when hasTS
	hasTS         bool
}

func (a *svEntryAnswer) encode() enc {
	return enc(nil).str(a.state).str(a.detail).flags(a.hasTS).int(a.ts)
}

func (c *checker) answer(f *ledgerFacts) error {
	lost := !f.offloadedGone && f.presence().Lost()
	for _, ref := range f.liRefs {
		c.key = binary.BigEndian.AppendUint32(seqKey(c.key[:0], ref.ml), ref.idx)
		c.buf = c.buf[:0].flags(lost, f.entry0Indexed)
		if err := c.mlAnswers.Add(c.key, c.buf); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	for _, sv := range f.svRefs {
		c.key, c.buf = append(seqKey(c.key[:0], sv.seq), svPresence), c.buf[:0].flags(f.node, f.stored > 0)
		if err := c.svAnswers.Add(c.key, c.buf); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	return nil
}

// ownedByPulsar reports whether a ledger's custom metadata says a topic or a schema
// owns it, and that owner's metadata decoded (else it cannot be known unreferenced).
func (c *checker) ownedByPulsar(f *ledgerFacts) bool {
	switch f.component {
	case cluster.ComponentML:
		if f.cursorLedger && c.badCursors[f.owner+"/"+f.cursorName] {
			return false
		}
		return !c.badMLs[f.owner]
	case cluster.ComponentSchema:
		return !c.badSchemas[f.owner]
	}
	return false
}

// walkAnswer is one answer to a record read in walk order: the rest of its
// key after the record's ordinal, and its value.
type walkAnswer struct{ place, value []byte }

// inWalkOrder calls fn with each record of file (keyed by ordinal) and the
// answers of sorter for it: each answer's key starts with the ordinal of the
// record it answers, and fn gets them in the order of the rest of their keys.
func inWalkOrder(ctx context.Context, file *spill.File, sorter *spill.Sorter, fn func(seq uint64, rec []byte, answers []walkAnswer) error) error {
	r, err := file.NewReader()
	if err != nil {
		return err
	}
	var (
		held    []byte // the answers' keys and values
		ends    []int  // where each answer's key and value end in held
		answers []walkAnswer
		more    = r.Next()
	)
	// through calls fn with the records before ordinal seq (all: until the end).
	through := func(seq uint64, all bool) error {
		for more && (all || binary.BigEndian.Uint64(r.Key()) < seq) {
			answers = answers[:0]
			for i, start := 0, 0; i < len(ends); i += 2 {
				answers = append(answers, walkAnswer{held[start:ends[i]], held[ends[i]:ends[i+1]]})
				start = ends[i+1]
			}
			if err := fn(binary.BigEndian.Uint64(r.Key()), r.Value(), answers); err != nil {
				return err
			}
			held, ends = held[:0], ends[:0]
			more = r.Next()
		}
		return r.Err()
	}
	err = sorter.Sorted(ctx, func(k, v []byte) error {
		if err := through(binary.BigEndian.Uint64(k), false); err != nil {
			return err
		}
		held = append(held, k[8:]...)
		ends = append(ends, len(held))
		held = append(held, v...)
		ends = append(ends, len(held))
		return nil
	})
	if err == nil {
		err = through(0, true)
	}
	sorter.Close()
	return err
}

// checkManagedLedgers reports LedgerInfos of lost ledgers and, per indexed topic,
// how many LedgerInfos lack firstEntryIndex; it writes the coverage table.
func (c *checker) checkManagedLedgers(ctx context.Context) error {
	var ml mlFacts
	err := inWalkOrder(ctx, c.mls, c.mlAnswers, func(seq uint64, rec []byte, answers []walkAnswer) error {
		if err := decodeML(rec, &ml); err != nil {
			return err
		}
		if !ml.owned {
			return nil
		}
		c.major = int64(seq)
		ans := make([]mlAnswer, len(ml.ledgers))
		for _, a := range answers {
			if len(a.place) != 4 {
				continue
			}
			if i := int(binary.BigEndian.Uint32(a.place)); i < len(ans) {
				d := dec{b: a.value}
				d.flags(&ans[i].lost, &ans[i].entry0Indexed)
			}
		}
		return c.managedLedgerFindings(&ml, ans)
	})
	if err == nil {
		err = c.coverage.Finish()
	}
	if err != nil {
		return fmt.Errorf("check managed ledgers: %w", err)
	}
	return nil
}

// managedLedgerFindings checks one managed ledger whose LedgerInfos' ledgers
// became what ans says (by place).
func (c *checker) managedLedgerFindings(ml *mlFacts, ans []mlAnswer) error {
	ids := make([]int64, len(ml.ledgers))
	indexedByID := make(map[int64]bool, len(ml.ledgers))
	for i, l := range ml.ledgers {
		ids[i] = l.id
		indexedByID[l.id] = indexedByID[l.id] || ans[i].entry0Indexed
	}
	by, _ := cluster.TopicIndexed(ml.indexProp, ids, func(id int64) (bool, error) { return indexedByID[id], nil })
	indexed := by != cluster.NotIndexed
	withEntries, covered := ml.withEntries, ml.covered
	for i, l := range ml.ledgers {
		if ans[i].lost {
			fd := newFinding(KindLedgerMissing, ml.topic+" "+ledgerLoc(l.id), "the ledger's messages are lost; remove the LedgerInfo only after confirming no bookie holds the ledger",
				"LedgerInfo names ledger %d (%s) but it has neither a node nor entries", l.id, plural(l.entries, "entry", "entries"))
			fd.Topic, fd.Path, fd.LedgerID = ml.topic, ml.path, report.Int64(l.id)
			c.add(fd)
		}
	}
	tc := TopicCoverage{Topic: ml.topic, Path: ml.path, Indexed: indexed, WithEntries: withEntries, Covered: covered}
	if c.sharded() {
		tc.Order = findingOrder(stepManagedLedgers, c.major, "")
	}
	c.buf, c.key = encodeCoverage(c.buf[:0], &tc), seqKey(c.key[:0], uint64(c.major))
	if err := c.coverage.Append(c.key, c.buf); err != nil {
		return err
	}
	if lacking := withEntries - covered; indexed && lacking > 0 {
		hint := "ledgermedic index backfill --topic " + ml.topic
		if c.opts.FirstEntryIndexKey != cluster.FirstEntryIndexKey {
			hint += " --index-key " + c.opts.FirstEntryIndexKey
		}
		fd := newFinding(KindFirstEntryIndexMissing, ml.topic, hint+" (then find-by-offset reads one ledger, not all)",
			"%d of %d ledgers with entries have no %s property", lacking, withEntries, c.opts.FirstEntryIndexKey)
		fd.Topic, fd.Path = ml.topic, ml.path
		c.add(fd)
	}
	return nil
}

// checkSchemas reads the entry of every schema version the locators name.
func (c *checker) checkSchemas(ctx context.Context) error {
	c.prog.Start("schema versions", int64(c.nSVs))
	defer c.prog.Done()
	var sv schemaVersion
	err := inWalkOrder(ctx, c.svs, c.svAnswers, func(seq uint64, rec []byte, answers []walkAnswer) error {
		c.prog.Add(1)
		if err := decodeSchemaVersion(rec, &sv); err != nil {
			return err
		}
		if !sv.owned {
			return nil
		}
		c.major = int64(seq)
		var (
			a   svAnswer
			ent *svEntryAnswer
		)
		for _, an := range answers {
			d := dec{b: an.value}
			switch {
			case len(an.place) == 1 && an.place[0] == svPresence:
				d.flags(&a.node, &a.entries)
			case len(an.place) == 1 && an.place[0] == svEntry:
				ent = &svEntryAnswer{state: d.str(), detail: d.str()}
				d.flags(&ent.hasTS)
				ent.ts = d.int()
			}
			if err := d.done("schema version answer"); err != nil {
				return err
			}
		}
		if err := c.noteVersion(&sv, a, ent); err != nil {
			return err
		}
		return c.schemaFindings(&sv, a, ent)
	})
	if err == nil && c.usage != nil {
		c.usage.versions, err = c.versionsFile(ctx)
	}
	if err != nil {
		return fmt.Errorf("check schemas: %w", err)
	}
	return nil
}

// schemaFindings checks one schema version whose ledger is as a says and
// whose entry, as the entry pass read it, as ent says (nil: not stored).
func (c *checker) schemaFindings(sv *schemaVersion, a svAnswer, ent *svEntryAnswer) error {
	st, detail := schemaStateOf(a, ent)
	var kind string
	switch st {
	case StateLedgerLost:
		kind = KindSchemaLedgerLost
	case StateEntryLost:
		kind = KindSchemaEntryLost
	case StateUndecodable:
		kind = KindSchemaEntryUndecodable
	case StateHashMismatch:
		kind = KindSchemaHashMismatch
	default:
		return nil
	}
	fd := newFinding(kind, schemaLoc(sv.key, sv.version), schemaRepairHint(sv.topic),
		"ledger %d entry %d: %s", sv.ledger, sv.entry, detail)
	fd.Topic, fd.Path = sv.topic, sv.path
	fd.LedgerID, fd.EntryID, fd.Version = report.Int64(sv.ledger), report.Int64(sv.entry), report.Int64(sv.version)
	c.add(fd)
	return nil
}

// schemaStateOf is schemaState of a version whose ledger and entry the check
// has read already.
func schemaStateOf(a svAnswer, ent *svEntryAnswer) (state, detail string) {
	switch {
	case !a.node && !a.entries:
		return StateLedgerLost, "the schema ledger has neither a node nor entries"
	case ent == nil:
		return StateEntryLost, "the schema ledger exists but this entry is gone"
	case ent.state == StateOK && !a.node:
		return StateNodeLost, "the entry is readable but the ledger node is gone: BookKeeper will not serve it"
	}
	return ent.state, ent.detail
}

// schemaEntryState is what a schema version's stored entry says: the part of
// schemaState that reads the entry's bytes.
func schemaEntryState(v []byte, hash []byte) (state, detail string, info *schemapb.SchemaInfo) {
	info, err := decodeSchemaValue(v)
	if err != nil {
		return StateUndecodable, err.Error(), nil
	}
	if !info.GetDeleted() || len(hash) != 0 {
		if got := formats.SchemaHash(info.GetSchema()); !bytes.Equal(got, hash) {
			return StateHashMismatch, fmt.Sprintf("stored definition hashes to %x, locator says %x", got, hash), info
		}
	}
	if info.GetDeleted() {
		return StateOK, "deleted (tombstone)", info
	}
	return StateOK, "", info
}
