package cluster_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func entry(t *testing.T, indexed bool, index int64) []byte {
	return testutil.TopicEntry(t, testutil.Message{
		Meta:     &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(1)},
		HasIndex: indexed, Index: index, Payload: []byte("x"),
	})
}

func ledgerInfo(id, entries int64) *mlpb.ManagedLedgerInfo_LedgerInfo {
	return &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(id), Entries: proto.Int64(entries)}
}

// Ledgers counts the open last ledger's entries from the store, terminated or
// not, and reads the property by the one rule.
func TestLedgers(t *testing.T) {
	b := testutil.NewDataDir(t)
	for e := range int64(3) {
		b.Entry(20, e, entry(t, true, 10+e))
	}
	dd := b.Open()
	closed := ledgerInfo(10, 5)
	formats.SetLedgerProperty(closed, cluster.FirstEntryIndexKey, "0")
	bad := ledgerInfo(15, 5)
	formats.SetLedgerProperty(bad, cluster.FirstEntryIndexKey, "x")
	bad.OffloadContext = &mlpb.OffloadContext{Complete: proto.Bool(true), BookkeeperDeleted: proto.Bool(true)}
	for _, terminated := range []bool{false, true} {
		info := &mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{closed, bad, ledgerInfo(20, 0)}}
		if terminated {
			info.TerminatedPosition = &mlpb.NestedPositionInfo{LedgerId: proto.Int64(20), EntryId: proto.Int64(2)}
		}
		ls, err := cluster.Ledgers(info, dd.Ledgers, "")
		if err != nil {
			t.Fatal(err)
		}
		want := []cluster.Ledger{
			{ID: 10, Entries: 5, First: 0, HasFirst: true},
			{ID: 15, Entries: 5, BadFirst: "x", NotLocal: true},
			{ID: 20, Entries: 3, Open: true},
		}
		for i := range want {
			if ls[i] != want[i] {
				t.Errorf("terminated=%v: ledger %d = %+v, want %+v", terminated, i, ls[i], want[i])
			}
		}
	}
}

