package badgerdir

import (
	"encoding/binary"
	"fmt"
)

// entryKeyPrefix starts every key of the ledger store (docs/formats.md §7).
const entryKeyPrefix = 'e'

// entryKeyLen is 'e' | ledgerId (8 bytes BE) | entryId (8 bytes BE).
const entryKeyLen = 17

// EntryKey returns the ledger-store key of one entry.
func EntryKey(ledgerID, entryID int64) []byte {
	return appendEntryKey(make([]byte, 0, entryKeyLen), ledgerID, entryID)
}

// appendEntryKey appends the ledger-store key of one entry to k.
func appendEntryKey(k []byte, ledgerID, entryID int64) []byte {
	k = append(k, entryKeyPrefix)
	k = binary.BigEndian.AppendUint64(k, uint64(ledgerID))
	return binary.BigEndian.AppendUint64(k, uint64(entryID))
}

// ledgerKeyPrefix returns the key prefix shared by every entry of one ledger.
func ledgerKeyPrefix(ledgerID int64) []byte {
	return EntryKey(ledgerID, 0)[:9]
}

// ParseEntryKey decodes a ledger-store key made by EntryKey.
func ParseEntryKey(k []byte) (ledgerID, entryID int64, err error) {
	if len(k) != entryKeyLen {
		return 0, 0, fmt.Errorf("ledger store key %x: %d bytes, want %d", k, len(k), entryKeyLen)
	}
	if k[0] != entryKeyPrefix {
		return 0, 0, fmt.Errorf("ledger store key %x: prefix byte %#x, want 'e'", k, k[0])
	}
	return int64(binary.BigEndian.Uint64(k[1:9])), int64(binary.BigEndian.Uint64(k[9:17])), nil
}
