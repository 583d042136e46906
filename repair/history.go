package repair

// Rebuilding a deleted or unreadable schema history, and version collisions.
// With autoSkipNonRecoverableData a broker that cannot read a schema
// ledger deletes the whole history (Pulsar's schema storage): the locator and every
// version are gone while stored messages keep their version numbers. A capture
// taken before holds every version; Plan rebuilds the history from it when the
// capture covers every version stored messages use. When a new history was
// started since (a producer registered a new version 0), old and new messages
// carry the same numbers for different schemas: a collision, which repair does
// not resolve without --resolve-collision.

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
)

// Collision resolutions (Options.ResolveCollision).
const (
	// ResolveOld rebuilds the captured (old) history over the current one.
	ResolveOld = "old"
	// ResolveNew keeps the current (new) history as it is.
	ResolveNew = "new"
)

// States of a schema key whose history is rebuilt or collides.
const (
	// StateNoLocator: the key's locator node is gone (the broker deleted the history).
	StateNoLocator State = "no-locator"
	// StateLocatorUndecodable: the locator node exists but does not decode.
	StateLocatorUndecodable State = "locator-undecodable"
	// StateCollision: the locator holds another schema than the capture for this version.
	StateCollision State = "collision"
)

// Actions of history repairs.
const (
	// ActionRebuild writes the captured version into a new ledger of a rebuilt history.
	ActionRebuild Action = "rebuild"
	// ActionKeepCurrent leaves a colliding version as the current history has it (--resolve-collision new).
	ActionKeepCurrent Action = "keep-current"
	// ActionReplaced: a lost version of a history that is replaced by a rebuilt one.
	ActionReplaced Action = "replaced-by-rebuild"
)

// MessageSpan is the stored messages of one schema version in one span of time.
type MessageSpan struct {
	Messages, Entries             int64
	First, Last                   cluster.Position // entries with the lowest and highest publish time
	FirstPublishMs, LastPublishMs int64
}

