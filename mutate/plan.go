// Package mutate is the mutation engine: the only code that writes to a data dir
// after fixtures are generated. Features compute a Plan read-only; the engine runs it
// as plan → journal → apply → verify, and can undo a committed run.
//
// Every run is journaled in <data-dir>/journal/ before anything changes: the plan, the
// before-image of every node it touches and the run's epoch. A run that dies half-way
// is rolled back from its journal record by the next Recover, so the data dir always
// equals either the state before the run or the fully applied state, never a mixture.
package mutate

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ItemKind names what one plan item does.
type ItemKind string

const (
	// KindSet overwrites an existing node (compare-and-set against Expect).
	KindSet ItemKind = "set"
	// KindCreate creates a node that must not exist.
	KindCreate ItemKind = "create"
	// KindDelete deletes an existing node (compare-and-delete against Expect).
	KindDelete ItemKind = "delete"
	// KindLedger writes the entries of a new ledger; the ledger must have no entries yet.
	// Its /ledgers/... metadata node is a separate KindCreate item.
	KindLedger ItemKind = "ledger"
	// KindDropLedger removes every entry of a ledger; Entries must list them exactly
	// (they are the before-image). Undo uses it to remove ledgers a run created.
	KindDropLedger ItemKind = "drop-ledger"
	// KindBookieLedger puts a new ledger on live bookies (store.BookieWriter), in
	// BookKeeper's safe order: its metadata node Path created with Open (state
	// OPEN), Entries added to every bookie of their write sets, the node set to
	// After (CLOSED) by compare-and-set, every copy read back. Rolled back, and
	// undone, by deleting the node: bookies drop a ledger without one at their
	// next garbage collection.
	KindBookieLedger ItemKind = "bookie-ledger"
)

// LedgerEntry is one entry of a ledger item.
type LedgerEntry struct {
	EntryID int64  `json:"entryId"`
	Value   []byte `json:"value"`
}

// Item is one change of a plan.
type Item struct {
	Kind ItemKind `json:"kind"`
	// Path is the node path (set, create, delete).
	Path string `json:"path,omitempty"`
	// Expect is the node version read at plan time (set, delete); 0 for create.
	Expect uint64 `json:"expect,omitempty"`
	// Before is the node's bytes at plan time (set, delete). When nil the engine
	// fills it from the store; when given it must equal the store's bytes.
	Before []byte `json:"before,omitempty"`
	// After is the node's new bytes (set, create).
	After []byte `json:"after,omitempty"`
	// Open is a bookie-ledger item's metadata node as first created (OPEN).
	Open []byte `json:"open,omitempty"`
	// LedgerID and Entries describe a ledger item.
	LedgerID    int64         `json:"ledgerId,omitempty"`
	Entries     []LedgerEntry `json:"entries,omitempty"`
	Description string        `json:"description,omitempty"`
}

// Plan is the exact list of changes a feature wants, computed read-only. List a new
// ledger's entries before its metadata node: undo reverts items newest first. The
// engine writes in the order that is safe at every crash point whatever the item
// order: new ledgers' entries, then every node change in one atomic step, then
// ledger drops (see applyItems).
type Plan struct {
	RunID   string   // empty: the engine assigns NewRunID()
	Command string   // e.g. "schema repair"
	Args    []string // the command line, for the record
	// Flags are recorded in the journal (e.g. "allow-hash-mismatch": "true").
	Flags map[string]string
	Notes []string
	// CreatedAt is when the plan was computed; zero: the engine's clock at Apply.
	CreatedAt time.Time
	Items     []Item
}

// ErrInvalidPlan marks a plan the engine refuses to run as written.
var ErrInvalidPlan = errors.New("invalid plan")

// NewRunID returns a run id that sorts by time: UTC timestamp plus 4 random bytes.
func NewRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:])
}

// validRunID keeps run ids usable as file names.
func validRunID(id string) bool {
	if id == "" || len(id) > 128 || strings.HasPrefix(id, ".") {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_'
		if !ok {
			return false
		}
	}
	return true
}

// Validate checks the plan's shape: known kinds, the fields each kind needs, and no
// node path or ledger id touched twice.
func (p *Plan) Validate() error {
	if p.RunID != "" && !validRunID(p.RunID) {
		return fmt.Errorf("%w: run id %q: use letters, digits, '.', '-', '_'", ErrInvalidPlan, p.RunID)
	}
	if p.Command == "" {
		return fmt.Errorf("%w: no command", ErrInvalidPlan)
	}
	paths := make(map[string]int)
	ledgers := make(map[int64]int)
	for i, it := range p.Items {
		if err := it.validate(); err != nil {
			return fmt.Errorf("%w: item %d: %v", ErrInvalidPlan, i, err)
		}
		if it.isNode() || it.Kind == KindBookieLedger {
			if j, dup := paths[it.Path]; dup {
				return fmt.Errorf("%w: items %d and %d both touch node %s", ErrInvalidPlan, j, i, it.Path)
			}
			paths[it.Path] = i
			if it.isNode() {
				continue
			}
		}
		if j, dup := ledgers[it.LedgerID]; dup {
			return fmt.Errorf("%w: items %d and %d both touch ledger %d", ErrInvalidPlan, j, i, it.LedgerID)
		}
		ledgers[it.LedgerID] = i
	}
	return nil
}

