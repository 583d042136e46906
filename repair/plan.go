package repair

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/mutate"
)

// Command is the journal name of a schema repair run.
const Command = "schema repair"

// UsageFunc answers how many stored messages carry a schema version (from a scan
// of topic ledgers); known is false when it cannot tell.
type UsageFunc func(schemaKey string, version int64) (messages int64, known bool)

// Options tune Plan.
type Options struct {
	// KeyFilter limits the repair to one schema key (tenant/ns/encoded-topic);
	// inputs that name no schema key are then taken to be that key's.
	KeyFilter string
	// AllowHashMismatch lets a candidate that names the exact schema key and version
	// be used although its SHA-256 differs from the locator's. Loud; journaled.
	AllowHashMismatch bool
	// Usage, when set, says how many stored messages need each lost version.
	Usage UsageFunc
	// Now is the clock for ledger ctime and the plan (time.Now when nil).
	Now func() time.Time
	// Args is the command line, recorded in the journal.
	Args []string
	// Scan reads which versions stored messages of a schema key's topic use; it
	// is needed to rebuild a deleted history and to split colliding ones.
	Scan MessageScan
	// ResolveCollision is "", ResolveOld or ResolveNew: what to do with a schema
	// key whose current history holds other schemas than the capture. Without
	// it, nothing is written while a collision exists.
	ResolveCollision string
	// TakeLedgerIDs: when the ledger store is live bookies (store.BookieWriter),
	// take new ledger ids from the cluster's generator (--apply); the dry run
	// shows placeholders and takes none.
	TakeLedgerIDs bool
	// Quorums override the sizes of ledgers written to live bookies.
	Quorums Quorums
}

// Action says what the plan does with a lost version.
type Action string

// Actions.
const (
	ActionRestore          Action = "restore"
	ActionRestoreMismatch  Action = "restore-hash-mismatch"
	ActionRebuildTombstone Action = "rebuild-tombstone"
	ActionUnresolved       Action = "unresolved"
)

// Hash-match column values.
const (
	HashMatchYes  = "yes"
	HashMatchNo   = "NO"
	HashMatchNone = "-"
	HashMatchNA   = "n/a (tombstone)"
)

// VersionRepair is one lost schema version and what the plan does with it.
type VersionRepair struct {
	SchemaKey   string
	LocatorPath string
	Version     int64 // -1 when the locator itself cannot be decoded
	Hash        []byte
	OldLedgerID int64
	OldEntryID  int64
	State       State
	Reason      string // why it is lost, or why it stays unresolved
	Action      Action
	NewLedgerID int64 // 0 unless restored
	Source      string
	HashMatch   string
	Info        *schemapb.SchemaInfo // what entry 0 of the new ledger holds
	// Messages is how many stored messages need this version, when Usage knows.
	Messages      int64
	MessagesKnown bool
	Notes         []string
}

// Refusal is a candidate that was not used for a version, and why.
type Refusal struct {
	Source    string
	SchemaKey string
	Version   int64
	Reason    string
}

// RepairPlan is the outcome of Plan: every lost version, the refusals, and the
// engine plan (nil when there is nothing to write).
type RepairPlan struct {
	SchemaKeys      int // locators read
	VersionsChecked int
	Versions        []VersionRepair // lost versions only
	Refusals        []Refusal
	Warnings        []string // must be shown loudly (hash mismatches allowed, unreadable nodes)
	Notes           []string
	UnusedInputs    int
	HashMismatches  []string // key@version restored despite a hash mismatch
	// Collisions are schema keys whose current history holds other schemas than
	// the capture; UnresolvedCollisions counts those without a resolution.
	Collisions           []Collision
	UnresolvedCollisions int
	Plan                 *mutate.Plan
}

// Unresolved counts the lost versions the plan cannot restore.
func (rp *RepairPlan) Unresolved() int {
	n := 0
	for _, v := range rp.Versions {
		if v.Action == ActionUnresolved {
			n++
		}
	}
	return n
}

