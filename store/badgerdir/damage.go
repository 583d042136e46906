package badgerdir

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ErrStoreDamaged: a file of a Badger database is damaged (a table that does not
// verify, a MANIFEST that does not replay or does not match the tables). Read-only
// opens read around the damage and report it in DataDir.Damage; writable opens
// refuse, so no repair writes into a store that is missing data.
var ErrStoreDamaged = errors.New("store damaged")

// Damage is one damaged file of a data dir's Badger databases, found when the dir
// was opened, and what the open did about it.
type Damage struct {
	DB      string `json:"db"`   // MetadataDirName or LedgersDirName
	File    string `json:"file"` // relative to the data dir, e.g. "metadata/000001.sst"
	TableID uint64 `json:"table_id,omitempty"`
	Problem string `json:"problem"`
	// RangeKnown says Smallest..Biggest (inclusive, user keys) bound the keys that
	// may be lost; when false, any key of DB may be lost or wrong.
	RangeKnown bool   `json:"range_known"`
	Smallest   []byte `json:"smallest,omitempty"`
	Biggest    []byte `json:"biggest,omitempty"`
	Keys       uint32 `json:"keys,omitempty"` // keys the table held, when its index was readable
	// Action is what the open did: the table left out, tables recovered from the directory, ...
	Action string `json:"action"`
}

// Covers reports whether key of the damaged database may be lost or wrong.
func (d Damage) Covers(key []byte) bool {
	if !d.RangeKnown {
		return true
	}
	return bytes.Compare(key, d.Smallest) >= 0 && bytes.Compare(key, d.Biggest) <= 0
}

// CoversLedger reports whether any entry of the ledger may be lost (ledger damage),
// or its /ledgers node (metadata damage, given the node path).
func (d Damage) CoversLedger(ledgerID int64, nodePath string) bool {
	if d.DB == MetadataDirName {
		return d.Covers([]byte(nodePath))
	}
	if !d.RangeKnown {
		return true
	}
	lo, hi := EntryKey(ledgerID, 0), EntryKey(ledgerID, -1)
	return bytes.Compare(hi, d.Smallest) >= 0 && bytes.Compare(lo, d.Biggest) <= 0
}

// KeyRange describes the lost keys for people: node paths, or ledger and entry ids.
func (d Damage) KeyRange() string {
	if !d.RangeKnown {
		return "key range unknown: any key of " + d.DB + "/ may be affected"
	}
	return describeKey(d.Smallest) + " .. " + describeKey(d.Biggest)
}

func (d Damage) String() string {
	s := fmt.Sprintf("%s: %s", d.File, d.Problem)
	if d.TableID != 0 {
		n := ""
		if d.Keys > 0 {
			n = fmt.Sprintf(", %d keys", d.Keys)
		}
		s += fmt.Sprintf(" (table %d, %s%s)", d.TableID, d.KeyRange(), n)
	}
	if d.Action != "" {
		s += "; " + d.Action
	}
	return s
}

// describeKey prints a ledger entry key as its ids, a printable key as text, other keys in hex.
func describeKey(k []byte) string {
	if len(k) == 17 && k[0] == entryKeyPrefix {
		return fmt.Sprintf("ledger %d entry %d", int64(binary.BigEndian.Uint64(k[1:])), int64(binary.BigEndian.Uint64(k[9:])))
	}
	if utf8.Valid(k) && bytes.IndexFunc(k, func(r rune) bool { return r < 0x20 }) < 0 {
		return strconv.Quote(string(k))
	}
	return fmt.Sprintf("%x", k)
}
