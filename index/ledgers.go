package index

import (
	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/store"
)

// ledgerRef is what the searches know about one ledger from metadata alone.
type ledgerRef = cluster.Ledger

// ledgerRefs lists the ledgers of a managed ledger in order, reading no entry
// (cluster.Ledgers).
func ledgerRefs(info *mlpb.ManagedLedgerInfo, ls store.LedgerStore, key string) ([]ledgerRef, error) {
	return cluster.Ledgers(info, ls, key)
}
