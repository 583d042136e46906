package inspect

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// What Check keeps per ledger, per managed ledger and per schema version
// lives on disk (internal/spill) while it runs, so that its memory does not
// grow with the cluster: records are written in the order the metadata walk
// meets them and read back in the order a later step needs (ledger id order,
// to meet the entries). This file is their encoding: keys that sort as the
// readers need, and values in a compact binary form (varints and
// length-prefixed strings) that only this package reads.

// idKey is a ledger id as a key that sorts by id (negative ids, which only a
// damaged LedgerInfo names, first).
func idKey(b []byte, id int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(id)^(1<<63)) }

func idOfKey(k []byte) int64 { return int64(binary.BigEndian.Uint64(k) ^ (1 << 63)) }

// seqKey is an ordinal as a key.
func seqKey(b []byte, n uint64) []byte { return binary.BigEndian.AppendUint64(b, n) }

// enc appends fields to a record.
type enc []byte

func (e enc) uint(v uint64) enc    { return binary.AppendUvarint(e, v) }
func (e enc) int(v int64) enc      { return binary.AppendVarint(e, v) }
func (e enc) str(s string) enc     { return append(e.uint(uint64(len(s))), s...) }
func (e enc) bytes(b []byte) enc   { return append(e.uint(uint64(len(b))), b...) }
func (e enc) flags(bs ...bool) enc { return e.uint(packFlags(bs...)) }

func packFlags(bs ...bool) uint64 {
	var v uint64
	for i, b := range bs {
		if b {
			v |= 1 << i
		}
	}
	return v
}

// errSpillRecord: a spill record does not decode (the temp file was damaged
// under the running command).
var errSpillRecord = errors.New("damaged spill record")

// dec reads fields of a record; the first problem sticks and reads go on
// returning zero values.
type dec struct {
	b   []byte
	err error
}

func (d *dec) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errSpillRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errSpillRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) bytes() []byte {
	n := d.uint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errSpillRecord
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string { return string(d.bytes()) }

// flags reads a packFlags value into bs.
func (d *dec) flags(bs ...*bool) {
	v := d.uint()
	for i, b := range bs {
		*b = v&(1<<i) != 0
	}
}

func (d *dec) done(what string) error {
	if d.err != nil {
		return fmt.Errorf("check: %s: %w", what, d.err)
	}
	return nil
}

// Records of the by-ledger sort: what one node of the walk says of a ledger.
// Key: idKey | walk ordinal of the node (8) | place in the node (4), so a
// ledger's records come together, in walk order.
const (
	recNode   = 'n' // the ledger's own metadata node
	recLI     = 'l' // a LedgerInfo of a managed ledger names it
	recSchema = 's' // a schema locator names it
	recCursor = 'c' // a cursor names it as its ledger
)

func byLedgerKey(b []byte, id int64, node uint64, place uint32) []byte {
	return binary.BigEndian.AppendUint32(seqKey(idKey(b, id), node), place)
}

// liRef is a LedgerInfo's reference: which managed ledger (its walk ordinal)
// and which of its LedgerInfos.
type liRef struct {
	ml  uint64
	idx uint32
}

// svRef is a schema version's reference: its ordinal, and the entry and hash
// the locator gives, which the entry pass checks as it reads the ledger.
type svRef struct {
	seq   uint64
	entry int64
	hash  []byte
}

// usageRef is a topic whose stored messages the schema-usage count reads in
// a ledger: its base topic and the partition the ledger belongs to (-1: the
// topic is not partitioned).
type usageRef struct {
	base      string
	partition int
}

func (f *ledgerFacts) encode(b enc) enc {
	b = b.flags(f.node, f.badNode, f.metaEmpty, f.closed, f.cursorLedger, f.openLast, f.offloadedGone, f.needed).
		int(f.lastEntryID).str(f.component).str(f.owner).str(f.cursorName).
		uint(uint64(f.refs)).uint(uint64(f.ownerPlus1))
	b = b.uint(uint64(len(f.liRefs)))
	for _, r := range f.liRefs {
		b = b.uint(r.ml).uint(uint64(r.idx))
	}
	b = b.uint(uint64(len(f.svRefs)))
	for _, sv := range f.svRefs {
		b = b.uint(sv.seq).int(sv.entry).bytes(sv.hash)
	}
	b = b.uint(uint64(len(f.usage)))
	for _, u := range f.usage {
		b = b.str(u.base).int(int64(u.partition))
	}
	return b
}

// decodeFacts reads a facts record into f (reusing its slices).
func decodeFacts(v []byte, f *ledgerFacts) error {
	d := dec{b: v}
	*f = ledgerFacts{liRefs: f.liRefs[:0], svRefs: f.svRefs[:0], usage: f.usage[:0]}
	d.flags(&f.node, &f.badNode, &f.metaEmpty, &f.closed, &f.cursorLedger, &f.openLast, &f.offloadedGone, &f.needed)
	f.lastEntryID, f.component, f.owner, f.cursorName = d.int(), d.str(), d.str(), d.str()
	f.refs, f.ownerPlus1 = int(d.uint()), int32(d.uint())
	for n := d.uint(); n > 0 && d.err == nil; n-- {
		f.liRefs = append(f.liRefs, liRef{ml: d.uint(), idx: uint32(d.uint())})
	}
	for n := d.uint(); n > 0 && d.err == nil; n-- {
		f.svRefs = append(f.svRefs, svRef{seq: d.uint(), entry: d.int(), hash: d.bytes()})
	}
	for n := d.uint(); n > 0 && d.err == nil; n-- {
		f.usage = append(f.usage, usageRef{base: d.str(), partition: int(d.int())})
	}
	return d.done("ledger facts")
}

func (ml *mlFacts) encode(b enc) enc {
	b = b.str(ml.topic).str(ml.path).flags(ml.indexProp, ml.owned).
		uint(uint64(ml.withEntries)).uint(uint64(ml.covered)).uint(uint64(len(ml.ledgers)))
	for _, l := range ml.ledgers {
		b = b.int(l.id).int(l.entries)
	}
	return b
}

func decodeML(v []byte, ml *mlFacts) error {
	d := dec{b: v}
	*ml = mlFacts{ledgers: ml.ledgers[:0]}
	ml.topic, ml.path = d.str(), d.str()
	d.flags(&ml.indexProp, &ml.owned)
	ml.withEntries, ml.covered = int(d.uint()), int(d.uint())
	for n := d.uint(); n > 0 && d.err == nil; n-- {
		ml.ledgers = append(ml.ledgers, mlLedger{id: d.int(), entries: d.int()})
	}
	return d.done("managed ledger")
}

func (sv *schemaVersion) encode(b enc) enc {
	return b.str(sv.key).str(sv.topic).str(sv.path).int(sv.version).int(sv.ledger).int(sv.entry).
		bytes(sv.hash).flags(sv.owned)
}

func decodeSchemaVersion(v []byte, sv *schemaVersion) error {
	d := dec{b: v}
	sv.key, sv.topic, sv.path = d.str(), d.str(), d.str()
	sv.version, sv.ledger, sv.entry = d.int(), d.int(), d.int()
	sv.hash = append(sv.hash[:0], d.bytes()...)
	d.flags(&sv.owned)
	return d.done("schema version")
}
