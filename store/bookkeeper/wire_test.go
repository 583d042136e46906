package bookkeeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/bkdisk"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/bkwirepb"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func readResponse(txn uint64, st bkwirepb.StatusCode, body []byte) *bkwirepb.Response {
	return &bkwirepb.Response{
		Header: header(bkwirepb.OperationType_READ_ENTRY, txn),
		Status: st.Enum(),
		ReadResponse: &bkwirepb.ReadResponse{Status: st.Enum(), LedgerId: proto.Int64(7), EntryId: proto.Int64(0),
			Body: body},
	}
}

func frameOf(t testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))}, b...)
}

// FuzzDecodeResponse: any bytes from a bookie give a response or an error, never
// a panic, and a frame length past the limit is refused before it is allocated.
func FuzzDecodeResponse(f *testing.F) {
	body, _ := bkdisk.BuildFrame(bkdisk.DigestCRC32C, nil, 7, 0, -1, 5, []byte("hello"))
	f.Add(frameOf(f, readResponse(1, bkwirepb.StatusCode_EOK, body)))
	f.Add(frameOf(f, readResponse(2, bkwirepb.StatusCode_ENOENTRY, nil)))
	f.Add(frameOf(f, &bkwirepb.Response{Header: header(bkwirepb.OperationType_READ_LAC, 3), Status: bkwirepb.StatusCode_EOK.Enum(),
		ReadLacResponse: &bkwirepb.ReadLacResponse{Status: bkwirepb.StatusCode_EOK.Enum(), LedgerId: proto.Int64(7), LastEntryBody: body}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2})
	f.Add([]byte{0, 0, 0, 2, 0x08})
	l := &ledger{id: 7, digest: bkdisk.DigestCRC32C, writeQuorum: 1}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := readFrame(bytes.NewReader(b), nil)
		if err != nil {
			return
		}
		resp, err := decodeResponse(fr)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v is not ErrProtocol", err)
			}
			return
		}
		if resp.GetHeader().GetVersion() != bkwirepb.ProtocolVersion_VERSION_THREE {
			t.Fatal("accepted a response that is not v3")
		}
		_, _ = l.verify(resp.GetReadResponse().GetBody(), 0)
		if lb := resp.GetReadLacResponse().GetLastEntryBody(); len(lb) > 0 {
			_, _ = l.verify(lb, be64(lb[min(8, len(lb)):]))
		}
	})
}

func TestReadFrameLimit(t *testing.T) {
	_, err := readFrame(bytes.NewReader([]byte{0x7f, 0, 0, 0}), nil)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("a 2 GiB frame length: %v, want ErrProtocol", err)
	}
}

// TestRequestsNeverFence: the read request carries no flag (FENCE_LEDGER would
// fence the ledger) and no master key.
func TestRequestsNeverFence(t *testing.T) {
	r := readEntryRequest(9, 7, 3)
	if r.GetReadRequest().Flag != nil || r.GetReadRequest().MasterKey != nil {
		t.Fatalf("read request %v sets a flag or master key", r)
	}
	b, err := encodeRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	var back bkwirepb.Request
	if err := proto.Unmarshal(b[4:], &back); err != nil || back.GetHeader().GetTxnId() != 9 || back.GetReadRequest().GetEntryId() != 3 {
		t.Fatalf("round trip: %v %v", &back, err)
	}
}

