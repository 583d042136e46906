// Package inspect holds the read-only side of ledgermedic: views of a data dir
// (topics, ledgers, schemas, one node, a ledger's entries), each built once as a
// report.Table, and Check, the cross-layer consistency check whose findings
// (kind, severity, location, message, hint) drive `check`, its JSON and its exit
// code. Nothing here writes: every function takes a *datadir.DataDir that may be
// opened read-only, and inspection leaves the data dir byte-identical.
//
// Check reads every metadata node and every ledger entry once and keeps only a
// few words per ledger id, so its memory follows the number of ledgers, not of
// entries. Other features add findings through CheckOptions.Sources.
package inspect
