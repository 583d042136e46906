package bookkeeper

import (
	"fmt"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkdisk"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
)

// ledger is what reading a ledger needs from its BookKeeper metadata.
type ledger struct {
	id          int64
	digest      bkdisk.DigestType
	password    []byte
	writeQuorum int
	segments    []segment // ascending firstEntry
	open        bool      // OPEN or IN_RECOVERY: read up to the last add confirmed
	last        int64     // CLOSED: lastEntryId; open: the LAC the bookies report (-1: none)
}

type segment struct {
	first    int64
	ensemble []string // bookie ids
}

// ledgerPath is the metadata node of ledger id under root (formats.LedgerPath
// uses /ledgers).
func ledgerPath(root string, id int64) string {
	return root + strings.TrimPrefix(formats.LedgerPath(id), formats.LedgersRoot)
}

// parseLedgerPath is formats.ParseLedgerPath under root.
func parseLedgerPath(root, p string) (int64, error) {
	rest, ok := strings.CutPrefix(p, root+"/")
	if !ok {
		return 0, fmt.Errorf("%q: %w", p, formats.ErrNotLedgerPath)
	}
	return formats.ParseLedgerPath(formats.LedgersRoot + "/" + rest)
}

// newLedger checks the metadata as BookKeeper's client does before it reads
// (LedgerMetadataImpl): ensembles present, quorums that fit, a known digest.
func newLedger(id int64, md *bkpb.LedgerMetadataFormat) (*ledger, error) {
	l := &ledger{id: id, password: md.GetPassword(), writeQuorum: int(md.GetQuorumSize())}
	if md.DigestType == nil {
		// No digest type recorded (pre-4.2 metadata): upstream then takes the
		// client's configured type; Pulsar's default is CRC32C.
		l.digest = bkdisk.DigestCRC32C
	} else {
		l.digest = bkdisk.DigestType(md.GetDigestType().String())
	}
	if _, err := l.digest.Width(); err != nil {
		return nil, fmt.Errorf("ledger %d: %w", id, err)
	}
	e := int(md.GetEnsembleSize())
	if e <= 0 || l.writeQuorum <= 0 || l.writeQuorum > e {
		return nil, fmt.Errorf("ledger %d: ensemble %d, write quorum %d: not a readable layout", id, e, l.writeQuorum)
	}
	prev := int64(-1)
	for i, s := range md.GetSegment() {
		if len(s.GetEnsembleMember()) != e {
			return nil, fmt.Errorf("ledger %d: ensemble %d has %d bookies, want %d", id, i, len(s.GetEnsembleMember()), e)
		}
		if s.GetFirstEntryId() <= prev && i > 0 || s.GetFirstEntryId() < 0 {
			return nil, fmt.Errorf("ledger %d: ensemble %d starts at entry %d, after %d", id, i, s.GetFirstEntryId(), prev)
		}
		prev = s.GetFirstEntryId()
		l.segments = append(l.segments, segment{first: prev, ensemble: s.GetEnsembleMember()})
	}
	switch md.GetState() {
	case bkpb.LedgerMetadataFormat_CLOSED:
		l.last = md.GetLastEntryId()
		if md.LastEntryId == nil {
			l.last = -1
		}
	default:
		l.open, l.last = true, -1
	}
	if len(l.segments) == 0 && (l.open || l.last >= 0) {
		return nil, fmt.Errorf("ledger %d: no ensemble", id)
	}
	return l, nil
}

// writeSet is the bookies that hold entry e, in the order the client tries
// them: ensemble[(e+i) % E] for i < Qw of the ensemble in force at e
// (RoundRobinDistributionSchedule).
func (l *ledger) writeSet(e int64) []string {
	var ens []string
	for _, s := range l.segments {
		if s.first > e {
			break
		}
		ens = s.ensemble
	}
	n := int64(len(ens))
	if n == 0 {
		return nil
	}
	out := make([]string, 0, l.writeQuorum)
	for i := range int64(l.writeQuorum) {
		out = append(out, ens[(e+i)%n])
	}
	return out
}

// lastEnsemble is the ensemble an open ledger's writer is adding to.
func (l *ledger) lastEnsemble() []string {
	if len(l.segments) == 0 {
		return nil
	}
	return l.segments[len(l.segments)-1].ensemble
}

// verify checks a stored entry a bookie returned: the ids in its header and its
// digest (the bookie-dir reader's check, bkdisk.Verify), and returns the payload.
func (l *ledger) verify(body []byte, entryID int64) (bkdisk.Frame, error) {
	f, err := bkdisk.ParseFrame(body, l.digest)
	if err != nil {
		return f, err
	}
	if f.LedgerID != l.id || f.EntryID != entryID {
		return f, fmt.Errorf("%w: the entry is ledger %d entry %d", errBadEntry, f.LedgerID, f.EntryID)
	}
	if !bkdisk.Verify(body, l.digest, l.password) {
		return f, fmt.Errorf("%w: the %s digest does not match the bytes", errBadEntry, l.digest)
	}
	return f, nil
}