// Restored counts the versions the plan restores or rebuilds.
func (rp *RepairPlan) Restored() int {
	n := 0
	for _, v := range rp.Versions {
		if v.Action != ActionUnresolved && v.Action != ActionKeepCurrent && v.Action != ActionReplaced {
			n++
		}
	}
	return n
}

// keyWork is one schema key with lost versions.
type keyWork struct {
	lv     *locatorView
	stored map[int64]storedVersion
	lost   []int // indexes into RepairPlan.Versions, ascending version
}

// Plan finds every lost schema version (only opts.KeyFilter's when set), proves a
// candidate for each by the SHA-256 its locator holds, and builds the engine plan
// that restores them. It reads only; nothing is written.
func Plan(ctx context.Context, dd *datadir.DataDir, cands []Candidate, opts Options) (*RepairPlan, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	if r := opts.ResolveCollision; r != "" && r != ResolveOld && r != ResolveNew {
		return nil, fmt.Errorf("resolve collision %q: want %s or %s", r, ResolveOld, ResolveNew)
	}
	rp := &RepairPlan{}
	captured := capturesByKey(cands, opts.KeyFilter)
	work, current, damaged, err := findLost(ctx, dd, opts.KeyFilter, rp, captured)
	if err != nil {
		return nil, err
	}
	hw, err := planHistories(ctx, dd, captured, current, damaged, opts, rp)
	if err != nil {
		return nil, err
	}
	if opts.Usage != nil {
		for i := range rp.Versions {
			v := &rp.Versions[i]
			if v.Version >= 0 {
				v.Messages, v.MessagesKnown = opts.Usage(v.SchemaKey, v.Version)
			}
		}
	}
	if len(work) == 0 && len(hw.rebuilds) == 0 {
		return rp, nil
	}
	u, err := scanLedgerIDs(ctx, dd)
	if err != nil {
		return nil, err
	}
	rp.Warnings = append(rp.Warnings, u.Warnings...)
	if u.live, err = newLiveBookies(ctx, dd, opts.TakeLedgerIDs, opts.Quorums); err != nil {
		return nil, err
	}
	for _, rb := range hw.rebuilds {
		for _, i := range rb.versions {
			// A rebuilt version never reuses the ledger id it was captured from:
			// a bookie may still hold that ledger.
			u.MaxID = max(u.MaxID, rp.Versions[i].OldLedgerID)
		}
	}
	m := newMatcher(cands, opts)
	created := now()
	plan := &mutate.Plan{Command: Command, Args: opts.Args, CreatedAt: created}
	for _, kw := range work {
		if why, ok := hw.blocked[kw.lv.Key]; ok {
			for _, i := range kw.lost {
				rp.Versions[i].Reason = fmt.Sprintf("%s (%s); not restored on its own: %s", rp.Versions[i].State, rp.Versions[i].Reason, why)
				if hw.rebuilt[kw.lv.Key] {
					rp.Versions[i].Action = ActionReplaced
				}
			}
			continue
		}
		items, err := planKey(kw, rp, m, u, created)
		if err != nil {
			return nil, err
		}
		plan.Items = append(plan.Items, items...)
	}
	for _, rb := range hw.rebuilds {
		items, err := rebuildItems(rb, rp, u, created)
		if err != nil {
			return nil, err
		}
		plan.Items = append(plan.Items, items...)
	}
	if rp.UnresolvedCollisions > 0 && len(plan.Items) > 0 {
		rp.Notes = append(rp.Notes, fmt.Sprintf("nothing is written while %d schema key(s) have an unresolved version collision "+
			"(see the collisions table; choose --resolve-collision old|new)", rp.UnresolvedCollisions))
		plan.Items = nil
		for i := range rp.Versions {
			if v := &rp.Versions[i]; v.Action != ActionUnresolved && v.Action != ActionKeepCurrent && v.Action != ActionReplaced {
				v.Notes = append(v.Notes, "held back: a version collision is unresolved")
			}
		}
	}
	if opts.ResolveCollision != "" && len(rp.Collisions) > 0 {
		if plan.Flags == nil {
			plan.Flags = map[string]string{}
		}
		plan.Flags["resolve-collision"] = opts.ResolveCollision
	}
	for _, rb := range hw.rebuilds {
		for _, c := range rb.used {
			m.markCandidate(c)
		}
	}
	rp.Refusals = m.refusals
	rp.UnusedInputs = m.unused()
	if opts.AllowHashMismatch {
		if plan.Flags == nil {
			plan.Flags = map[string]string{}
		}
		plan.Flags["allow-hash-mismatch"] = "true"
		if len(rp.HashMismatches) > 0 {
			plan.Flags["hash-mismatch-versions"] = strings.Join(rp.HashMismatches, ",")
		}
	}
	if len(plan.Items) > 0 {
		rp.Notes = append(rp.Notes, u.templateNote())
		if u.live != nil {
			rp.Notes = append(rp.Notes, u.live.notes()...)
			for _, it := range plan.Items {
				if it.Kind == mutate.KindBookieLedger {
					rp.Notes = append(rp.Notes, it.Description)
				}
			}
		} else {
			rp.Notes = append(rp.Notes, fmt.Sprintf("new ledger ids start above %d, the highest id named anywhere in the data dir",
				rp.firstNewID()-1))
		}
		for _, v := range rp.Versions {
			if v.Action != ActionUnresolved {
				plan.Notes = append(plan.Notes, fmt.Sprintf("%s version %d: %s into ledger %d (was ledger %d, %s) from %s",
					v.SchemaKey, v.Version, v.Action, v.NewLedgerID, v.OldLedgerID, v.State, v.Source))
			}
		}
		plan.Notes = append(plan.Notes, rp.Warnings...)
		rp.Plan = plan
	}
	return rp, nil
}

