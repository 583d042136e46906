package bookkeeper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/bkwirepb"
)

// maxFrame bounds a response frame. A bookie's own limit is nettyMaxFrameSizeBytes
// (5 MiB by default, 5,253,120 in Pulsar's bookkeeper.conf); a larger length
// prefix is garbage, not an entry, and is refused before anything is allocated.
const maxFrame = 16 << 20

// ErrProtocol: bytes from a bookie that are not a v3 response frame.
var ErrProtocol = errors.New("not a BookKeeper v3 response")

// encodeRequest frames a request: u32 length (not counting itself) + the
// protobuf Request (BookieProtoEncoding.RequestEnDeCoderPreV3/V3 framing).
func encodeRequest(req *bkwirepb.Request) ([]byte, error) {
	body, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(out, uint32(len(body)))
	return append(out, body...), nil
}

// readFrame reads one length-prefixed frame into buf (grown as needed).
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("%w: frame length %d exceeds %d bytes", ErrProtocol, n, maxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: frame of %d bytes cut short: %w", ErrProtocol, n, err)
	}
	return buf, nil
}

// decodeResponse parses one frame's bytes as a v3 Response and checks what every
// response must have: protocol version 3 and a known operation.
func decodeResponse(b []byte) (*bkwirepb.Response, error) {
	resp := new(bkwirepb.Response)
	if err := proto.Unmarshal(b, resp); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	h := resp.GetHeader()
	if h.GetVersion() != bkwirepb.ProtocolVersion_VERSION_THREE {
		return nil, fmt.Errorf("%w: protocol version %d, want 3", ErrProtocol, h.GetVersion())
	}
	switch h.GetOperation() {
	case bkwirepb.OperationType_READ_ENTRY:
		if resp.ReadResponse == nil && resp.GetStatus() == bkwirepb.StatusCode_EOK {
			return nil, fmt.Errorf("%w: READ_ENTRY response without a readResponse", ErrProtocol)
		}
	case bkwirepb.OperationType_READ_LAC:
		if resp.ReadLacResponse == nil && resp.GetStatus() == bkwirepb.StatusCode_EOK {
			return nil, fmt.Errorf("%w: READ_LAC response without a readLacResponse", ErrProtocol)
		}
	case bkwirepb.OperationType_ADD_ENTRY:
		if resp.AddResponse == nil && resp.GetStatus() == bkwirepb.StatusCode_EOK {
			return nil, fmt.Errorf("%w: ADD_ENTRY response without an addResponse", ErrProtocol)
		}
	}
	return resp, nil
}

func header(op bkwirepb.OperationType, txn uint64) *bkwirepb.BKPacketHeader {
	return &bkwirepb.BKPacketHeader{
		Version:   bkwirepb.ProtocolVersion_VERSION_THREE.Enum(),
		Operation: op.Enum(),
		TxnId:     proto.Uint64(txn),
	}
}

// readEntryRequest is a plain read: no FENCE_LEDGER flag (that flag fences the
// ledger, so the writer could add no more), no master key.
func readEntryRequest(txn uint64, ledgerID, entryID int64) *bkwirepb.Request {
	return &bkwirepb.Request{
		Header:      header(bkwirepb.OperationType_READ_ENTRY, txn),
		ReadRequest: &bkwirepb.ReadRequest{LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(entryID)},
	}
}

func readLACRequest(txn uint64, ledgerID int64) *bkwirepb.Request {
	return &bkwirepb.Request{
		Header:         header(bkwirepb.OperationType_READ_LAC, txn),
		ReadLacRequest: &bkwirepb.ReadLacRequest{LedgerId: proto.Int64(ledgerID)},
	}
}

// StatusError is a bookie's non-EOK answer.
type StatusError struct {
	Status bkwirepb.StatusCode
}

func (e *StatusError) Error() string {
	switch e.Status {
	case bkwirepb.StatusCode_ENOLEDGER:
		return "bookie has no such ledger (ENOLEDGER)"
	case bkwirepb.StatusCode_ENOENTRY:
		return "bookie has no such entry (ENOENTRY)"
	case bkwirepb.StatusCode_EUA:
		return "bookie requires authentication (EUA); ledgermedic speaks no auth plugin"
	case bkwirepb.StatusCode_ETOOMANYREQUESTS:
		return "bookie is overloaded (ETOOMANYREQUESTS)"
	}
	return fmt.Sprintf("bookie answered %s (%d)", e.Status, int32(e.Status))
}

// Missing reports whether the bookie says it does not hold the entry or ledger.
func (e *StatusError) Missing() bool {
	return e.Status == bkwirepb.StatusCode_ENOLEDGER || e.Status == bkwirepb.StatusCode_ENOENTRY
}
