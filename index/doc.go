// Package index works with the broker entry index of indexed topics (docs/formats.md §1.5, §2):
// it back-fills the per-ledger firstEntryIndex property from each ledger's entry 0 and
// finds the entry that holds a given offset (or publish time) offline.
//
// The broker entry index counts messages: an entry's BrokerEntryMetadata.index is the
// 0-based offset of its LAST message, so its first message is index - batch size + 1.
// A ledger's firstEntryIndex is the first message of its entry 0; consecutive ledgers
// are continuous when a ledger's first index is the previous ledger's last index + 1.
//
// Nothing here writes the data dir: back-fill hands its plans to the mutation engine.
package index