func (rp *RepairPlan) firstNewID() int64 {
	first := int64(-1)
	for _, v := range rp.Versions {
		if v.NewLedgerID > 0 && (first < 0 || v.NewLedgerID < first) {
			first = v.NewLedgerID
		}
	}
	return first
}

// findLost reads every locator and every version, recording the lost ones.
// Keys the captures name are returned too: current holds those whose locator
// decodes, damaged those whose locator does not.
func findLost(ctx context.Context, dd *datadir.DataDir, keyFilter string, rp *RepairPlan, captured map[string]capturedVersions) (
	work []*keyWork, current map[string]*keyWork, damaged map[string]*locatorView, err error) {
	current, damaged = map[string]*keyWork{}, map[string]*locatorView{}
	err = scanLocators(ctx, dd, keyFilter, func(lv *locatorView) error {
		rp.SchemaKeys++
		if lv.DecodeErr != nil && captured[lv.Key] != nil {
			damaged[lv.Key] = lv // rebuilt from the capture (planHistories)
			return nil
		}
		if lv.DecodeErr != nil {
			rp.Versions = append(rp.Versions, VersionRepair{
				SchemaKey: lv.Key, LocatorPath: lv.Path, Version: -1, State: StateUnreadable,
				Reason: lv.DecodeErr.Error(), Action: ActionUnresolved, HashMatch: HashMatchNone,
			})
			return nil
		}
		kw := &keyWork{lv: lv, stored: make(map[int64]storedVersion)}
		err := readVersions(ctx, dd, lv, func(ie *schemapb.IndexEntry, sv storedVersion) error {
			rp.VersionsChecked++
			kw.stored[ie.GetVersion()] = sv
			if !sv.State.Lost() {
				return nil
			}
			kw.lost = append(kw.lost, len(rp.Versions))
			rp.Versions = append(rp.Versions, VersionRepair{
				SchemaKey: lv.Key, LocatorPath: lv.Path, Version: ie.GetVersion(), Hash: ie.GetHash(),
				OldLedgerID: ie.GetPosition().GetLedgerId(), OldEntryID: ie.GetPosition().GetEntryId(),
				State: sv.State, Reason: sv.Reason, Action: ActionUnresolved, HashMatch: HashMatchNone,
			})
			return nil
		})
		if err != nil {
			return err
		}
		if len(kw.lost) > 0 {
			work = append(work, kw)
		}
		if captured[lv.Key] != nil {
			current[lv.Key] = kw
		}
		return nil
	})
	return work, current, damaged, err
}

