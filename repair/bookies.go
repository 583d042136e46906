package repair

import (
	"context"
	"errors"
	"fmt"
	"github.com/ledgermedic/ledgermedic/datadir"
	"slices"
	"strings"
	"time"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
)

// Pulsar's defaults for a schema ledger when no sibling schema ledger is left:
// managedLedgerDefaultEnsembleSize/WriteQuorum/AckQuorum and
// managedLedgerDigestType (broker.conf; BookkeeperSchemaStorage uses them).
const (
	pulsarEnsemble    = 2
	pulsarWriteQuorum = 2
	pulsarAckQuorum   = 2
)

// Quorums are the sizes of new ledgers on live bookies the user asked for (0:
// not given: the sibling's, else Pulsar's default).
type Quorums struct{ Ensemble, Write, Ack int }

// ErrBadQuorums: sizes no BookKeeper client accepts (1 <= ack <= write <= ensemble).
var ErrBadQuorums = errors.New("bad ensemble/quorum sizes")

// Set says whether any size was given.
func (q Quorums) Set() bool { return q.Ensemble != 0 || q.Write != 0 || q.Ack != 0 }

// Check refuses negative sizes and, among those given, any that do not nest.
func (q Quorums) Check() error {
	if q.Ensemble < 0 || q.Write < 0 || q.Ack < 0 || q.Ensemble > 64 {
		return fmt.Errorf("%w: ensemble %d, write quorum %d, ack quorum %d", ErrBadQuorums, q.Ensemble, q.Write, q.Ack)
	}
	if q.Write > 0 && q.Ensemble > 0 && q.Write > q.Ensemble || q.Ack > 0 && q.Write > 0 && q.Ack > q.Write ||
		q.Ack > 0 && q.Ensemble > 0 && q.Ack > q.Ensemble {
		return fmt.Errorf("%w: ensemble %d, write quorum %d, ack quorum %d: want ack <= write <= ensemble", ErrBadQuorums,
			q.Ensemble, q.Write, q.Ack)
	}
	return nil
}

// apply overrides e/w/a with the sizes given and checks the result nests.
func (q Quorums) apply(e, w, a int32) (int32, int32, int32, error) {
	if q.Ensemble > 0 {
		e = int32(q.Ensemble)
	}
	if q.Write > 0 {
		w = int32(q.Write)
	}
	if q.Ack > 0 {
		a = int32(q.Ack)
	}
	if a < 1 || a > w || w > e {
		return 0, 0, 0, fmt.Errorf("%w: ensemble %d, write quorum %d, ack quorum %d (the sibling's sizes with the flags given): "+
			"want 1 <= ack <= write <= ensemble", ErrBadQuorums, e, w, a)
	}
	return e, w, a, nil
}

// liveBookies is how new ledgers reach a live cluster's bookies (--ledgers bk:):
// each restored version becomes one mutate.KindBookieLedger item, which the
// engine writes in BookKeeper's safe order.
type liveBookies struct {
	ctx      context.Context
	bw       store.BookieWriter
	quorums  Quorums
	takeIDs  bool     // --apply: ids from the cluster's generator; dry run: placeholders
	writable []string // the registry's writable bookies, sorted
	next     int      // where the next ensemble starts in writable
	used     map[string]bool
}

// newLiveBookies returns nil when the ledger store is not a live cluster's.
func newLiveBookies(ctx context.Context, dd *datadir.DataDir, takeIDs bool, q Quorums) (*liveBookies, error) {
	bw, ok := dd.Ledgers.(store.BookieWriter)
	if !ok {
		return nil, nil
	}
	writable, err := bw.WritableBookies(ctx)
	if err != nil {
		return nil, err
	}
	return &liveBookies{ctx: ctx, bw: bw, takeIDs: takeIDs, quorums: q, writable: writable, used: map[string]bool{}}, nil
}

