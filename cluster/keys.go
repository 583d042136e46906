package cluster

// FirstEntryIndexKey is the default LedgerInfo property holding a ledger's first
// broker index (docs/formats.md §1.5). Every command takes another key with
// --index-key (KoP-derived code uses kafka.base.offset).
const FirstEntryIndexKey = "firstEntryIndex"

// MLIndexProperty is the managed-ledger property where the broker's index
// interceptor keeps its counter (ManagedLedgerInterceptorImpl.INDEX,
// docs/formats.md §1.2, §2).
const MLIndexProperty = "index"

// Custom metadata of Pulsar's ledgers: who owns a ledger (docs/formats.md §5.4, §6.2).
const (
	CustomComponent     = "component"
	CustomManagedLedger = "pulsar/managed-ledger" // the owning managed ledger's name
	CustomSchemaID      = "pulsar/schemaId"       // the owning schema key
	CustomCursor        = "pulsar/cursor"         // set on a cursor's ledger: the cursor name
	ComponentML         = "managed-ledger"
	ComponentSchema     = "schema"
)

// KeyFor returns key, or FirstEntryIndexKey when key is empty.
func KeyFor(key string) string {
	if key == "" {
		return FirstEntryIndexKey
	}
	return key
}
