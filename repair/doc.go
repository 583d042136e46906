// Package repair restores lost schema versions (docs/formats.md §5).
//
// When a schema ledger is lost, Pulsar deletes the topic's whole schema history (or,
// with schemaLedgerForceRecovery, lets clients attach without a schema). This package
// instead rebuilds each lost version: Capture exports every readable version of every
// schema key as JSON Lines; LoadCandidates reads those captures and what pulsar-admin
// prints; Plan proves each candidate by the SHA-256 the locator holds for the version,
// allocates a fresh ledger id, and builds a mutate.Plan that writes the new ledger
// (entry 0 and its /ledgers/... node) and repoints the locator. Only the mutation
// engine writes.
package repair