// planKey resolves the lost versions of one key and returns its items: per
// restored version the ledger's entry and its /ledgers node, then one
// compare-and-set of the locator covering every restored version.
func planKey(kw *keyWork, rp *RepairPlan, m *matcher, u *ledgerUniverse, now time.Time) ([]mutate.Item, error) {
	key := kw.lv.Key
	infos := make(map[int64]*schemapb.SchemaInfo) // readable or restored, for tombstone neighbours
	for v, sv := range kw.stored {
		if sv.Info != nil {
			infos[v] = sv.Info
		}
	}
	var restored []*VersionRepair
	for _, i := range kw.lost {
		vr := &rp.Versions[i]
		resolveVersion(vr, kw, infos, m, rp)
		if vr.Info == nil {
			continue
		}
		infos[vr.Version] = vr.Info
		restored = append(restored, vr)
	}
	if len(restored) == 0 {
		return nil, nil
	}
	for _, vr := range restored {
		id, err := u.nextID()
		if err != nil {
			return nil, err
		}
		vr.NewLedgerID = id
	}
	newLoc := proto.Clone(kw.lv.Locator).(*schemapb.SchemaLocator)
	for _, vr := range restored {
		repoint(newLoc, vr.Version, vr.NewLedgerID)
	}
	locBytes, err := formats.EncodeSchemaLocator(newLoc)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", key, err)
	}
	var items []mutate.Item
	for _, vr := range restored {
		entry, err := schemaEntryBytes(vr.Info, newLoc, vr.Version, vr.Hash)
		if err != nil {
			return nil, fmt.Errorf("schema %s version %d: %w", key, vr.Version, err)
		}
		what := fmt.Sprintf("schema %s version %d", key, vr.Version)
		litems, err := u.ledgerItems(key, vr.NewLedgerID, entry, what, now)
		if err != nil {
			return nil, fmt.Errorf("schema %s version %d: ledger %d: %w", key, vr.Version, vr.NewLedgerID, err)
		}
		items = append(items, litems...)
	}
	items = append(items, mutate.Item{Kind: mutate.KindSet, Path: kw.lv.Path, Expect: kw.lv.Version,
		Before: kw.lv.Value, After: locBytes,
		Description: fmt.Sprintf("schema %s: repoint %d version(s) to restored ledgers", key, len(restored))})
	return items, nil
}

// repoint moves every IndexEntry of version (and info, when it is that version) to
// entry 0 of ledger, keeping versions and hashes.
func repoint(loc *schemapb.SchemaLocator, version, ledger int64) {
	set := func(ie *schemapb.IndexEntry) {
		if ie != nil && ie.GetVersion() == version {
			ie.Position = &schemapb.PositionInfo{LedgerId: ptr(ledger), EntryId: ptr(int64(0))}
		}
	}
	set(loc.Info)
	for _, ie := range loc.Index {
		set(ie)
	}
}