// ensemble picks n writable bookies: the sibling's own first when they are
// still writable (the placement Pulsar chose), then the others in turn.
func (l *liveBookies) ensemble(n int, prefer []string) ([]string, error) {
	if len(l.writable) < n {
		return nil, fmt.Errorf("bk: %d writable bookie(s) registered (%s), a new ledger needs an ensemble of %d",
			len(l.writable), strings.Join(l.writable, ", "), n)
	}
	var out []string
	for _, b := range prefer {
		if len(out) < n && slices.Contains(l.writable, b) && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	for i := 0; len(out) < n; i++ {
		b := l.writable[(l.next+i)%len(l.writable)]
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	l.next = (l.next + 1) % len(l.writable)
	for _, b := range out {
		l.used[b] = true
	}
	return out, nil
}

// ledgerItems are the items that write one restored schema ledger holding
// entry as entry 0: on live bookies one bookie-ledger item; else the entry in
// the data dir's ledger store and the ledger's /ledgers node.
func (u *ledgerUniverse) ledgerItems(key string, id int64, entry []byte, what string, now time.Time) ([]mutate.Item, error) {
	if u.live == nil {
		mdBytes, err := formats.EncodeLedgerMetadata(u.newSchemaLedgerMetadata(key, int64(len(entry)), now.UnixMilli()))
		if err != nil {
			return nil, err
		}
		return []mutate.Item{
			{Kind: mutate.KindLedger, LedgerID: id,
				Entries: []mutate.LedgerEntry{{EntryID: 0, Value: entry}}, Description: what + ": entry 0 (SchemaEntry)"},
			{Kind: mutate.KindCreate, Path: formats.LedgerPath(id), After: mdBytes,
				Description: what + fmt.Sprintf(": ledger %d metadata", id)},
		}, nil
	}
	closed, err := u.liveSchemaLedgerMetadata(key, int64(len(entry)), now.UnixMilli())
	if err != nil {
		return nil, err
	}
	open := formats.OpenedLedgerMetadata(closed)
	openBytes, err := formats.EncodeLedgerMetadata(open)
	if err != nil {
		return nil, err
	}
	closedBytes, err := formats.EncodeLedgerMetadata(closed)
	if err != nil {
		return nil, err
	}
	return []mutate.Item{{Kind: mutate.KindBookieLedger, LedgerID: id, Path: u.live.bw.LedgerNode(id),
		Open: openBytes, After: closedBytes, Entries: []mutate.LedgerEntry{{EntryID: 0, Value: entry}},
		Description: fmt.Sprintf("%s: ledger %d on bookies %s (%d/%d/%d %s): created OPEN, entry 0 (SchemaEntry, %d bytes) "+
			"added to each, closed, read back", what, id, strings.Join(open.GetSegment()[0].GetEnsembleMember(), ", "),
			open.GetEnsembleSize(), open.GetQuorumSize(), open.GetAckQuorumSize(), open.GetDigestType(), len(entry))}}, nil
}

// liveSchemaLedgerMetadata is the CLOSED metadata of a restored schema ledger on
// live bookies: sizes and digest from the newest schema ledger (its sibling),
// else Pulsar's defaults (2/2/2, CRC32C); the ensemble from the registry's
// writable bookies; the empty password and the custom metadata
// BookkeeperSchemaStorage writes.
func (u *ledgerUniverse) liveSchemaLedgerMetadata(key string, length, ctimeMillis int64) (*bkpb.LedgerMetadataFormat, error) {
	ensemble, write, ack := int32(pulsarEnsemble), int32(pulsarWriteQuorum), int32(pulsarAckQuorum)
	digest := bkpb.LedgerMetadataFormat_CRC32C
	var prefer []string
	if t := u.Template; t != nil && u.templateIsSchema {
		if t.DigestType != nil {
			digest = t.GetDigestType()
		}
		if t.GetEnsembleSize() > 0 {
			ensemble = t.GetEnsembleSize()
		}
		write = clampQuorum(t.GetQuorumSize(), ensemble)
		ack = t.GetAckQuorumSize()
		if ack <= 0 {
			ack = write
		}
		ack = clampQuorum(ack, write)
		if segs := t.GetSegment(); len(segs) > 0 {
			prefer = segs[len(segs)-1].GetEnsembleMember()
		}
	}
	ensemble, write, ack, err := u.live.quorums.apply(ensemble, write, ack)
	if err != nil {
		return nil, err
	}
	members, err := u.live.ensemble(int(ensemble), prefer)
	if err != nil {
		return nil, err
	}
	return schemaLedgerMetadata(key, members, ensemble, write, ack, digest, length, ctimeMillis), nil
}

// liveNotes say where the new ledgers go and where their ids come from.
func (l *liveBookies) notes() []string {
	var used []string
	for b := range l.used {
		used = append(used, b)
	}
	slices.Sort(used)
	out := []string{fmt.Sprintf("new ledgers are written to live bookies (%s) in BookKeeper's safe order: metadata node "+
		"created OPEN, entry 0 added to every bookie of the write set (each must answer), node closed by compare-and-set, "+
		"every copy read back; only then the locators are repointed", strings.Join(used, ", "))}
	if l.takeIDs {
		out = append(out, "new ledger ids come from the cluster's own id generator (idgen under the ledgers root)")
	} else {
		out = append(out, "dry run: the new ledger ids shown are placeholders; --apply takes each from the cluster's "+
			"own id generator (idgen under the ledgers root)")
	}
	return out
}
