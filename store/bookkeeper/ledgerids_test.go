package bookkeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/bkwirepb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// lacBookie answers every READ_LAC after delay with an explicit LAC of lac
// (a writer's WRITE_LAC body: ledgerId | lac), each request on its own
// goroutine as a bookie's request threads do; it counts the requests.
func lacBookie(t *testing.T, delay time.Duration, lac int64, calls *int64, mu *sync.Mutex) string {
	return fakeBookie(t, func(nc net.Conn) {
		var wmu sync.Mutex
		for {
			b, err := readFrame(nc, nil)
			if err != nil {
				return
			}
			var req bkwirepb.Request
			if proto.Unmarshal(b, &req) != nil {
				return
			}
			mu.Lock()
			*calls++
			mu.Unlock()
			go func() {
				time.Sleep(delay)
				id := req.GetReadLacRequest().GetLedgerId()
				body := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(id)), uint64(lac))
				resp, _ := proto.Marshal(&bkwirepb.Response{Header: header(req.GetHeader().GetOperation(), req.GetHeader().GetTxnId()),
					Status: bkwirepb.StatusCode_EOK.Enum(), ReadLacResponse: &bkwirepb.ReadLacResponse{
						Status: bkwirepb.StatusCode_EOK.Enum(), LedgerId: proto.Int64(id), LacBody: append(body, 0, 0, 0, 0)}})
				wmu.Lock()
				defer wmu.Unlock()
				_, _ = nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(resp))), resp...))
			}()
		}
	})
}

// lacStore is a bk: store over a data dir's metadata holding n ledgers on
// bookie, every third one closed with 3 entries and the others OPEN.
func lacStore(t *testing.T, n int, bookie string) *Store {
	b := testutil.NewDataDir(t)
	b.Node("/ledgers/LAYOUT", []byte("2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1\n"))
	for i := range n {
		m := testutil.LedgerMetadata(testutil.LedgerSpec{LastEntryID: 2, Length: 3, Open: i%3 != 0})
		m.Segment[0].EnsembleMember = []string{bookie}
		m.EnsembleSize, m.QuorumSize, m.AckQuorumSize = proto.Int32(1), proto.Int32(1), proto.Int32(1)
		b.LedgerNode(int64(i), m)
	}
	dd := b.Open()
	u, err := store.ParseLedgersURL("bk:")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := Open(u, dd.Metadata, store.Options{ReadOnly: true, Remote: store.RemoteOptions{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Close() })
	return lb.(*Store)
}

// TestLedgerIDsReadsLACsConcurrently: the open ledgers' LACs are asked in
// parallel (a serial loop over 2,781 open ledgers answered in 20 ms each takes
// 56 s), every ledger is listed once in order with its readable count across
// pages of the walk, and fn's error stops the listing.
func TestLedgerIDsReadsLACsConcurrently(t *testing.T) {
	var mu sync.Mutex
	var calls int64
	const n, open = ledgerPage + 76, (ledgerPage + 76) * 2 / 3 // two pages
	s := lacStore(t, n, lacBookie(t, 20*time.Millisecond, 6, &calls, &mu))
	start := time.Now()
	var ids []int64
	err := s.LedgerIDs(context.Background(), func(id, entries int64) error {
		want := int64(7) // open: LAC 6
		if id%3 == 0 {
			want = 3 // closed: lastEntryId 2
		}
		if entries != want {
			t.Errorf("ledger %d: %d entries, want %d", id, entries, want)
		}
		ids = append(ids, id)
		return nil
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("%d ledgers listed, want %d", len(ids), n)
	}
	for i, id := range ids {
		if id != int64(i) {
			t.Fatalf("ledger %d listed at %d: not ascending", id, i)
		}
	}
	if calls != open {
		t.Fatalf("%d READ_LAC requests, want one per open ledger (%d)", calls, open)
	}
	if took > 4*time.Second {
		t.Fatalf("listing took %v: the LACs were read one after another", took)
	}

	stop := errors.New("stop")
	seen := 0
	err = lacStore(t, n, lacBookie(t, 10*time.Millisecond, 6, &calls, &mu)).LedgerIDs(context.Background(), func(id, _ int64) error {
		seen++
		if id == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 11 {
		t.Fatalf("fn's error: %v after %d ledgers, want %v after 11", err, seen, stop)
	}
}

// TestLedgerIDsBookieDown: open ledgers whose only bookie refuses connections
// are listed without entries and reported (no error: the listing goes on), and
// the closed ones are listed with theirs.
func TestLedgerIDsBookieDown(t *testing.T) {
	l := testutil.Listen(t)
	dead := l.Addr().String()
	l.Close()
	s := lacStore(t, 6, dead)
	var ids []int64
	if err := s.LedgerIDs(context.Background(), func(id, n int64) error {
		ids = append(ids, id)
		return nil
	}); err != nil {
		t.Fatalf("LedgerIDs with the bookie down: %v", err)
	}
	if len(ids) != 2 || ids[0] != 0 || ids[1] != 3 {
		t.Fatalf("listed %v, want the closed ledgers [0 3]", ids)
	}
	fs, _ := s.ReplicaFindings(context.Background())
	open := map[int64]bool{}
	for _, f := range fs {
		if f.Kind != store.FindingBookieUnavailable || f.Bookie != dead || !f.NoGoodReplica {
			t.Fatalf("finding %+v, want %s unavailable with nothing read", f, dead)
		}
		open[f.LedgerID] = true
	}
	if len(open) != 4 {
		t.Fatalf("findings for ledgers %v, want the 4 open ones", open)
	}
}
