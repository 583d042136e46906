package inspect

import (
	"fmt"

	"github.com/ledgermedic/ledgermedic/report"
)

// Finding kinds reported by Check. Each is one value; its severity is fixed.
const (
	// A schema version whose ledger has neither a node nor entries.
	KindSchemaLedgerLost = "schema-ledger-lost"
	// A schema version whose ledger node exists but whose entry is gone.
	KindSchemaEntryLost = "schema-entry-lost"
	// A schema version whose stored entry does not decode as SchemaEntry/SchemaInfo.
	KindSchemaEntryUndecodable = "schema-entry-undecodable"
	// A schema version whose stored definition does not hash to the locator's hash.
	KindSchemaHashMismatch = "schema-hash-mismatch"
	// A LedgerInfo naming a ledger that has neither a node nor entries (and is not offloaded).
	KindLedgerMissing = "ledger-missing"
	// A ledger node whose ledger has no entries although its metadata says it has.
	KindLedgerNodeWithoutEntries = "ledger-node-without-entries"
	// A closed ledger holding fewer entries than its metadata's lastEntryId says.
	KindLedgerEntriesMissing = "ledger-entries-missing"
	// Entries of a ledger that has no node.
	KindEntriesWithoutNode = "entries-without-node"
	// A schema or managed-ledger ledger (by custom metadata) that nothing references.
	KindOrphanLedger = "orphan-ledger"
	// A topic entry whose CRC32C does not match its bytes.
	KindEntryCRCMismatch = "entry-crc-mismatch"
	// A topic entry whose frame does not parse.
	KindEntryUndecodable = "entry-undecodable"
	// A managed-ledger, cursor, schema locator or ledger metadata node that does not decode.
	KindNodeUndecodable = "node-undecodable"
	// A value the store could not read in full (damaged value log): data lost at that key.
	KindValueTruncated = "value-truncated"
	// LedgerInfos without firstEntryIndex on an indexed topic (one finding per topic).
	KindFirstEntryIndexMissing = "first-entry-index-missing"

	// Live bookies only (a store.ReplicaProber ledger store, --ledgers bk:):
	// a ledger whose metadata exists but that no bookie asked holds.
	KindLedgerNotOnBookies = "ledger-not-on-bookies"
	// An OPEN (or IN_RECOVERY) ledger that is not the last ledger of a managed
	// ledger nor a cursor's: maybe left by a crashed writer.
	KindLedgerOpen = "ledger-open"
	// A schema ledger nothing references, as concurrent first puts of a schema
	// left them in Pulsar releases before the fix: expected, not a problem.
	KindOrphanSchemaLedger = "orphan-schema-ledger"
)

// Severities are fixed per kind, so JSON consumers can rely on them. Check and
// SchemaUsage share this one table.
var kindSeverity = map[string]report.Severity{
	KindSchemaLedgerLost:         report.SeverityError,
	KindSchemaEntryLost:          report.SeverityError,
	KindSchemaEntryUndecodable:   report.SeverityError,
	KindSchemaHashMismatch:       report.SeverityError,
	KindLedgerMissing:            report.SeverityError,
	KindLedgerNodeWithoutEntries: report.SeverityError,
	KindLedgerEntriesMissing:     report.SeverityError,
	KindEntriesWithoutNode:       report.SeverityWarning,
	KindOrphanLedger:             report.SeverityWarning,
	KindEntryCRCMismatch:         report.SeverityError,
	KindEntryUndecodable:         report.SeverityError,
	KindNodeUndecodable:          report.SeverityError,
	KindValueTruncated:           report.SeverityError,
	KindFirstEntryIndexMissing:   report.SeverityInfo,
	KindLedgerNotOnBookies:       report.SeverityError,
	KindLedgerOpen:               report.SeverityWarning,
	KindOrphanSchemaLedger:       report.SeverityInfo,
	KindUsedSchemaVersionLost:    report.SeverityError,
	KindUsedSchemaVersionMissing: report.SeverityError,
	KindSchemaRefUnchecked:       report.SeverityInfo,
	KindBadEntriesNotListed:      report.SeverityError,
	KindStoreDamaged:             report.SeverityError,
	// schema version collisions (inspect/collision.go)
	KindSchemaVersionCollision: report.SeverityError,
}

// Kinds lists every finding kind Check can report (with the schema-usage scan),
// for documentation and tests.
func Kinds() []string {
	return []string{
		KindSchemaLedgerLost, KindSchemaEntryLost, KindSchemaEntryUndecodable, KindSchemaHashMismatch,
		KindLedgerMissing, KindLedgerNodeWithoutEntries, KindLedgerEntriesMissing, KindEntriesWithoutNode,
		KindOrphanLedger, KindEntryCRCMismatch, KindEntryUndecodable, KindNodeUndecodable,
		KindValueTruncated, KindFirstEntryIndexMissing,
		KindLedgerNotOnBookies, KindLedgerOpen, KindOrphanSchemaLedger,
		KindUsedSchemaVersionLost, KindUsedSchemaVersionMissing, KindSchemaRefUnchecked, KindBadEntriesNotListed,
		KindStoreDamaged,
		KindSchemaVersionCollision,
	}
}

func newFinding(kind, location, hint, format string, args ...any) report.Finding {
	sev, ok := kindSeverity[kind]
	if !ok {
		sev = report.SeverityError
	}
	return report.Finding{Kind: kind, Severity: sev, Location: location, Message: fmt.Sprintf(format, args...), Hint: hint}
}

func ledgerLoc(id int64) string { return fmt.Sprintf("ledger %d", id) }

func entryLoc(ledgerID, entryID int64) string {
	return fmt.Sprintf("ledger %d entry %d", ledgerID, entryID)
}

func schemaLoc(key string, version int64) string {
	return fmt.Sprintf("schema %s version %d", key, version)
}

// schemaRepairHint is the command that restores a topic's lost schema versions.
// Repair needs the schemas from somewhere (--from is required to resolve any):
// schemas.jsonl is the capture file the README and the runbook name.
func schemaRepairHint(topic string) string {
	return "ledgermedic schema repair --from schemas.jsonl --topic " + topic +
		" (schemas.jsonl: your schema capture or pulsar-admin export)"
}