// schemaEntryBytes builds entry 0 as BookkeeperSchemaStorage writes it: the
// SchemaInfo and the locator's index as it was before this version, here as the
// repaired locator has it (so earlier versions point at readable ledgers).
// Version 0 is written by createNewSchema before any locator exists; its index
// is one placeholder for the version itself: its hash at position (-1, -1).
func schemaEntryBytes(info *schemapb.SchemaInfo, loc *schemapb.SchemaLocator, version int64, hash []byte) ([]byte, error) {
	data, err := formats.EncodeSchemaInfo(info)
	if err != nil {
		return nil, err
	}
	se := &schemapb.SchemaEntry{SchemaData: data}
	if version == 0 {
		se.Index = []*schemapb.IndexEntry{{
			Version:  ptr(int64(0)),
			Position: &schemapb.PositionInfo{LedgerId: ptr(int64(-1)), EntryId: ptr(int64(-1))},
			Hash:     append([]byte{}, hash...),
		}}
	}
	for _, ie := range loc.GetIndex() {
		if ie.GetVersion() < version {
			se.Index = append(se.Index, proto.Clone(ie).(*schemapb.IndexEntry))
		}
	}
	return formats.EncodeSchemaEntry(se)
}

// resolveVersion decides how one lost version is restored and fills vr.Info.
func resolveVersion(vr *VersionRepair, kw *keyWork, infos map[int64]*schemapb.SchemaInfo, m *matcher, rp *RepairPlan) {
	var implicit []Candidate
	if sv := kw.stored[vr.Version]; sv.Info != nil {
		// The entry is still in the ledger store (only its node is gone): it is its own candidate.
		implicit = append(implicit, candidateFromInfo(fmt.Sprintf("data dir: ledger %d entry %d", vr.OldLedgerID, vr.OldEntryID),
			vr.SchemaKey, vr.Version, sv.Info))
		vr.Notes = append(vr.Notes, fmt.Sprintf("ledger %d's entries are left in place, orphaned", vr.OldLedgerID))
	}
	if len(vr.Hash) == 0 {
		resolveTombstone(vr, kw, infos, m, implicit)
		return
	}
	res := m.find(vr.SchemaKey, vr.Version, vr.Hash, implicit)
	if res.cand == nil {
		vr.Reason = unresolvedReason(vr, res)
		return
	}
	vr.Info = res.cand.schemaInfo(vr.SchemaKey, res.def)
	vr.Source = res.cand.Source
	vr.Action, vr.HashMatch = ActionRestore, HashMatchYes
	if !res.hashMatch {
		vr.Action, vr.HashMatch = ActionRestoreMismatch, HashMatchNo
		rp.HashMismatches = append(rp.HashMismatches, fmt.Sprintf("%s@%d", vr.SchemaKey, vr.Version))
		rp.Warnings = append(rp.Warnings, fmt.Sprintf("--allow-hash-mismatch: %s version %d restored from %s although its "+
			"SHA-256 %s differs from the locator's %s", vr.SchemaKey, vr.Version, res.cand.Source,
			hex.EncodeToString(formats.SchemaHash(res.def)), hex.EncodeToString(vr.Hash)))
	}
	if !res.cand.HasTimestamp {
		vr.Notes = append(vr.Notes, "input has no timestamp: restored with 0")
	}
	if res.others > 0 {
		vr.Notes = append(vr.Notes, fmt.Sprintf("%d other input(s) also match", res.others))
	}
}

func unresolvedReason(vr *VersionRepair, res matchResult) string {
	why := fmt.Sprintf("%s (%s); no input's SHA-256 equals %s", vr.State, vr.Reason, hex.EncodeToString(vr.Hash))
	if len(res.refused) > 0 {
		why += "; refused: " + strings.Join(res.refused, "; ")
	}
	return why
}

