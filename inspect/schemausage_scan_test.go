package inspect

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/schemaid"
)

// sameAsParse checks scanEntry against formats.ParseEntryInto on b: when the
// fast path accepts b, the full parser must accept it too and agree on every
// value. It returns whether the fast path accepted.
func sameAsParse(t *testing.T, b []byte) bool {
	t.Helper()
	var r entryRefs
	ok := scanEntry(b, &r)
	var e formats.Entry
	var md pulsarpb.MessageMetadata
	var bm pulsarpb.BrokerEntryMetadata
	err := formats.ParseEntryInto(b, &e, &md, &bm)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("scanEntry accepted %x, ParseEntryInto: %v", b, err)
	}
	want := entryRefs{
		publishMs: md.GetPublishTime(), messages: int64(md.GetNumMessagesInBatch()),
		version: md.SchemaVersion, hasVersion: md.SchemaVersion != nil,
		id: md.SchemaId, hasID: md.SchemaId != nil,
		hasChecksum: e.HasChecksum, crcOK: e.ChecksumOK, checksum: e.Checksum, metadataOffset: e.MetadataOffset,
	}
	if r.publishMs != want.publishMs || r.messages != want.messages || r.hasVersion != want.hasVersion ||
		r.hasID != want.hasID || !bytes.Equal(r.version, want.version) || !bytes.Equal(r.id, want.id) ||
		r.hasChecksum != want.hasChecksum || r.crcOK != want.crcOK || r.checksum != want.checksum ||
		r.metadataOffset != want.metadataOffset {
		t.Fatalf("entry %x:\nscanEntry     %+v\nParseEntryInto %+v", b, r, want)
	}
	return true
}

func scanSeeds(t testing.TB) [][]byte {
	build := func(bm *pulsarpb.BrokerEntryMetadata, crc bool, md *pulsarpb.MessageMetadata, payload string) []byte {
		b, err := formats.BuildEntry(bm, crc, md, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base := func() *pulsarpb.MessageMetadata {
		return &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(1717000000000)}
	}
	withVersion := base()
	withVersion.SchemaVersion = schemaid.EncodePulsarVersion(3)
	withVersion.NumMessagesInBatch = proto.Int32(5)
	withVersion.Properties = []*pulsarpb.KeyValue{{Key: proto.String("k"), Value: proto.String("v")}}
	withID := base()
	withID.SchemaId = schemaid.EncodeExternalKV([]byte{1}, []byte{2})
	withID.ReplicateTo = []string{"east", "west"}
	withBoth := base()
	withBoth.SchemaVersion = []byte{}
	withBoth.SchemaId = schemaid.EncodeConfluent(42)
	withBoth.NumMessagesInBatch = proto.Int32(-3)
	idx := &pulsarpb.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(9), Index: proto.Uint64(99)}
	seeds := [][]byte{
		build(nil, false, base(), ""),
		build(nil, true, withVersion, "payload"),
		build(idx, true, withID, "x"),
		build(idx, false, withBoth, "yz"),
		{}, {0x0e}, {0x0e, 0x02, 0, 0, 0, 9}, {0x0e, 0x01, 1, 2, 3, 4}, {0, 0, 0, 0},
	}
	// Damaged copies: a flipped payload byte (CRC), a cut, a bad nested property.
	crcBad := bytes.Clone(seeds[1])
	crcBad[len(crcBad)-1] ^= 0xff
	seeds = append(seeds, crcBad, seeds[2][:len(seeds[2])/2])
	badProp := base()
	badProp.Properties = []*pulsarpb.KeyValue{{Key: proto.String("k"), Value: proto.String("v")}}
	bp := build(nil, false, badProp, "")
	// The property's KeyValue is `0a 01 6b 12 01 76`; make its inner length run past it.
	if i := bytes.Index(bp, []byte{0x0a, 0x01, 'k'}); i >= 0 {
		bp[i+1] = 0x05
		seeds = append(seeds, bp)
	}
	return seeds
}

// Every well-formed entry takes the fast path; damaged ones never take it
// wrongly.
func TestScanEntryMatchesParse(t *testing.T) {
	for i, s := range scanSeeds(t) {
		ok := sameAsParse(t, s)
		if i < 4 && !ok {
			t.Errorf("seed %d: well-formed entry not accepted by the fast path", i)
		}
	}
	// And every entry the fixture generator writes.
	dir, _ := usageFixture(t, fixtures.Options{Seed: 9, CorruptCRC: true})
	dd := usageOpen(t, dir, true)
	n, fast := 0, 0
	err := dd.RawLedgerIteration(context.Background(), func(k, v []byte) error {
		var e formats.Entry
		if formats.ParseEntryInto(v, &e, nil, nil) != nil {
			return nil // a schema ledger's SchemaEntry
		}
		n++
		if sameAsParse(t, v) {
			fast++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || fast != n {
		t.Errorf("%d of %d fixture entries took the fast path, want all", fast, n)
	}
}

func FuzzScanEntry(f *testing.F) {
	for _, s := range scanSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sameAsParse(t, b)
	})
}