func (s MessageSpan) String() string {
	if s.Entries == 0 {
		return "no messages"
	}
	return fmt.Sprintf("%d messages in %d entries (ledger:entry %s to %s, published %s to %s)", s.Messages, s.Entries,
		s.First, s.Last, msTime(s.FirstPublishMs), msTime(s.LastPublishMs))
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// VersionUse is the stored messages of a topic that carry one registry version:
// Before are those published before the split time asked for (an older
// history's), After the others (all of them without a split time).
type VersionUse struct {
	Version int64
	Before  MessageSpan
	After   MessageSpan
}

// Messages counts every stored message using the version.
func (u VersionUse) Messages() int64 { return u.Before.Messages + u.After.Messages }

// MessageScan reads the stored messages of a schema key's topic (all
// partitions) and returns the registry versions they use, ascending, split per
// version at splitMs[version]. topicExists is false when the topic has no
// managed ledger. The app wires it to inspect.SplitVersionUsage.
type MessageScan func(ctx context.Context, schemaKey string, splitMs map[int64]int64) (uses []VersionUse, topicExists bool, err error)

// Collision is a schema key whose current history holds other schemas than the
// capture under the same version numbers.
type Collision struct {
	SchemaKey   string
	LocatorPath string
	Resolution  string // "", ResolveOld or ResolveNew
	Versions    []CollidingVersion
}

// CollidingVersion is one version number two histories use for different schemas.
type CollidingVersion struct {
	Version      int64
	CurrentHash  []byte // the locator's
	CapturedHash []byte // the capture's (empty for a tombstone)
	// RegisteredMs is the current version's SchemaInfo timestamp, -1 when unreadable.
	RegisteredMs int64
	// Old: stored messages published before RegisteredMs (the captured history's);
	// New: the others (the current history's).
	Old, New MessageSpan
}

// capturedVersions are the capture records of one schema key, by version.
type capturedVersions map[int64][]*Candidate

// capturesByKey groups the capture records by schema key (only keyFilter's when set).
func capturesByKey(cands []Candidate, keyFilter string) map[string]capturedVersions {
	out := map[string]capturedVersions{}
	for i := range cands {
		c := &cands[i]
		if c.Format != FormatCapture || c.SchemaKey == "" || !c.HasVersion || (keyFilter != "" && c.SchemaKey != keyFilter) {
			continue
		}
		if out[c.SchemaKey] == nil {
			out[c.SchemaKey] = capturedVersions{}
		}
		out[c.SchemaKey][c.Version] = append(out[c.SchemaKey][c.Version], c)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// locatorHash is the hash a locator holds for a captured version: the SHA-256 of
// the definition, empty for a tombstone.
func locatorHash(c *Candidate) []byte {
	if c.Deleted {
		return []byte{}
	}
	return formats.SchemaHash(primary(c))
}

// rebuild is one schema key whose whole history is written anew from a capture.
type rebuild struct {
	key, path string
	state     State
	expect    uint64 // the locator node's version; 0 when it does not exist
	before    []byte
	versions  []int        // indexes into RepairPlan.Versions, ascending version 0..n
	used      []*Candidate // every capture record it rests on
}

// historyWork is what planHistories decided.
type historyWork struct {
	rebuilds []*rebuild
	// blocked keys get no normal repair: they are rebuilt, or their collision is unresolved.
	blocked map[string]string
	rebuilt map[string]bool
}

// planHistories looks at every schema key the captures name: keys whose
// locator is gone or undecodable are rebuilt; keys whose locator holds other
// schemas than the capture are collisions.
func planHistories(ctx context.Context, dd *datadir.DataDir, captured map[string]capturedVersions, current map[string]*keyWork,
	damaged map[string]*locatorView, opts Options, rp *RepairPlan) (*historyWork, error) {
	hw := &historyWork{blocked: map[string]string{}, rebuilt: map[string]bool{}}
	for _, key := range sortedKeys(captured) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		caps := captured[key]
		path := formats.SchemasRoot + "/" + key
		switch {
		case damaged[key] != nil:
			lv := damaged[key]
			rb, err := planRebuild(ctx, key, path, StateLocatorUndecodable, lv.Version, lv.Value, caps, nil, opts, rp)
			if err != nil {
				return nil, err
			}
			hw.add(rb, key)
		case current[key] != nil:
			if err := planCollision(ctx, current[key], caps, opts, rp, hw); err != nil {
				return nil, err
			}
		default:
			_, err := dd.Metadata.Get(path)
			switch {
			case err == nil:
				continue // appeared since the scan; the next run sees it
			case errors.Is(err, store.ErrTruncatedValue):
				rp.Versions = append(rp.Versions, VersionRepair{SchemaKey: key, LocatorPath: path, Version: -1,
					State: StateLocatorUndecodable, Action: ActionUnresolved, HashMatch: HashMatchNone,
					Reason: fmt.Sprintf("the locator's value cannot be read (%v): restore the node from a backup first", err)})
				continue
			case !errors.Is(err, store.ErrNotFound):
				return nil, fmt.Errorf("schema locator %s: %w", path, err)
			}
			rb, err := planRebuild(ctx, key, path, StateNoLocator, 0, nil, caps, nil, opts, rp)
			if err != nil {
				return nil, err
			}
			hw.add(rb, key)
		}
	}
	return hw, nil
}

func (hw *historyWork) add(rb *rebuild, key string) {
	if rb != nil {
		hw.rebuilds = append(hw.rebuilds, rb)
		hw.blocked[key] = "the history is rebuilt from the capture"
		hw.rebuilt[key] = true
	}
}

// planCollision compares the readable versions of a locator with the capture
// of its key.
func planCollision(ctx context.Context, kw *keyWork, caps capturedVersions, opts Options, rp *RepairPlan, hw *historyWork) error {
	key := kw.lv.Key
	var clashing []int64
	for _, ie := range locatorVersions(kw.lv.Locator) {
		cs := caps[ie.GetVersion()]
		// Only a readable version can collide: for a lost one, a capture that
		// hashes differently is a refused candidate (--allow-hash-mismatch).
		if len(cs) == 0 || kw.stored[ie.GetVersion()].Info == nil {
			continue
		}
		if !bytes.Equal(locatorHash(cs[0]), ie.GetHash()) {
			clashing = append(clashing, ie.GetVersion())
		}
	}
	if len(clashing) == 0 {
		return nil
	}
	col := Collision{SchemaKey: key, LocatorPath: kw.lv.Path, Resolution: opts.ResolveCollision}
	split := map[int64]int64{}
	for v, sv := range kw.stored {
		if sv.Info != nil && sv.Info.Timestamp != nil {
			split[v] = sv.Info.GetTimestamp()
		}
	}
	uses := map[int64]VersionUse{}
	if opts.Scan != nil {
		us, _, err := opts.Scan(ctx, key, split)
		if err != nil {
			return fmt.Errorf("schema %s: scan stored messages: %w", key, err)
		}
		for _, u := range us {
			uses[u.Version] = u
		}
	}
	for _, v := range clashing {
		cv := CollidingVersion{Version: v, CapturedHash: locatorHash(caps[v][0]), RegisteredMs: -1,
			Old: uses[v].Before, New: uses[v].After}
		for _, ie := range locatorVersions(kw.lv.Locator) {
			if ie.GetVersion() == v {
				cv.CurrentHash = ie.GetHash()
			}
		}
		if ts, ok := split[v]; ok {
			cv.RegisteredMs = ts
		}
		col.Versions = append(col.Versions, cv)
	}
	rp.Collisions = append(rp.Collisions, col)
	switch opts.ResolveCollision {
	case ResolveNew:
		for _, cv := range col.Versions {
			rp.Versions = append(rp.Versions, VersionRepair{SchemaKey: key, LocatorPath: kw.lv.Path, Version: cv.Version,
				Hash: cv.CurrentHash, State: StateCollision, Action: ActionKeepCurrent, HashMatch: HashMatchNone,
				Source: "current history (--resolve-collision new)",
				Notes:  []string{fmt.Sprintf("old-history messages that consumers will read with the current schema: %s", cv.Old)}})
		}
		return nil
	case ResolveOld:
		rb, err := planRebuild(ctx, key, kw.lv.Path, StateCollision, kw.lv.Version, kw.lv.Value, caps, uses, opts, rp)
		if err != nil {
			return err
		}
		hw.add(rb, key)
		if rb == nil {
			hw.blocked[key] = "the captured history cannot be rebuilt (see its rows)"
			return nil
		}
		var ledgers []string
		for _, ie := range locatorVersions(kw.lv.Locator) {
			ledgers = append(ledgers, strconv.FormatInt(ie.GetPosition().GetLedgerId(), 10))
		}
		var newMsgs int64
		for _, cv := range col.Versions {
			newMsgs += cv.New.Messages
		}
		rp.Notes = append(rp.Notes, fmt.Sprintf("schema %s: --resolve-collision old: the current history's ledgers %s are left "+
			"in place, orphaned (check lists them); its %d stored messages using colliding versions will be read with the "+
			"captured schemas; producers of the current schema register it again as a new version", key,
			strings.Join(ledgers, ", "), newMsgs))
		return nil
	}
	for _, cv := range col.Versions {
		rp.Versions = append(rp.Versions, VersionRepair{SchemaKey: key, LocatorPath: kw.lv.Path, Version: cv.Version,
			Hash: cv.CurrentHash, State: StateCollision, Action: ActionUnresolved, HashMatch: HashMatchNone,
			Reason: fmt.Sprintf("version %d is another schema in the current history (sha256 %s) than in the capture (sha256 %s): "+
				"old history: %s; new history: %s; choose --resolve-collision old|new (docs/runbook-lost-schema-ledger.md)",
				cv.Version, hex.EncodeToString(cv.CurrentHash), hex.EncodeToString(cv.CapturedHash), cv.Old, cv.New)})
	}
	hw.blocked[key] = "its version collision is unresolved"
	rp.UnresolvedCollisions++
	return nil
}

// planRebuild checks that the capture can rebuild key's history and returns
// the rebuild, or nil after adding unresolved rows that name what is missing.
// uses, when nil, is read with opts.Scan.
func planRebuild(ctx context.Context, key, path string, state State, expect uint64, before []byte, caps capturedVersions,
	uses map[int64]VersionUse, opts Options, rp *RepairPlan) (*rebuild, error) {
	if uses == nil {
		if opts.Scan == nil {
			rp.Versions = append(rp.Versions, VersionRepair{SchemaKey: key, LocatorPath: path, Version: -1, State: state,
				Action: ActionUnresolved, HashMatch: HashMatchNone,
				Reason: "cannot tell which versions stored messages use (no message scan): not rebuilt"})
			return nil, nil
		}
		us, exists, err := opts.Scan(ctx, key, nil)
		if err != nil {
			return nil, fmt.Errorf("schema %s: scan stored messages: %w", key, err)
		}
		if !exists && state == StateNoLocator {
			rp.Notes = append(rp.Notes, fmt.Sprintf("schema %s: the capture holds it but the topic has no managed ledger "+
				"(the topic was deleted?): not rebuilt", key))
			return nil, nil
		}
		uses = map[int64]VersionUse{}
		for _, u := range us {
			uses[u.Version] = u
		}
	}
	unresolved := func(v int64, format string, args ...any) {
		vr := VersionRepair{SchemaKey: key, LocatorPath: path, Version: v, State: state, Action: ActionUnresolved,
			HashMatch: HashMatchNone, Reason: fmt.Sprintf(format, args...)}
		if u, ok := uses[v]; ok {
			vr.Messages, vr.MessagesKnown = u.Messages(), true
		}
		rp.Versions = append(rp.Versions, vr)
	}
	top := int64(-1)
	for v := range caps {
		top = max(top, v)
	}
	for v := range uses {
		top = max(top, v)
	}
	var rows []*VersionRepair
	refused := false
	for v := int64(0); v <= top; v++ {
		cs := caps[v]
		u, used := uses[v]
		switch {
		case len(cs) == 0 && used:
			unresolved(v, "%s: stored messages use version %d (%s) but the capture lacks it: not rebuilt; "+
				"find a capture that holds it", state, v, u.After)
			refused = true
			continue
		case len(cs) == 0:
			unresolved(v, "%s: the capture lacks version %d (it holds versions %s): a history must hold every version "+
				"from 0, not rebuilt", state, v, versionList(caps))
			refused = true
			continue
		}
		c := cs[0]
		if why := captureProblem(cs); why != "" {
			unresolved(v, "%s: version %d: %s: not rebuilt", state, v, why)
			refused = true
			continue
		}
		vr := &VersionRepair{SchemaKey: key, LocatorPath: path, Version: v, Hash: locatorHash(c), OldLedgerID: c.LedgerID,
			OldEntryID: 0, State: state, Action: ActionRebuild, Source: c.Source, HashMatch: HashMatchYes,
			Info: c.schemaInfo(key, primary(c))}
		if c.Deleted {
			vr.HashMatch = HashMatchNA
		}
		if used {
			vr.Messages, vr.MessagesKnown = u.Messages(), true
		}
		rows = append(rows, vr)
	}
	if top < 0 {
		unresolved(-1, "%s: the capture holds no version of this key", state)
		refused = true
	}
	if refused {
		return nil, nil
	}
	rb := &rebuild{key: key, path: path, state: state, expect: expect, before: before}
	for _, cs := range caps {
		rb.used = append(rb.used, cs...)
	}
	for _, vr := range rows {
		rb.versions = append(rb.versions, len(rp.Versions))
		rp.Versions = append(rp.Versions, *vr)
	}
	return rb, nil
}

// captureProblem says why the capture records of one version cannot prove it:
// no recorded hash, a definition that does not hash to it, an invalid
// definition, or records that disagree.
func captureProblem(cs []*Candidate) string {
	c := cs[0]
	def := primary(c)
	if len(c.RecordedHash) == 0 {
		return fmt.Sprintf("the capture record (%s) has no recorded hash to prove it", c.Source)
	}
	if got := formats.SchemaHash(def); !bytes.Equal(got, c.RecordedHash) {
		return fmt.Sprintf("its definition (%s) hashes to %x, not to the recorded %x", c.Source, got, c.RecordedHash)
	}
	if !c.Deleted {
		if err := validateDefinition(c.Type, def, c.Properties); err != nil {
			return fmt.Sprintf("its definition (%s) is not valid: %v", c.Source, err)
		}
	}
	first, err := formats.EncodeSchemaInfo(c.schemaInfo("", def))
	if err != nil {
		return fmt.Sprintf("%s: %v", c.Source, err)
	}
	for _, o := range cs[1:] {
		b, err := formats.EncodeSchemaInfo(o.schemaInfo("", primary(o)))
		if err != nil || !bytes.Equal(b, first) {
			return fmt.Sprintf("the capture records %s and %s disagree", c.Source, o.Source)
		}
	}
	return ""
}

func versionList(caps capturedVersions) string {
	vs := make([]int64, 0, len(caps))
	for v := range caps {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(parts, ", ")
}

// rebuildItems writes every version of a rebuilt history into a new ledger
// (entry 0 and its /ledgers node) and the locator: created when it does not
// exist, else compare-and-set against the version read.
func rebuildItems(rb *rebuild, rp *RepairPlan, u *ledgerUniverse, now time.Time) ([]mutate.Item, error) {
	loc := &schemapb.SchemaLocator{}
	for _, i := range rb.versions {
		vr := &rp.Versions[i]
		id, err := u.nextID()
		if err != nil {
			return nil, err
		}
		vr.NewLedgerID = id
		loc.Index = append(loc.Index, &schemapb.IndexEntry{Version: ptr(vr.Version),
			Position: &schemapb.PositionInfo{LedgerId: ptr(id), EntryId: ptr(int64(0))}, Hash: bytes.Clone(vr.Hash)})
	}
	loc.Info = loc.Index[len(loc.Index)-1]
	locBytes, err := formats.EncodeSchemaLocator(loc)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", rb.key, err)
	}
	var items []mutate.Item
	for _, i := range rb.versions {
		vr := &rp.Versions[i]
		entry, err := schemaEntryBytes(vr.Info, loc, vr.Version, vr.Hash)
		if err != nil {
			return nil, fmt.Errorf("schema %s version %d: %w", rb.key, vr.Version, err)
		}
		what := fmt.Sprintf("schema %s version %d (rebuilt history)", rb.key, vr.Version)
		litems, err := u.ledgerItems(rb.key, vr.NewLedgerID, entry, what, now)
		if err != nil {
			return nil, fmt.Errorf("schema %s version %d: ledger %d: %w", rb.key, vr.Version, vr.NewLedgerID, err)
		}
		items = append(items, litems...)
	}
	desc := fmt.Sprintf("schema %s: rebuilt locator, versions 0..%d", rb.key, len(rb.versions)-1)
	if rb.expect == 0 {
		items = append(items, mutate.Item{Kind: mutate.KindCreate, Path: rb.path, After: locBytes, Description: desc + " (must not exist)"})
	} else {
		items = append(items, mutate.Item{Kind: mutate.KindSet, Path: rb.path, Expect: rb.expect, Before: rb.before,
			After: locBytes, Description: desc + fmt.Sprintf(" (replaces the %s node)", rb.state)})
	}
	return items, nil
}