// TestGarbageServer: a port answering random bytes fails the call with
// ErrProtocol (or a dead connection), quickly, with the bookie named.
func TestGarbageServer(t *testing.T) {
	addr := fakeBookie(t, func(nc net.Conn) {
		_, _ = nc.Write([]byte{0, 0, 0, 8, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 0, 0, 0, 0})
		time.Sleep(5 * time.Second)
	})
	c, err := dial(context.Background(), "garbage-bookie", addr, time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	start := time.Now()
	_, err = c.call(context.Background(), 3*time.Second, func(txn uint64) *bkwirepb.Request { return readEntryRequest(txn, 1, 0) })
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("garbage-bookie")) || !errors.Is(err, ErrProtocol) {
		t.Fatalf("garbage answer: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("took %v: the garbage was not detected, the call timed out", time.Since(start))
	}
}

// TestSilentServer: a bookie that accepts and never answers times out.
func TestSilentServer(t *testing.T) {
	// Read what it is sent, answer nothing, until the client hangs up.
	addr := fakeBookie(t, func(nc net.Conn) { _, _ = io.Copy(io.Discard, nc) })
	c, err := dial(context.Background(), "slow-bookie", addr, time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	_, err = c.call(context.Background(), 300*time.Millisecond, func(txn uint64) *bkwirepb.Request { return readEntryRequest(txn, 1, 0) })
	if !errors.Is(err, errTimeout) {
		t.Fatalf("silent bookie: %v, want a timeout", err)
	}
}

func TestWriteSet(t *testing.T) {
	md := &bkpb.LedgerMetadataFormat{QuorumSize: proto.Int32(2), EnsembleSize: proto.Int32(3), Length: proto.Int64(0),
		State: bkpb.LedgerMetadataFormat_CLOSED.Enum(), LastEntryId: proto.Int64(9),
		DigestType: bkpb.LedgerMetadataFormat_CRC32.Enum(),
		Segment: []*bkpb.LedgerMetadataFormat_Segment{
			{EnsembleMember: []string{"a", "b", "c"}, FirstEntryId: proto.Int64(0)},
			{EnsembleMember: []string{"a", "d", "c"}, FirstEntryId: proto.Int64(5)},
		}}
	l, err := newLedger(1, md)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		e    int64
		want string
	}{{0, "a b"}, {1, "b c"}, {2, "c a"}, {4, "b c"}, {5, "c a"}, {7, "d c"}} {
		if got := l.writeSet(tc.e); strings.Join(got, " ") != tc.want {
			t.Errorf("entry %d: write set %v, want %s", tc.e, got, tc.want)
		}
	}
	md.QuorumSize = proto.Int32(4)
	if _, err := newLedger(1, md); err == nil {
		t.Fatal("write quorum 4 > ensemble 3 accepted")
	}
}

func TestResolveEndpoint(t *testing.T) {
	v, _ := proto.Marshal(&bkwirepb.BookieServiceInfoFormat{Endpoints: []*bkwirepb.BookieServiceInfoFormat_Endpoint{
		{Id: proto.String("http"), Port: proto.Int32(8000), Host: proto.String("h"), Protocol: proto.String("http")},
		{Id: proto.String("bookie"), Port: proto.Int32(3181), Host: proto.String("10.0.0.5"), Protocol: proto.String("bookie-rpc")},
	}})
	addr, ok, err := rpcEndpoint(v)
	if err != nil || !ok || addr != "10.0.0.5:3181" {
		t.Fatalf("rpcEndpoint = %q %v %v", addr, ok, err)
	}
	if _, ok, err := rpcEndpoint(nil); ok || err != nil {
		t.Fatal("an empty registration names no endpoint")
	}
	if _, _, err := rpcEndpoint([]byte{0xff}); err == nil {
		t.Fatal("garbage registration decoded")
	}
}

func TestMasterKeyOfEmptyPassword(t *testing.T) {
	// Pulsar's empty password (BOOKKEEPER.md §4; the .idx header of a real bookie).
	if got := fmt.Sprintf("%x", MasterKey(nil)); got != "850bf1071c5e3d8c24235676f8816ae0cbe2f14f" {
		t.Fatalf("master key of \"\" = %s", got)
	}
}

// fakeBookie listens on a free loopback port and runs serve on each connection
// it accepts (closing it after), for servers that are not bookies: garbage,
// silence, an authentication wall. It returns the address.
func fakeBookie(t *testing.T, serve func(net.Conn)) string {
	l := testutil.Listen(t)
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				serve(nc)
			}()
		}
	}()
	return l.Addr().String()
}
