package bookkeeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ledgermedic/ledgermedic/store"
)

// The bookie side of writing a restored schema ledger (BOOKKEEPER.md §6): an id
// from the cluster's generator, the writable bookies, the adds and the read-back.
// The mutation engine journals the ledger, writes its metadata node (OPEN, then
// CLOSED) between these calls and deletes it to roll back.

var _ store.BookieWriter = (*Store)(nil)

// Id generator nodes under the ledgers root (HierarchicalLedgerManagerFactory:
// LegacyHierarchicalLedgerManager.IDGEN_ZNODE, LongHierarchicalLedgerManager.IDGEN_ZNODE).
const (
	idgenNode     = "idgen"
	idgenLongNode = "idgen-long"
	idPrefix      = "ID-"
	hobPrefix     = "HOB-"
)

// ErrNoIDGenerator: the metadata store cannot make sequential nodes, so no id can
// be taken from the cluster's generator (and none is invented locally).
var ErrNoIDGenerator = errors.New("the ledger metadata store cannot take ids from BookKeeper's id generator")

func (s *Store) sequential() (store.SequentialCreator, error) {
	sc, ok := s.meta.(store.SequentialCreator)
	if !ok || s.ownMeta != nil {
		return nil, fmt.Errorf("bk: %s: %w (writing needs --ledgers bk: with a writable ZooKeeper --metadata)", s.root, ErrNoIDGenerator)
	}
	return sc, nil
}

// NewLedgerID takes an id as the Java client's LongZkLedgerIdGenerator does:
// below 2^31 (no <root>/idgen-long) the sequence number of an ephemeral
// sequential <root>/idgen/ID- node; past it, hob<<32 | the sequence number under
// the largest <root>/idgen-long/HOB-<hob>. The generator node is deleted
// at once (ZkLedgerIdGenerator); the id is never handed out again.
func (s *Store) NewLedgerID(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	sc, err := s.sequential()
	if err != nil {
		return 0, err
	}
	longPath := s.root + "/" + idgenLongNode
	if _, err := s.meta.Get(longPath); errors.Is(err, store.ErrNotFound) {
		seq, err := s.takeSequence(sc, s.root+"/"+idgenNode+"/"+idPrefix)
		if err != nil {
			return 0, err
		}
		if seq >= math.MaxInt32 {
			return 0, fmt.Errorf("bk: id generator %s/%s is past 2^31-1 (%d): let the Java client move the cluster to %s first",
				s.root, idgenNode, seq, longPath)
		}
		return seq, nil
	} else if err != nil {
		return 0, fmt.Errorf("bk: id generator %s: %w", longPath, err)
	}
	kids, err := sc.Children(longPath)
	if err != nil {
		return 0, fmt.Errorf("bk: id generator %s: %w", longPath, err)
	}
	hob := int64(-1)
	for _, k := range kids {
		if v, err := strconv.ParseInt(strings.TrimPrefix(k, hobPrefix), 10, 32); err == nil && strings.HasPrefix(k, hobPrefix) {
			hob = max(hob, v)
		}
	}
	if hob < 0 {
		return 0, fmt.Errorf("bk: id generator %s has no %s node: let the Java client create one first", longPath, hobPrefix)
	}
	seq, err := s.takeSequence(sc, fmt.Sprintf("%s/%s%010d/%s", longPath, hobPrefix, hob, idPrefix))
	if err != nil {
		return 0, err
	}
	if seq >= math.MaxInt32 {
		return 0, fmt.Errorf("bk: id generator %s/%s%010d is full: let the Java client open the next one", longPath, hobPrefix, hob)
	}
	return hob<<32 | seq, nil
}

// takeSequence creates one ephemeral sequential node under prefix, deletes it
// and returns its sequence number.
func (s *Store) takeSequence(sc store.SequentialCreator, prefix string) (int64, error) {
	p, err := sc.CreateSequential(prefix, true)
	if err != nil {
		return 0, fmt.Errorf("bk: id generator: %w", err)
	}
	seq, err := strconv.ParseInt(strings.TrimPrefix(p[strings.LastIndex(p, "/")+1:], idPrefix), 10, 64)
	if err != nil || seq < 0 {
		return 0, fmt.Errorf("bk: id generator: node %s has no sequence number", p)
	}
	// The node is ephemeral: a failed delete only leaves it until the session ends.
	_ = s.meta.CompareAndDelete(p, 1)
	return seq, nil
}

// WritableBookies lists <root>/available's bookies, without the read-only ones
// (<root>/available/readonly).
func (s *Store) WritableBookies(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sc, err := s.sequential()
	if err != nil {
		return nil, err
	}
	kids, err := sc.Children(s.root + "/available")
	if err != nil {
		return nil, fmt.Errorf("bk: bookie registry: %w", err)
	}
	var out []string
	for _, k := range kids {
		if k != "readonly" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// LedgerNode is the metadata node of ledger id under the ledgers root.
func (s *Store) LedgerNode(id int64) string { return ledgerPath(s.root, id) }

// AddEntries adds each entry to every bookie of its write set, as the Java
// client's PendingAddOp sends it (LAC = the entry before it, length cumulative),
// and requires EOK from every bookie, not only an ack quorum: a missing replica
// is repaired only when a bookie is lost or on the auditor's weekly check.
func (s *Store) AddEntries(ctx context.Context, ledgerID int64, md []byte, entries [][]byte, done func(int64, string)) error {
	l, err := s.parseLedger(ledgerID, md)
	if err != nil {
		return err
	}
	length := int64(0)
	for e, payload := range entries {
		entryID := int64(e)
		length += int64(len(payload))
		for _, b := range l.writeSet(entryID) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.AddEntry(ctx, b, ledgerID, entryID, entryID-1, length, l.digest, l.password, payload); err != nil {
				return err
			}
			if done != nil {
				done(entryID, b)
			}
		}
	}
	return nil
}

// ReadBack reads every entry from every bookie of its write set (no fencing) and
// compares it: ids and digest (verify), then the payload.
func (s *Store) ReadBack(ctx context.Context, ledgerID int64, md []byte, entries [][]byte) error {
	l, err := s.parseLedger(ledgerID, md)
	if err != nil {
		return err
	}
	for e, want := range entries {
		entryID := int64(e)
		for _, b := range l.writeSet(entryID) {
			got, err := s.readFrom(ctx, b, l, entryID)
			if err != nil {
				return fmt.Errorf("read back ledger %d entry %d: %w", ledgerID, entryID, err)
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("read back ledger %d entry %d: bookie %s returned %d bytes that differ from the %d written",
					ledgerID, entryID, b, len(got), len(want))
			}
		}
	}
	return nil
}
