package formats

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// LedgersRoot is the BookKeeper metadata root Pulsar uses.
const LedgersRoot = "/ledgers"

// shortLedgerIDLimit is where BookKeeper's hierarchical ledger manager
// switches from the 2/4/4 (legacy) to the 3/4/4/4/4 (long) layout:
// StringUtils.getHybridHierarchicalLedgerPath uses the short form for
// ledgerId < Integer.MAX_VALUE.
const shortLedgerIDLimit = math.MaxInt32

// LedgerPath returns the metadata node of a ledger, e.g. 12 ->
// /ledgers/00/0000/L0012 and 2^31-1 -> /ledgers/000/0000/0021/4748/L3647.
// Ledger ids are never negative; for a negative id it returns "".
func LedgerPath(id int64) string {
	switch {
	case id < 0:
		return ""
	case id < shortLedgerIDLimit:
		s := fmt.Sprintf("%010d", id)
		return LedgersRoot + "/" + s[0:2] + "/" + s[2:6] + "/L" + s[6:10]
	default:
		s := fmt.Sprintf("%019d", id)
		return LedgersRoot + "/" + s[0:3] + "/" + s[3:7] + "/" + s[7:11] + "/" + s[11:15] + "/L" + s[15:19]
	}
}

// ParseLedgerPath returns the ledger id of a ledger node path. It accepts only
// the canonical path of an id (the one LedgerPath gives), so other nodes
// under /ledgers (LAYOUT, available, idgen, INSTANCEID, underreplication,
// the intermediate levels) are rejected with ErrNotLedgerPath.
func ParseLedgerPath(p string) (int64, error) {
	rest, ok := strings.CutPrefix(p, LedgersRoot+"/")
	if !ok {
		return 0, fmt.Errorf("%q: %w", p, ErrNotLedgerPath)
	}
	parts := strings.Split(rest, "/")
	var widths []int
	switch len(parts) {
	case 3:
		widths = []int{2, 4, 4}
	case 5:
		widths = []int{3, 4, 4, 4, 4}
	default:
		return 0, fmt.Errorf("%q: %w", p, ErrNotLedgerPath)
	}
	last := len(parts) - 1
	leaf, ok := strings.CutPrefix(parts[last], "L")
	if !ok {
		return 0, fmt.Errorf("%q: leaf lacks the L prefix: %w", p, ErrNotLedgerPath)
	}
	parts[last] = leaf
	var digits strings.Builder
	for i, part := range parts {
		if len(part) != widths[i] || !allDigits(part) {
			return 0, fmt.Errorf("%q: level %d is not %d digits: %w", p, i+1, widths[i], ErrNotLedgerPath)
		}
		digits.WriteString(part)
	}
	id, err := strconv.ParseInt(digits.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: ledger id out of range: %w", p, ErrNotLedgerPath)
	}
	if want := LedgerPath(id); want != p {
		return 0, fmt.Errorf("%q: ledger %d belongs at %s: %w", p, id, want, ErrNotLedgerPath)
	}
	return id, nil
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
