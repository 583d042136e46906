package index

import (
	"context"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"google.golang.org/protobuf/proto"
)

func FuzzParseEntryInfo(f *testing.F) {
	for _, n := range []int32{1, 5} {
		md := &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(9)}
		if n > 1 {
			md.NumMessagesInBatch = proto.Int32(n)
		}
		for _, bm := range []*pulsarpb.BrokerEntryMetadata{nil, {Index: proto.Uint64(41), BrokerTimestamp: proto.Uint64(7)}} {
			b, err := formats.BuildEntry(bm, n == 5, md, []byte("x"))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	// Edge cases of the base index: no messages, a base below 0, a timestamp without an index.
	for _, c := range []struct {
		n  *int32
		bm *pulsarpb.BrokerEntryMetadata
	}{
		{proto.Int32(0), &pulsarpb.BrokerEntryMetadata{Index: proto.Uint64(3)}},
		{proto.Int32(5), &pulsarpb.BrokerEntryMetadata{Index: proto.Uint64(2)}},
		{nil, &pulsarpb.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(7)}},
	} {
		md := &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(9), NumMessagesInBatch: c.n}
		b, err := formats.BuildEntry(c.bm, true, md, []byte("x"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x0e, 0x02, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEntryInfo(b)
		// The fast path (formats.PeekEntry) and the full parse agree.
		var p entryParser
		full, ferr := p.parseFull(b)
		if (err == nil) != (ferr == nil) || e != full {
			t.Fatalf("ParseEntryInfo = %+v, %v; the full parse = %+v, %v", e, err, full, ferr)
		}
		if err != nil {
			return
		}
		if e.HasIndex && (e.Base < 0 || e.Base > e.Last) {
			t.Fatalf("base %d last %d", e.Base, e.Last)
		}
	})
}

// FuzzFindOffset runs searches over arbitrary ManagedLedgerInfo bytes against a
// real store: whatever metadata says, a search answers or errors, never panics.
func FuzzFindOffset(f *testing.F) {
	dd, _ := buildDir(f, findCases()[:3])
	for _, name := range []string{"all-props", "no-props", "mixed"} {
		n, err := dd.Metadata.Get(tPath(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(n.Value, int64(7), false)
		f.Add(n.Value, int64(1000), true)
	}
	f.Fuzz(func(t *testing.T, node []byte, target int64, legacy bool) {
		info, _, err := formats.DecodeManagedLedgerInfo(node)
		if err != nil {
			return
		}
		a, err := FindOffset(context.Background(), dd.Ledgers, info, target, FindOptions{Legacy: legacy})
		if err != nil {
			return
		}
		if a.Found && a.PastEnd {
			t.Fatalf("found and past end: %+v", a)
		}
		if _, err := FindTime(context.Background(), dd.Ledgers, info, target, FindOptions{Legacy: legacy}); err != nil {
			return
		}
	})
}

// Reading an entry's index by the fast path allocates nothing: back-fill reads
// entry 0 of every ledger.
func TestParseEntryInfoAllocatesNothing(t *testing.T) {
	md := &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(9), NumMessagesInBatch: proto.Int32(3)}
	b, err := formats.BuildEntry(&pulsarpb.BrokerEntryMetadata{Index: proto.Uint64(41), BrokerTimestamp: proto.Uint64(7)}, true, md, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	var e EntryInfo
	if n := testing.AllocsPerRun(100, func() { e, err = ParseEntryInfo(b) }); n != 0 || err != nil || e.Base != 39 || e.Last != 41 {
		t.Fatalf("ParseEntryInfo: %v allocations, %+v, %v; want none, base 39, last 41", n, e, err)
	}
}
