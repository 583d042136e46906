package inspect

import (
	"context"
	"fmt"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// Finding kinds of a ledger store's replicas (store.ReplicaReporter: bookie
// dirs, live bookies): what the replicas of each entry say beyond "the entry is
// there". The kinds are the store's own (store/replicas.go).
const (
	KindUnderReplicated   = store.FindingUnderReplicated
	KindReplicaCorrupt    = store.FindingReplicaCorrupt
	KindReplicasDiffer    = store.FindingReplicasDiffer
	KindEntryLogDamaged   = store.FindingEntryLogDamaged
	KindJournalDamaged    = store.FindingJournalDamaged
	KindLastMarkDamaged   = store.FindingLastMarkDamaged
	KindBookieUnavailable = store.FindingBookieUnavailable
)

// replicaSeverity: a corrupt or differing replica is served from a good one, so
// the data is there but one copy is bad; damaged files hide entries.
var replicaSeverity = map[string]report.Severity{
	KindUnderReplicated:   report.SeverityWarning,
	KindReplicaCorrupt:    report.SeverityWarning,
	KindReplicasDiffer:    report.SeverityError,
	KindEntryLogDamaged:   report.SeverityWarning,
	KindJournalDamaged:    report.SeverityWarning,
	KindLastMarkDamaged:   report.SeverityWarning,
	KindBookieUnavailable: report.SeverityWarning,
}

// noBookieServedHint: every bookie of the write sets was down or refused, so the
// ledger's entries from there on were not read (a broker could not read them either).
const noBookieServedHint = "bring a bookie of the ledger's ensemble back (or check its address in the registry), then run check again"

var replicaHint = map[string]string{
	KindUnderReplicated:   "let the BookKeeper auditor re-replicate the ledger, or copy the missing bookie dir",
	KindReplicaCorrupt:    "the good replica is served; re-replicate the ledger so the bad copy is replaced",
	KindReplicasDiffer:    "replicas disagree although each digest verifies: compare them with inspect entries before trusting either",
	KindEntryLogDamaged:   "entries past the damage are read from other replicas where they exist",
	KindJournalDamaged:    "entries past the damage are read from other replicas where they exist",
	KindLastMarkDamaged:   "the whole journal is read instead of the part after lastMark",
	KindBookieUnavailable: "the entry was read from another bookie of its write set; bring the bookie back or let the auditor re-replicate",
}

// noGoodReplicaHint replaces replica-corrupt's hint when every replica is bad:
// then nothing is served.
const noGoodReplicaHint = "no replica verifies, so the entry is not served: copy a good replica from a bookie not given here, or restore the entry from a backup"

// ReplicaFindings is a check source for a ledger store read from bookie dirs:
// every replica problem the store found while indexing, as findings. Other ledger
// stores have none.
func ReplicaFindings(ctx context.Context, dd *datadir.DataDir) ([]report.Finding, error) {
	bs, ok := dd.Ledgers.(store.ReplicaReporter)
	if !ok {
		return nil, nil
	}
	rfs, err := bs.ReplicaFindings(ctx)
	if err != nil {
		return nil, fmt.Errorf("replica findings: %w", err)
	}
	out := make([]report.Finding, 0, len(rfs))
	for _, rf := range rfs {
		sev, ok := replicaSeverity[rf.Kind]
		if !ok {
			sev = report.SeverityWarning
		}
		loc := entryLoc(rf.LedgerID, rf.EntryID)
		if rf.LedgerID < 0 {
			loc = rf.File
		}
		msg := rf.Detail
		if rf.File != "" {
			msg = fmt.Sprintf("%s (%s offset %d)", rf.Detail, rf.File, rf.Offset)
		}
		hint := replicaHint[rf.Kind]
		switch {
		case rf.NoGoodReplica && rf.Kind == KindBookieUnavailable:
			// No bookie of the write set could serve: nothing was read from here on.
			sev, hint = report.SeverityError, noBookieServedHint
		case rf.NoGoodReplica:
			sev, hint = report.SeverityError, noGoodReplicaHint
			msg += "; no replica of this entry verifies"
		}
		f := report.Finding{Kind: rf.Kind, Severity: sev, Location: loc, Message: msg, Hint: hint}
		if rf.LedgerID >= 0 {
			f.LedgerID, f.EntryID = report.Int64(rf.LedgerID), report.Int64(rf.EntryID)
		}
		out = append(out, f)
	}
	return out, nil
}
