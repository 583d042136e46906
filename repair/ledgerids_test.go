package repair

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

// TestNewLedgerIDsCollideWithNothing plants ledger ids in every place the scan
// must look, one at a time, and checks the new ledger comes after each.
func TestNewLedgerIDsCollideWithNothing(t *testing.T) {
	plants := []struct {
		name  string
		plant func(t *testing.T, dir string, id int64)
	}{
		{"ledger node", func(t *testing.T, dir string, id int64) { putNode(t, dir, formats.LedgerPath(id), []byte("garbage")) }},
		{"entries only", func(t *testing.T, dir string, id int64) {
			dd := openRW(t, dir)
			defer closeDD(t, dd)
			if err := dd.Ledgers.PutEntry(id, 3, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}},
		{"ledger info", func(t *testing.T, dir string, id int64) {
			b, err := formats.EncodeManagedLedgerInfo(&mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{{LedgerId: proto.Int64(id)}}}, formats.Encoding{})
			if err != nil {
				t.Fatal(err)
			}
			putNode(t, dir, "/managed-ledgers/t/ns/persistent/topic", b)
		}},
		{"cursor ledger", func(t *testing.T, dir string, id int64) {
			b, err := formats.EncodeManagedCursorInfo(&mlpb.ManagedCursorInfo{CursorsLedgerId: proto.Int64(id)}, formats.Encoding{})
			if err != nil {
				t.Fatal(err)
			}
			putNode(t, dir, "/managed-ledgers/t/ns/persistent/topic/sub", b)
		}},
		{"other locator's lost ledger", func(t *testing.T, dir string, id int64) {
			ie := &schemapb.IndexEntry{Version: proto.Int64(0), Hash: []byte{1},
				Position: &schemapb.PositionInfo{LedgerId: proto.Int64(id), EntryId: proto.Int64(0)}}
			b, _ := formats.EncodeSchemaLocator(&schemapb.SchemaLocator{Info: ie, Index: []*schemapb.IndexEntry{ie}})
			putNode(t, dir, "/schemas/other/ns/x", b)
		}},
	}
	for _, p := range plants {
		for _, id := range []int64{40, 1<<31 + 5} {
			t.Run(p.name, func(t *testing.T) {
				dir := buildDir(t, map[string][]handVersion{"t/ns/topic": {
					{version: 0, def: []byte(`"int"`), typ: 5, ledger: 2},
					{version: 1, deleted: true, typ: 1, lost: true, ledger: 3},
				}})
				p.plant(t, dir, id)
				dd := openRO(t, dir)
				defer closeDD(t, dd)
				rp, err := Plan(context.Background(), dd, nil, Options{KeyFilter: "t/ns/topic"})
				if err != nil {
					t.Fatal(err)
				}
				if len(rp.Versions) != 1 || rp.Versions[0].NewLedgerID != id+1 {
					t.Fatalf("new ledger %+v, want %d", rp.Versions, id+1)
				}
				if got := rp.Plan.Items[1].Path; got != formats.LedgerPath(id+1) {
					t.Fatalf("node path %s", got)
				}
			})
		}
	}
}

func putNode(t *testing.T, dir, path string, value []byte) {
	t.Helper()
	dd := openRW(t, dir)
	defer closeDD(t, dd)
	if _, err := dd.Metadata.CompareAndSet(path, 0, value); err != nil {
		t.Fatal(err)
	}
}