func (it *Item) isNode() bool {
	return it.Kind == KindSet || it.Kind == KindCreate || it.Kind == KindDelete
}

func (it *Item) validate() error {
	switch it.Kind {
	case KindSet, KindCreate, KindDelete:
		if !strings.HasPrefix(it.Path, "/") {
			return fmt.Errorf("%s: node path %q must start with /", it.Kind, it.Path)
		}
		if it.LedgerID != 0 || it.Entries != nil {
			return fmt.Errorf("%s %s: node items carry no ledger entries", it.Kind, it.Path)
		}
	case KindLedger, KindDropLedger:
		if it.Path != "" || it.Before != nil || it.After != nil || it.Expect != 0 {
			return fmt.Errorf("%s %d: ledger items carry only a ledger id and entries", it.Kind, it.LedgerID)
		}
		if it.LedgerID < 0 {
			return fmt.Errorf("%s: negative ledger id %d", it.Kind, it.LedgerID)
		}
		seen := make(map[int64]bool, len(it.Entries))
		for _, e := range it.Entries {
			if e.EntryID < 0 || seen[e.EntryID] {
				return fmt.Errorf("%s %d: entry id %d negative or repeated", it.Kind, it.LedgerID, e.EntryID)
			}
			seen[e.EntryID] = true
		}
	case KindBookieLedger:
		if !strings.HasPrefix(it.Path, "/") || it.LedgerID < 0 || it.Expect != 0 || it.Before != nil ||
			len(it.Open) == 0 || len(it.After) == 0 {
			return fmt.Errorf("%s %d: needs its metadata node path, open and closed bytes, and no before-image", it.Kind, it.LedgerID)
		}
		for j, e := range it.Entries {
			if e.EntryID != int64(j) {
				return fmt.Errorf("%s %d: entry ids must be 0, 1, 2, ... (entry %d has id %d)", it.Kind, it.LedgerID, j, e.EntryID)
			}
		}
	default:
		return fmt.Errorf("unknown kind %q", it.Kind)
	}
	switch it.Kind {
	case KindSet:
		if it.Expect == 0 {
			return fmt.Errorf("set %s: no expected version", it.Path)
		}
	case KindCreate:
		if it.Expect != 0 || it.Before != nil {
			return fmt.Errorf("create %s: a new node has no expected version or before bytes", it.Path)
		}
	case KindDelete:
		if it.Expect == 0 || it.After != nil {
			return fmt.Errorf("delete %s: needs an expected version and no after bytes", it.Path)
		}
	}
	return nil
}

// target says what a node item leaves behind: whether the node exists and its bytes.
func (it *Item) target() (exists bool, value []byte) {
	if it.Kind == KindDelete {
		return false, nil
	}
	return true, it.After
}

// origin says what a node item found: whether the node existed and its bytes.
func (it *Item) origin() (exists bool, value []byte) {
	if it.Kind == KindCreate {
		return false, nil
	}
	return true, it.Before
}

// sameNode reports whether a node state (exists, value) equals the wanted one.
func sameNode(exists bool, value []byte, wantExists bool, want []byte) bool {
	return exists == wantExists && (!exists || bytes.Equal(value, want))
}

// label names an item in messages: "set /a/b" or "ledger 12".
func (it *Item) label() string {
	if it.isNode() {
		return string(it.Kind) + " " + it.Path
	}
	return fmt.Sprintf("%s %d", it.Kind, it.LedgerID)
}

// writes names what the item writes: its node, or its ledger.
func (it *Item) writes() string {
	if it.isNode() || it.Kind == KindBookieLedger {
		return "node " + it.Path
	}
	return fmt.Sprintf("ledger %d", it.LedgerID)
}

// NewLedgers lists, in order, the ledgers whose entries the items write.
func NewLedgers(items []Item) []int64 {
	var ids []int64
	for _, it := range items {
		if it.Kind == KindLedger {
			ids = append(ids, it.LedgerID)
		}
	}
	return ids
}

// LedgersNotOnBookies says where new ledgers' entries are, for a run that writes
// them to the data dir's ledger store (KindLedger; a run with --ledgers bk: writes
// KindBookieLedger items instead), while a broker reads every ledger from the
// bookies its /ledgers node names. "" when ids is empty.
func LedgersNotOnBookies(ids []int64) string {
	if len(ids) == 0 {
		return ""
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	return fmt.Sprintf("the entries of %d new ledger(s) (%s) go to the data dir's ledger store only: this run does not "+
		"write to bookies (runs with --ledgers bk: do), and brokers read a ledger from the bookies its /ledgers node names, so they cannot read "+
		"these ledgers until their entries are written to BookKeeper (docs/runbook-lost-schema-ledger.md, step 6)",
		len(ids), strings.Join(list, ", "))
}