func TestEntry0IndexedAndInfoIndexed(t *testing.T) {
	b := testutil.NewDataDir(t)
	b.Entry(1, 0, entry(t, false, 0))
	b.Entry(2, 0, entry(t, true, 4))
	b.Entry(3, 0, []byte{0x0e, 0x01, 0xff}) // not an entry frame
	b.Entry(4, 1, entry(t, true, 9))        // entry 0 missing
	dd := b.Open()
	for id, want := range map[int64]bool{1: false, 2: true, 3: false, 4: false, 5: false} {
		got, err := cluster.Entry0Indexed(dd.Ledgers, id)
		if err != nil || got != want {
			t.Errorf("ledger %d: Entry0Indexed = %v, %v; want %v", id, got, err, want)
		}
	}
	info := func(ids ...int64) *mlpb.ManagedLedgerInfo {
		m := &mlpb.ManagedLedgerInfo{}
		for _, id := range ids {
			m.LedgerInfo = append(m.LedgerInfo, ledgerInfo(id, 1))
		}
		return m
	}
	withProp := info(1)
	formats.SetMLProperty(withProp, cluster.MLIndexProperty, "7")
	for _, c := range []struct {
		name string
		info *mlpb.ManagedLedgerInfo
		want cluster.Indexed
	}{
		{"older ledger indexed, newest not", info(2, 1, 3), cluster.IndexedByEntry},
		{"none indexed", info(1, 3, 4), cluster.NotIndexed},
		{"ML property", withProp, cluster.IndexedByProperty},
	} {
		got, err := cluster.InfoIndexed(c.info, dd.Ledgers)
		if err != nil || got != c.want {
			t.Errorf("%s: InfoIndexed = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

func TestTopicManagedLedgersAndPresence(t *testing.T) {
	topic := func(s string) formats.TopicName {
		tn, err := formats.ParseTopic(s)
		if err != nil {
			t.Fatal(err)
		}
		return tn
	}
	b := testutil.NewDataDir(t)
	plain := topic("acme/ns/plain")
	parted := topic("acme/ns/parted")
	b.ManagedLedger(plain.ManagedLedgerPath(), &mlpb.ManagedLedgerInfo{}, formats.Plain)
	for _, i := range []int{10, 2, 0, 1} { // walked as 0, 1, 10, 2
		b.ManagedLedger(parted.Partition(i).ManagedLedgerPath(), &mlpb.ManagedLedgerInfo{}, formats.Plain)
	}
	// Not a partition of parted, though its path starts the same.
	b.ManagedLedger(topic("acme/ns/parted-partition-x").ManagedLedgerPath(), &mlpb.ManagedLedgerInfo{}, formats.Plain)
	b.LedgerNode(7, testutil.LedgerMetadata(testutil.LedgerSpec{LastEntryID: -1}))
	b.Entry(8, 3, []byte("e"))
	dd := b.Open()
	ctx := context.Background()

	mls, err := cluster.TopicManagedLedgers(ctx, dd.Metadata, plain)
	if err != nil || len(mls) != 1 || mls[0].Topic != plain || mls[0].Node.Path != plain.ManagedLedgerPath() {
		t.Errorf("plain topic: %+v, %v", mls, err)
	}
	mls, err = cluster.TopicManagedLedgers(ctx, dd.Metadata, parted)
	if err != nil || len(mls) != 4 {
		t.Fatalf("partitioned topic: %d managed ledgers, %v", len(mls), err)
	}
	for i, want := range []int{0, 1, 2, 10} {
		if mls[i].Topic != parted.Partition(want) || mls[i].Damaged != nil {
			t.Errorf("partition #%d: %s, want %s", i, mls[i].Topic, parted.Partition(want))
		}
	}
	mls, err = cluster.TopicManagedLedgers(ctx, dd.Metadata, parted.Partition(1))
	if err != nil || len(mls) != 1 || mls[0].Topic != parted.Partition(1) {
		t.Errorf("one partition: %+v, %v", mls, err)
	}
	for _, c := range []struct {
		want, t formats.TopicName
		names   bool
	}{
		{plain, plain, true}, {parted, parted.Partition(10), true}, {parted.Partition(1), parted.Partition(1), true},
		{parted.Partition(1), parted.Partition(2), false}, {parted.Partition(1), parted, false}, {plain, parted.Partition(0), false},
	} {
		if got := cluster.Names(c.want, c.t); got != c.names {
			t.Errorf("Names(%s, %s) = %v, want %v", c.want, c.t, got, c.names)
		}
	}
	for _, missing := range []formats.TopicName{topic("acme/ns/nope"), parted.Partition(3)} {
		if _, err := cluster.TopicManagedLedgers(ctx, dd.Metadata, missing); !errors.Is(err, cluster.ErrNoSuchTopic) {
			t.Errorf("%s: %v, want ErrNoSuchTopic", missing, err)
		}
	}

	for id, want := range map[int64]cluster.Presence{7: {Node: true}, 8: {Entries: true}, 9: {}} {
		got, err := cluster.LedgerPresence(dd.Metadata, dd.Ledgers, id)
		if err != nil || got != want {
			t.Errorf("ledger %d: presence %+v, %v; want %+v", id, got, err, want)
		}
		if got.Lost() != (id == 9) {
			t.Errorf("ledger %d: Lost = %v", id, got.Lost())
		}
	}
}

// LedgerNodesExist, reading ahead a window at a time, answers as LedgerNodeExists
// does for each ledger: more ledgers than a window, every third without a node.
func TestLedgerNodesExistAnswersAsLedgerNodeExists(t *testing.T) {
	b := testutil.NewDataDir(t)
	var ids []int64
	for id := int64(1); id <= 2500; id++ {
		ids = append(ids, id)
		if id%3 != 0 {
			b.Node(formats.LedgerPath(id), []byte("x"))
		}
	}
	ids = append(ids, 7, 9, 7) // repeats
	ids = append(ids, -1, -4)  // a damaged pointer's id: no node can have it
	dd := b.Open()
	got, err := cluster.LedgerNodesExist(dd.Metadata, ids)
	if err != nil || len(got) != len(ids) {
		t.Fatalf("LedgerNodesExist: %d answers, %v", len(got), err)
	}
	for i, id := range ids {
		want, err := cluster.LedgerNodeExists(dd.Metadata, id)
		if err != nil || got[i] != want || want != (id > 0 && id%3 != 0) {
			t.Fatalf("ledger %d: LedgerNodesExist %v, LedgerNodeExists %v (%v)", id, got[i], want, err)
		}
	}
}
