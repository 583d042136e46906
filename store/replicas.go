package store

import (
	"errors"
)

// ErrBadDigest: no replica of an entry has a digest that verifies.
var ErrBadDigest = errors.New("no replica's BookKeeper digest verifies")

// Replica finding kinds.
const (
	FindingUnderReplicated = "under-replicated"  // fewer replicas found than the write quorum
	FindingReplicaCorrupt  = "replica-corrupt"   // a replica whose digest does not verify
	FindingReplicasDiffer  = "replicas-differ"   // replicas whose digests verify but whose bytes differ
	FindingEntryLogDamaged = "entry-log-damaged" // an entry log cut short, bad framing, a foreign header
	FindingJournalDamaged  = "journal-damaged"   // a journal with a cut-short record or bad framing
	FindingLastMarkDamaged = "lastmark-damaged"  // ledgers/current/lastMark unreadable
	// live bookies: a bookie of an entry's write set that could not serve it
	// (down, slow, refused or answering garbage)
	FindingBookieUnavailable = "bookie-unavailable"
)

// ReplicaFinding is one problem with the replicas of an entry or with a bookie file.
// Offset is the byte offset in File: of the entry's bytes (after its size field,
// BookKeeper's location) for replica findings, of the bad field for damage.
type ReplicaFinding struct {
	Kind     string `json:"kind"`
	LedgerID int64  `json:"ledger_id"`
	EntryID  int64  `json:"entry_id"`
	Bookie   string `json:"bookie,omitempty"` // the bookie dir as given
	File     string `json:"file,omitempty"`
	Offset   int64  `json:"offset"`
	Detail   string `json:"detail"`
	// NoGoodReplica (replica-corrupt): no replica of the entry verifies, so none
	// is served and the entry is lost as far as these dirs tell.
	// (bookie-unavailable): no bookie of the write set could serve, so the
	// ledger was not read from EntryID on.
	NoGoodReplica bool `json:"no_good_replica,omitempty"`
}
