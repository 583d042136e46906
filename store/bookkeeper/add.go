package bookkeeper

import (
	"context"
	"crypto/sha1"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/bkdisk"
	"github.com/ledgermedic/ledgermedic/formats/bkwirepb"
)

// The first piece of the writer a restored schema ledger needs (BOOKKEEPER.md §6,
// steps 4 and 6): one ADD_ENTRY to one bookie. The steps around it — the id from
// the cluster's generator, the metadata node created OPEN, CLOSED by
// compare-and-set, each step journaled by the mutation engine — belong to the
// caller; nothing in the read path uses this.

// MasterKey is a ledger's master key: SHA-1("ledger" ‖ password)
// (DigestManager.generateMasterKey). A bookie refuses adds with another key.
func MasterKey(password []byte) []byte {
	h := sha1.New()
	h.Write([]byte("ledger"))
	h.Write(password)
	return h.Sum(nil)
}

func addEntryRequest(txn uint64, ledgerID, entryID int64, masterKey, body []byte) *bkwirepb.Request {
	return &bkwirepb.Request{
		Header: header(bkwirepb.OperationType_ADD_ENTRY, txn),
		AddRequest: &bkwirepb.AddRequest{LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(entryID),
			MasterKey: masterKey, Body: body},
	}
}

// AddEntry stores one entry on one bookie: the frame (ids, LAC, cumulative
// length, digest, payload) built as the Java client builds it, sent with the
// ledger's master key; the bookie answers once the entry is in its journal. It
// never sets RECOVERY_ADD, so a fenced ledger refuses it (EFENCED).
func (s *Store) AddEntry(ctx context.Context, bookie string, ledgerID, entryID, lac, length int64,
	digest bkdisk.DigestType, password, payload []byte) error {
	frame, err := bkdisk.BuildFrame(digest, password, ledgerID, entryID, lac, length, payload)
	if err != nil {
		return fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	c, err := s.conn(ctx, bookie)
	if err != nil {
		return fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	key := MasterKey(password)
	resp, err := c.call(ctx, s.timeout, func(txn uint64) *bkwirepb.Request {
		return addEntryRequest(txn, ledgerID, entryID, key, frame)
	})
	if err != nil {
		return fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	st := resp.GetStatus()
	if st == bkwirepb.StatusCode_EOK {
		st = resp.GetAddResponse().GetStatus()
	}
	if st != bkwirepb.StatusCode_EOK {
		return fmt.Errorf("ledger %d entry %d: bookie %s: add: %w", ledgerID, entryID, bookie, &StatusError{Status: st})
	}
	if r := resp.GetAddResponse(); r.GetLedgerId() != ledgerID || r.GetEntryId() != entryID {
		return fmt.Errorf("ledger %d entry %d: bookie %s: %w: add answered for ledger %d entry %d",
			ledgerID, entryID, bookie, ErrProtocol, r.GetLedgerId(), r.GetEntryId())
	}
	return nil
}
