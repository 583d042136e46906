package repair

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/testutil"
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
			b, err := formats.EncodeSchemaLocator(&schemapb.SchemaLocator{Info: ie, Index: []*schemapb.IndexEntry{ie}})
			if err != nil {
				t.Fatal(err)
			}
			putNode(t, dir, "/schemas/other/ns/x", b)
		}},
		{"cursor batch-deletion position", func(t *testing.T, dir string, id int64) {
			b, err := formats.EncodeManagedCursorInfo(&mlpb.ManagedCursorInfo{CursorsLedgerId: proto.Int64(-1),
				BatchedEntryDeletionIndexInfo: []*mlpb.BatchedEntryDeletionIndexInfo{{
					Position: &mlpb.NestedPositionInfo{LedgerId: proto.Int64(id), EntryId: proto.Int64(4)}, DeleteSet: []int64{0, 1}}}},
				formats.Encoding{})
			if err != nil {
				t.Fatal(err)
			}
			putNode(t, dir, "/managed-ledgers/t/ns/persistent/topic/sub", b)
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
				dd := testutil.OpenReadOnly(t, dir)
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

// TestNewLedgerCopiesTemplateDigest: BookkeeperSchemaStorage creates (and opens)
// schema ledgers with managedLedgerDigestType, so a restored ledger takes the
// digest type of the ledger its sizes come from; CRC32C (the default) without one.
func TestNewLedgerCopiesTemplateDigest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		template *bkpb.LedgerMetadataFormat_DigestType
		want     bkpb.LedgerMetadataFormat_DigestType
	}{
		{"crc32", bkpb.LedgerMetadataFormat_CRC32.Enum(), bkpb.LedgerMetadataFormat_CRC32},
		{"hmac", bkpb.LedgerMetadataFormat_HMAC.Enum(), bkpb.LedgerMetadataFormat_HMAC},
		{"template without one", nil, bkpb.LedgerMetadataFormat_CRC32C},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := buildDir(t, map[string][]handVersion{"t/ns/topic": {
				{version: 0, def: []byte(`"int"`), typ: 5, ledger: 2},
				{version: 1, deleted: true, typ: 1, lost: true, ledger: 3},
			}})
			setDigest(t, dir, 2, tc.template)
			dd := testutil.OpenReadOnly(t, dir)
			defer closeDD(t, dd)
			rp, err := Plan(context.Background(), dd, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rp.Plan == nil || len(rp.Plan.Items) != 3 {
				t.Fatalf("plan %+v", rp.Plan)
			}
			md, err := formats.DecodeLedgerMetadata(rp.Plan.Items[1].After)
			if err != nil {
				t.Fatal(err)
			}
			if md.DigestType == nil || md.GetDigestType() != tc.want {
				t.Fatalf("restored ledger digest %v, want %v", md.DigestType, tc.want)
			}
			if md.Password == nil || len(md.Password) != 0 {
				t.Fatalf("restored ledger password %q, want empty", md.Password)
			}
		})
	}
}

// setDigest rewrites the digest type of ledger id's node (nil: none).
func setDigest(t *testing.T, dir string, id int64, digest *bkpb.LedgerMetadataFormat_DigestType) {
	t.Helper()
	dd := openRW(t, dir)
	defer closeDD(t, dd)
	n, err := dd.Metadata.Get(formats.LedgerPath(id))
	if err != nil {
		t.Fatal(err)
	}
	md, err := formats.DecodeLedgerMetadata(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	md.DigestType = digest
	b, err := formats.EncodeLedgerMetadata(md)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Metadata.CompareAndSet(n.Path, n.Version, b); err != nil {
		t.Fatal(err)
	}
}