// resolveTombstone rebuilds a lost delete marker: deleted, type NONE, empty
// schema. A captured tombstone gives its exact user and timestamp; otherwise they
// come from the nearest readable version before it (else after it), or stay empty.
func resolveTombstone(vr *VersionRepair, kw *keyWork, infos map[int64]*schemapb.SchemaInfo, m *matcher, implicit []Candidate) {
	vr.Action, vr.HashMatch = ActionRebuildTombstone, HashMatchNA
	if res := m.find(vr.SchemaKey, vr.Version, vr.Hash, implicit); res.cand != nil && res.cand.Deleted && len(res.def) == 0 {
		vr.Info = res.cand.schemaInfo(vr.SchemaKey, res.def)
		vr.Source = res.cand.Source
		return
	}
	info := &schemapb.SchemaInfo{
		SchemaId: ptr(vr.SchemaKey), User: ptr(""), Type: schemapb.SchemaInfo_NONE.Enum(),
		Schema: []byte{}, Timestamp: ptr(int64(0)), Deleted: ptr(true),
	}
	vr.Source = "rebuilt (no input needed)"
	if n, v, ok := neighbour(infos, vr.Version); ok {
		info.User, info.Timestamp = ptr(n.GetUser()), ptr(n.GetTimestamp())
		vr.Notes = append(vr.Notes, fmt.Sprintf("user and timestamp taken from version %d", v))
	} else {
		vr.Notes = append(vr.Notes, "no readable neighbour: user empty, timestamp 0")
	}
	vr.Info = info
}

// neighbour returns the info of the nearest version below v, else above it.
func neighbour(infos map[int64]*schemapb.SchemaInfo, v int64) (*schemapb.SchemaInfo, int64, bool) {
	below, above := int64(-1), int64(-1)
	for k := range infos {
		switch {
		case k < v && k > below:
			below = k
		case k > v && (above < 0 || k < above):
			above = k
		}
	}
	best := below
	if best < 0 {
		best = above
	}
	if best < 0 {
		return nil, 0, false
	}
	return infos[best], best, true
}

func candidateFromInfo(source, key string, version int64, info *schemapb.SchemaInfo) Candidate {
	return Candidate{
		Source: source, Format: FormatDataDir, SchemaKey: key, Version: version, HasVersion: true,
		Type: info.GetType(), Definitions: [][]byte{bytes.Clone(info.GetSchema())},
		Properties: propsFromInfo(info.GetProps()), Timestamp: info.GetTimestamp(), HasTimestamp: true,
		User: info.GetUser(), HasUser: true, Deleted: info.GetDeleted(),
	}
}

// schemaInfo is the registry SchemaInfo a candidate restores, with definition def.
func (c *Candidate) schemaInfo(key string, def []byte) *schemapb.SchemaInfo {
	if def == nil {
		def = []byte{}
	}
	return &schemapb.SchemaInfo{
		SchemaId: ptr(key), User: ptr(c.User), Type: c.Type.Enum(), Schema: bytes.Clone(def),
		Timestamp: ptr(c.Timestamp), Deleted: ptr(c.Deleted), Props: c.Properties.toInfo(),
	}
}

// Apply runs the plan through the mutation engine. Callers run eng.Recover before
// Plan, so the plan was computed on a recovered data dir. A nil plan writes nothing.
func Apply(ctx context.Context, eng *mutate.Engine, rp *RepairPlan, opts mutate.ApplyOptions) (*mutate.Result, error) {
	if rp == nil || rp.Plan == nil {
		return nil, nil
	}
	return eng.Apply(ctx, rp.Plan, opts)
}

// Hint is what a check finding about a lost schema version tells the user to do.
func Hint(schemaKey string) string {
	topic := schemaKey
	if t, ok := formats.ParseSchemaLocatorPath(formats.SchemasRoot + "/" + schemaKey); ok {
		topic = t.String()
	}
	return fmt.Sprintf("restore it: `ledgermedic schema capture --out FILE` on a healthy copy (or save `pulsar-admin schemas get "+
		"%s --version N`), then `ledgermedic schema repair --from FILE --topic %s` (dry run), then add --apply; "+
		"see docs/runbook-lost-schema-ledger.md", topic, topic)
}
