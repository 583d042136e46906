package index

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// A small hand-built cluster for cases the fixture generator does not plant:
// offloaded ledgers in the middle, missing properties on chosen ledgers, entries
// without broker index, planted wrong values.

type tLedger struct {
	batches   []int  // num_messages_in_batch of each entry
	offloaded bool   // offloadContext complete+deleted, no node, no entries
	lost      string // "", "node+entries" or "entries"
	noIndex   bool   // entries carry no broker entry metadata
	noEntry0  bool   // entry 0 deleted, later entries kept
	dropTail  int    // this many last entries are not stored (LedgerInfo still counts them)
	prop      string // "" no property; "auto" the true value; anything else stored as is
}

type tTopic struct {
	name    string
	enc     formats.Encoding
	ledgers []tLedger
	open    bool // the last ledger is open (LedgerInfo entries 0, timestamp 0)
	// terminated sets terminatedPosition at the last entry, as asyncTerminate does
	// (with open, the last LedgerInfo keeps 0 entries, as the broker leaves it).
	terminated bool
	mlIndex    bool // ML property "index"
}

// tTruth is what the builder wrote for one ledger.
type tTruth struct {
	ID          int64
	First, Last int64 // broker indexes; -1 when the ledger has no entries
	Entries     int64
	Local       bool // entries are in the store
}

const tBaseTime = 1_700_000_000_000

func tPath(name string) string {
	return formats.TopicName{Domain: "persistent", Tenant: "acme", Namespace: "test", LocalName: name}.ManagedLedgerPath()
}

// buildDir writes topics into a new data dir and returns it open (writable) with
// the truth per topic path.
func buildDir(t testing.TB, topics []tTopic) (*datadir.DataDir, map[string][]tTruth) {
	t.Helper()
	b := testutil.NewDataDir(t)
	truth := make(map[string][]tTruth)
	nextID := int64(10)
	for _, tt := range topics {
		info := &mlpb.ManagedLedgerInfo{}
		index := int64(-1)
		clock := int64(tBaseTime)
		path := tPath(tt.name)
		for li, l := range tt.ledgers {
			id := nextID
			nextID += 3 // gaps, as real ledger ids have
			tr := tTruth{ID: id, First: -1, Last: -1, Entries: int64(len(l.batches)), Local: !l.offloaded && l.lost == ""}
			for e, n := range l.batches {
				clock += 10
				md := &pulsarpb.MessageMetadata{
					ProducerName: proto.String("p"), SequenceId: proto.Uint64(uint64(e)), PublishTime: proto.Uint64(uint64(clock)),
				}
				if n != 1 {
					md.NumMessagesInBatch = proto.Int32(int32(n))
				}
				if tr.First < 0 {
					tr.First = index + 1
				}
				index += int64(n)
				tr.Last = index
				m := testutil.Message{Meta: md, Payload: []byte("payload-" + strconv.Itoa(e))}
				if !l.noIndex {
					m.HasIndex, m.Index, m.BrokerTime = true, index, uint64(clock)
				}
				v := testutil.TopicEntry(t, m)
				if tr.Local && !(l.noEntry0 && e == 0) && e < len(l.batches)-l.dropTail {
					b.Entry(id, int64(e), v)
				}
			}
			info.LedgerInfo = append(info.LedgerInfo, tLedgerInfo(t, id, l, tr, clock, tt.open && li == len(tt.ledgers)-1))
			if !l.offloaded && l.lost != "node+entries" {
				b.LedgerNode(id, testutil.LedgerMetadata(testutil.LedgerSpec{LastEntryID: tr.Entries - 1, Length: 100 * tr.Entries,
					Custom: testutil.TopicLedgerCustom(path[len(formats.ManagedLedgersRoot)+1:]), Ctime: tBaseTime}))
			}
			truth[path] = append(truth[path], tr)
		}
		if tt.mlIndex {
			formats.SetMLProperty(info, cluster.MLIndexProperty, strconv.FormatInt(index, 10))
		}
		if tt.terminated {
			last := truth[path][len(truth[path])-1]
			info.TerminatedPosition = &mlpb.NestedPositionInfo{LedgerId: proto.Int64(last.ID), EntryId: proto.Int64(last.Entries - 1)}
		}
		b.ManagedLedger(path, info, tt.enc)
	}
	return b.Open(), truth
}

func tLedgerInfo(t testing.TB, id int64, l tLedger, tr tTruth, clock int64, open bool) *mlpb.ManagedLedgerInfo_LedgerInfo {
	li := &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(id)}
	if open {
		li.Timestamp = proto.Int64(0)
	} else {
		li.Entries, li.Size, li.Timestamp = proto.Int64(tr.Entries), proto.Int64(100*tr.Entries), proto.Int64(clock+1)
	}
	if l.offloaded {
		li.OffloadContext = &mlpb.OffloadContext{Complete: proto.Bool(true), BookkeeperDeleted: proto.Bool(true),
			UidMsb: proto.Int64(1), UidLsb: proto.Int64(2)}
	}
	switch l.prop {
	case "":
	case "auto":
		if tr.First >= 0 {
			formats.SetLedgerProperty(li, cluster.FirstEntryIndexKey, strconv.FormatInt(tr.First, 10))
		}
	default:
		formats.SetLedgerProperty(li, cluster.FirstEntryIndexKey, l.prop)
	}
	return li
}

// randomBatches returns n batch sizes in [1, max].
func randomBatches(rng *rand.Rand, n, maxBatch int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1 + rng.IntN(maxBatch)
	}
	return out
}

func uniform(n, size int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}

// loadInfo reads and decodes a managed-ledger node.
func loadInfo(t testing.TB, dd *datadir.DataDir, path string) (*mlpb.ManagedLedgerInfo, formats.Encoding, store.Node) {
	t.Helper()
	n, err := dd.Metadata.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	info, enc, err := formats.DecodeManagedLedgerInfo(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	return info, enc, n
}

// scanned is every local entry of a managed ledger, in order: the brute-force answer key.
type scanned struct {
	pos  []Position
	info []EntryInfo
}

func scanAll(t testing.TB, dd *datadir.DataDir, info *mlpb.ManagedLedgerInfo) *scanned {
	t.Helper()
	s := &scanned{}
	for _, li := range info.GetLedgerInfo() {
		err := dd.Ledgers.Entries(context.Background(), li.GetLedgerId(), 0, -1, func(id int64, v []byte) error {
			e, err := ParseEntryInfo(v)
			if err != nil {
				return err
			}
			s.pos = append(s.pos, Position{LedgerID: li.GetLedgerId(), EntryID: id})
			s.info = append(s.info, e)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// offset returns the first entry whose last index >= target.
func (s *scanned) offset(target int64) (Position, EntryInfo, bool) {
	for i, e := range s.info {
		if e.HasIndex && e.Last >= target {
			return s.pos[i], e, true
		}
	}
	return Position{}, EntryInfo{}, false
}

// time returns the first entry whose time >= target.
func (s *scanned) time(target uint64) (Position, bool) {
	for i, e := range s.info {
		if e.Time() >= target {
			return s.pos[i], true
		}
	}
	return Position{}, false
}
