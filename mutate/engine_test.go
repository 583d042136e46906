package mutate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

var ctx = context.Background()

func TestApplyVerify(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	before := dump(t, dd)
	plan := samplePlan(t, dd)
	e := newEngine(t, dd)

	res, err := e.Apply(ctx, plan, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != StateCommitted || !res.Verified || res.Epoch != 1 {
		t.Errorf("result = %s verified=%v epoch=%d, want committed, verified, epoch 1", res.State, res.Verified, res.Epoch)
	}
	for _, it := range res.Items {
		if it.Status != StatusVerified {
			t.Errorf("item %d (%s %s): %s, want verified", it.Index, it.Kind, it.Path, it.Status)
		}
	}
	if d := applyModel(before, plan).diff(dump(t, dd)); d != "" {
		t.Errorf("after apply:\n%s", d)
	}

	rec, err := Show(e.JournalDir(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Flags["allow-hash-mismatch"] != "true" || rec.Command != "schema repair" || rec.Epoch != 1 {
		t.Errorf("journal record lost plan fields: %+v", rec)
	}
	// The journal holds the before-image actually read, also where the plan left it out.
	if got := string(rec.Items[4].Before); got != "b0" {
		t.Errorf("journaled before-image of /b = %q, want b0", got)
	}
	if got := string(rec.Items[3].Before); got != "old0" {
		t.Errorf("journaled before-image of /old = %q, want old0", got)
	}
	if rec.Items[2].Written != version(t, dd, "/a") {
		t.Errorf("journaled written version %d, node is at %d", rec.Items[2].Written, version(t, dd, "/a"))
	}
	// Every node was written in one transaction: one commit version.
	if w := rec.Items[1].Written; w == 0 || rec.Items[4].Written != w || rec.Items[5].Written != w {
		t.Errorf("node versions %d, %d, %d: want one transaction", w, rec.Items[4].Written, rec.Items[5].Written)
	}
	var states []RunState
	for _, h := range rec.History {
		states = append(states, h.State)
	}
	if strings.Join(toStrings(states), ",") != "applying,committed" {
		t.Errorf("history %v, want applying,committed", states)
	}
	runs, err := List(e.JournalDir())
	if err != nil || len(runs) != 1 || runs[0].RunID != res.RunID || runs[0].State != StateCommitted || runs[0].Items != 6 {
		t.Errorf("List = %+v, %v", runs, err)
	}
}

func toStrings(s []RunState) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

func TestApplyRefusesNodeChangedSincePlan(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	plan := samplePlan(t, dd)
	// Someone writes /b between planning and applying.
	if _, err := dd.Metadata.CompareAndSet("/b", version(t, dd, "/b"), []byte("b-other")); err != nil {
		t.Fatal(err)
	}
	before := dump(t, dd)
	e := newEngine(t, dd)

	res, err := e.Apply(ctx, plan, ApplyOptions{})
	if !errors.Is(err, store.ErrVersionMismatch) {
		t.Fatalf("err = %v, want ErrVersionMismatch", err)
	}
	if !strings.Contains(err.Error(), "/b") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("error does not name the node and the outcome: %v", err)
	}
	if res.State != StateRefused || res.Items[4].Status != StatusFailed {
		t.Errorf("state %s, item /b %s; want refused, failed", res.State, res.Items[4].Status)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("data dir changed:\n%s", d)
	}
	rec, err := Show(e.JournalDir(), res.RunID)
	if err != nil || rec.State != StateRefused || !strings.Contains(rec.Error, "/b") {
		t.Errorf("journal record = %+v, %v", rec, err)
	}
}

func TestApplyRollsBackWhenNodeChangesMidRun(t *testing.T) {
	for _, mode := range []struct {
		name      string
		bytes     int
		interfere string // the crash point after which /b (item 4) is changed
		failed    []int  // the items whose write was refused
	}{
		{"batched", stepBytes, "item-0", []int{1, 2, 3, 4, 5}}, // one step holds every node
		{"per-item", 1, "item-2", []int{4}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			setStepBytes(t, mode.bytes)
			dd, _ := newDataDir(t)
			seed(t, dd)
			plan := samplePlan(t, dd)
			before := dump(t, dd)
			e := newEngine(t, dd)

			// After the run wrote its first items, someone else writes /b.
			testHook = func(step string) {
				if step == mode.interfere {
					if _, err := dd.Metadata.CompareAndSet("/b", version(t, dd, "/b"), []byte("b-other")); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { testHook = nil }()
			res, err := e.Apply(ctx, plan, ApplyOptions{})
			if !errors.Is(err, ErrRolledBack) || !errors.Is(err, store.ErrVersionMismatch) {
				t.Fatalf("err = %v, want ErrRolledBack and ErrVersionMismatch", err)
			}
			if !strings.Contains(err.Error(), "/b") {
				t.Errorf("error does not name /b: %v", err)
			}
			if res.State != StateRolledBack {
				t.Errorf("state %s, want rolled-back", res.State)
			}
			for _, i := range mode.failed {
				if res.Items[i].Status != StatusFailed {
					t.Errorf("item %d (%s): %s, want failed", i, res.Items[i].Path, res.Items[i].Status)
				}
			}
			want := maps.Clone(before)
			want[nodeKey("/b")] = "b-other" // the other writer's bytes are kept
			if d := want.diff(dump(t, dd)); d != "" {
				t.Errorf("not rolled back exactly:\n%s", d)
			}
		})
	}
}

func TestUndoRestoresEverything(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	before := dump(t, dd)
	e := newEngine(t, dd)
	plan := samplePlan(t, dd)
	res, err := e.Apply(ctx, plan, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := e.Undo(ctx, res.RunID, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if undo.State != StateCommitted || !undo.Verified {
		t.Errorf("undo %s verified=%v", undo.State, undo.Verified)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("undo left differences:\n%s", d)
	}
	if _, err := dd.Ledgers.LastEntry(100); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ledger 100 still has entries: %v", err)
	}
	runs, err := List(e.JournalDir())
	if err != nil || len(runs) != 2 || runs[0].UndoneBy != undo.RunID || runs[1].UndoOf != res.RunID {
		t.Errorf("List = %+v, %v", runs, err)
	}
	if _, err := e.Undo(ctx, res.RunID, ApplyOptions{}); !errors.Is(err, ErrAlreadyUndone) {
		t.Errorf("second undo: %v, want ErrAlreadyUndone", err)
	}
	// Undoing the undo re-applies the run; the run then counts as not undone, and
	// undoing it again is pointed at the re-applying run.
	redo, err := e.Undo(ctx, undo.RunID, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := applyModel(before, plan).diff(dump(t, dd)); d != "" {
		t.Errorf("undo of undo:\n%s", d)
	}
	runs, _ = List(e.JournalDir())
	if runs[0].UndoneBy != "" || runs[1].UndoneBy != redo.RunID {
		t.Errorf("after undo of undo: %+v", runs)
	}
	if _, err := e.Undo(ctx, res.RunID, ApplyOptions{}); !errors.Is(err, ErrAlreadyUndone) || !strings.Contains(err.Error(), "undo run "+redo.RunID+" instead") {
		t.Errorf("undo of re-applied run: %v", err)
	}
	if _, err := e.Undo(ctx, redo.RunID, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("undo of the re-apply:\n%s", d)
	}
}

func TestCancelRollsBack(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	before := dump(t, dd)
	e := newEngine(t, dd)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	testHook = func(step string) {
		if step == "item-0" { // after the ledger step, before the node step
			cancel()
		}
	}
	defer func() { testHook = nil }()
	res, err := e.Apply(cctx, samplePlan(t, dd), ApplyOptions{})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrRolledBack) {
		t.Fatalf("err = %v, want canceled and rolled back", err)
	}
	if res.State != StateRolledBack {
		t.Errorf("state %s", res.State)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("not rolled back:\n%s", d)
	}
}

func TestUndoRefusesChangedSinceRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dd *datadir.DataDir)
		names  string
	}{
		{"node rewritten", func(t *testing.T, dd *datadir.DataDir) {
			if _, err := dd.Metadata.CompareAndSet("/a", version(t, dd, "/a"), []byte("a2")); err != nil {
				t.Fatal(err)
			}
		}, "/a"},
		{"same bytes rewritten", func(t *testing.T, dd *datadir.DataDir) {
			if _, err := dd.Metadata.CompareAndSet("/b", version(t, dd, "/b"), []byte("b1")); err != nil {
				t.Fatal(err)
			}
		}, "/b"},
		{"deleted node recreated", func(t *testing.T, dd *datadir.DataDir) {
			if _, err := dd.Metadata.CompareAndSet("/old", 0, []byte("new")); err != nil {
				t.Fatal(err)
			}
		}, "/old"},
		{"entry added to created ledger", func(t *testing.T, dd *datadir.DataDir) {
			if err := dd.Ledgers.PutEntry(100, 2, []byte("e2")); err != nil {
				t.Fatal(err)
			}
		}, "ledger 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dd, _, e, res := appliedSample(t)
			tc.change(t, dd)
			changed := dump(t, dd)
			_, err := e.Undo(ctx, res.RunID, ApplyOptions{})
			if !errors.Is(err, store.ErrVersionMismatch) || !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("undo err = %v, want a version mismatch naming %s", err, tc.names)
			}
			if d := changed.diff(dump(t, dd)); d != "" {
				t.Errorf("refused undo changed the data dir:\n%s", d)
			}
		})
	}
}

func TestUndoRefusesUnfinishedRun(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	plan := samplePlan(t, dd)
	if _, err := dd.Metadata.CompareAndSet("/a", version(t, dd, "/a"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, dd)
	res, _ := e.Apply(ctx, plan, ApplyOptions{})
	if _, err := e.Undo(ctx, res.RunID, ApplyOptions{}); !errors.Is(err, ErrNotCommitted) {
		t.Errorf("undo of refused run: %v, want ErrNotCommitted", err)
	}
	if _, err := e.Undo(ctx, "no-such-run", ApplyOptions{}); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("undo of unknown run: %v, want ErrRunNotFound", err)
	}
}

// A journal record whose epoch is older than the journal's is refused on apply.
func TestStaleEpochRefused(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	before := dump(t, dd)
	e := newEngine(t, dd)
	rec, err := e.newRecord(samplePlan(t, dd))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Epoch, err = e.takeEpoch(0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.takeEpoch(0); err != nil { // a newer run starts
		t.Fatal(err)
	}
	if err := e.applyItems(ctx, rec); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("applyItems with epoch %d: %v, want ErrStaleEpoch", rec.Epoch, err)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("stale record wrote:\n%s", d)
	}
}

// A second engine that starts while a run is in flight fences it: the first run
// stops without writing more, and the newer one's recovery rolls it back.
func TestNewerRunFencesOlder(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	before := dump(t, dd)
	plan := samplePlan(t, dd)
	e1, e2 := newEngine(t, dd), newEngine(t, dd)
	if _, err := e1.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	second := &Plan{Command: "other", Items: []Item{{Kind: KindCreate, Path: "/second", After: []byte("2")}}}
	var res2 *Result
	testHook = func(step string) {
		if step == "item-1" && res2 == nil {
			testHook = nil
			var err error
			if res2, err = e2.Apply(ctx, second, ApplyOptions{}); err != nil {
				t.Errorf("second run: %v", err)
			}
		}
	}
	defer func() { testHook = nil }()
	_, err := e1.Apply(ctx, plan, ApplyOptions{})
	if !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("first run: %v, want ErrStaleEpoch", err)
	}
	want := applyModel(before, second)
	if d := want.diff(dump(t, dd)); d != "" {
		t.Errorf("after fencing:\n%s", d)
	}
	runs, _ := List(e1.JournalDir())
	if len(runs) != 2 || runs[0].State != StateRolledBack || runs[1].State != StateCommitted || runs[1].Epoch <= runs[0].Epoch {
		t.Errorf("runs = %+v", runs)
	}
}

func TestBackup(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	e := newEngine(t, dd)
	backup := filepath.Join(t.TempDir(), "meta.bak")
	res, err := e.Apply(ctx, samplePlan(t, dd), ApplyOptions{Backup: backup})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(backup)
	if err != nil || len(b) == 0 || !strings.Contains(string(b), "old0") {
		t.Errorf("backup %d bytes, %v; want the before-state nodes", len(b), err)
	}
	if rec, _ := Show(e.JournalDir(), res.RunID); rec.Backup != backup {
		t.Errorf("journal backup = %q", rec.Backup)
	}
	// An existing backup file is never overwritten, and the run does not start.
	before := dump(t, dd)
	_, err = e.Apply(ctx, &Plan{Command: "x", Items: []Item{{Kind: KindCreate, Path: "/z", After: []byte("z")}}}, ApplyOptions{Backup: backup})
	if !errors.Is(err, ErrBackupWrite) {
		t.Errorf("err = %v, want ErrBackupWrite", err)
	}
	// Nothing is journaled, so the error names no run id (journal show would not find it).
	if runs, _ := List(e.JournalDir()); len(runs) != 1 || err == nil || strings.Contains(err.Error(), "run ") {
		t.Errorf("after a failed backup: runs %+v, err %v; want the first run only and no run named", runs, err)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("data dir changed:\n%s", d)
	}
}

func TestNewRefusesReadOnly(t *testing.T) {
	dd, path, _, res := appliedSample(t)
	dd.Close()
	ro, err := datadir.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := New(ro); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("New(read-only) = %v, want ErrReadOnly", err)
	}
	// List and Show only read.
	if runs, err := List(JournalDir(ro.Path)); err != nil || len(runs) != 1 {
		t.Errorf("List on read-only dir = %v, %v", runs, err)
	}
	if _, err := Show(JournalDir(ro.Path), res.RunID); err != nil {
		t.Errorf("Show on read-only dir: %v", err)
	}
}

func TestListEmptyJournal(t *testing.T) {
	runs, err := List(filepath.Join(t.TempDir(), "journal"))
	if err != nil || len(runs) != 0 {
		t.Errorf("List(missing) = %v, %v", runs, err)
	}
}

// When the journal cannot be written, nothing changes.
func TestJournalWriteFailure(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	before := dump(t, dd)
	e := newEngine(t, dd)
	if _, err := e.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	testHook = func(step string) {
		if step == "epoch" {
			// Replace the journal folder by a file: no temp file can be created in it.
			dir := e.JournalDir()
			if err := os.Rename(dir, dir+".away"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dir, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func() { testHook = nil }()
	_, err := e.Apply(ctx, samplePlan(t, dd), ApplyOptions{})
	if !errors.Is(err, ErrJournalWrite) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("err = %v, want ErrJournalWrite, nothing changed", err)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("data dir changed:\n%s", d)
	}
}

func TestValidate(t *testing.T) {
	ok := Item{Kind: KindSet, Path: "/a", Expect: 3, After: []byte("x")}
	for _, tc := range []struct {
		name string
		plan Plan
	}{
		{"no command", Plan{Items: []Item{ok}}},
		{"bad run id", Plan{RunID: "../x", Command: "c"}},
		{"unknown kind", Plan{Command: "c", Items: []Item{{Kind: "poke", Path: "/a"}}}},
		{"relative path", Plan{Command: "c", Items: []Item{{Kind: KindCreate, Path: "a", After: []byte("x")}}}},
		{"set without version", Plan{Command: "c", Items: []Item{{Kind: KindSet, Path: "/a", After: []byte("x")}}}},
		{"create with version", Plan{Command: "c", Items: []Item{{Kind: KindCreate, Path: "/a", Expect: 2}}}},
		{"delete with after", Plan{Command: "c", Items: []Item{{Kind: KindDelete, Path: "/a", Expect: 2, After: []byte("x")}}}},
		{"same node twice", Plan{Command: "c", Items: []Item{ok, ok}}},
		{"same ledger twice", Plan{Command: "c", Items: []Item{{Kind: KindLedger, LedgerID: 4}, {Kind: KindLedger, LedgerID: 4}}}},
		{"repeated entry", Plan{Command: "c", Items: []Item{{Kind: KindLedger, LedgerID: 4, Entries: []LedgerEntry{{1, nil}, {1, nil}}}}}},
		{"ledger with path", Plan{Command: "c", Items: []Item{{Kind: KindLedger, LedgerID: 4, Path: "/x"}}}},
		{"negative ledger", Plan{Command: "c", Items: []Item{{Kind: KindLedger, LedgerID: -1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.plan.Validate(); !errors.Is(err, ErrInvalidPlan) {
				t.Errorf("Validate = %v, want ErrInvalidPlan", err)
			}
		})
	}
	good := Plan{Command: "c", RunID: NewRunID(fixedTime), Items: []Item{ok, {Kind: KindLedger, LedgerID: 4}}}
	if err := good.Validate(); err != nil {
		t.Errorf("good plan: %v", err)
	}
}

func TestRunIDsSortByTime(t *testing.T) {
	a, b := NewRunID(fixedTime), NewRunID(fixedTime.Add(1))
	if !(a < b) || !validRunID(a) {
		t.Errorf("run ids %q, %q do not sort or are not valid", a, b)
	}
}

func TestDuplicateRunIDRefused(t *testing.T) {
	dd, _ := newDataDir(t)
	e := newEngine(t, dd)
	p := &Plan{RunID: "r1", Command: "c", Items: []Item{{Kind: KindCreate, Path: "/x", After: []byte("1")}}}
	if _, err := e.Apply(ctx, p, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Items[0].Path = "/y"
	if _, err := e.Apply(ctx, p, ApplyOptions{}); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("reused run id: %v, want ErrInvalidPlan", err)
	}
}

// A run fsyncs the journal four times, however many items it has: the epoch file,
// the "applying" record and its folder, and the record after the commit's append.
func TestJournalFsyncsPerRun(t *testing.T) {
	for _, n := range []int{1, 100} {
		dd, _ := newDataDir(t)
		e := newEngine(t, dd)
		if _, err := e.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		p := &Plan{Command: "c"}
		for i := range n {
			p.Items = append(p.Items, Item{Kind: KindCreate, Path: fmt.Sprintf("/n/%03d", i), After: []byte("x")})
		}
		var synced []string
		e.OnSync = func(path string) { synced = append(synced, filepath.Base(path)) }
		_, err := e.Apply(ctx, p, ApplyOptions{})
		e.OnSync = nil
		if err != nil {
			t.Fatal(err)
		}
		if len(synced) != 4 {
			t.Errorf("%d items: %d journal fsyncs %v, want 4", n, len(synced), synced)
		}
	}
}

// A run larger than one store transaction is split into several steps, and still
// applies, verifies and undoes exactly.
func TestLargeRunSplitsSteps(t *testing.T) {
	setStepBytes(t, 64<<20) // let the store refuse the step as too big
	dd, _ := newDataDir(t)
	seed(t, dd)
	before := dump(t, dd)
	big := strings.Repeat("v", 700<<10) // 8 x 700 kB > one transaction (1.2 or 2.4 MB)
	p := &Plan{Command: "big"}
	ledger := Item{Kind: KindLedger, LedgerID: 300}
	for i := range 8 {
		p.Items = append(p.Items, Item{Kind: KindCreate, Path: fmt.Sprintf("/big/%d", i), After: []byte(big)})
		ledger.Entries = append(ledger.Entries, LedgerEntry{EntryID: int64(i), Value: []byte(big)})
	}
	p.Items = append(p.Items, ledger)
	e := newEngine(t, dd)
	var steps []string
	testHook = func(s string) { steps = append(steps, s) }
	res, err := e.Apply(ctx, p, ApplyOptions{})
	testHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if d := applyModel(before, p).diff(dump(t, dd)); d != "" {
		t.Fatalf("after apply:\n%s", d)
	}
	// Nodes written in one transaction share its commit version: more than one
	// version means the step was split.
	rec, err := Show(e.JournalDir(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[uint64]bool{}
	for _, it := range rec.Items[:8] {
		versions[it.Written] = true
	}
	if len(versions) < 2 || !slices.Contains(steps, "item-7") {
		t.Errorf("node versions %v, crash points %v: want the node step split", versions, steps)
	}
	if _, err := e.Undo(ctx, res.RunID, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("after undo:\n%s", d)
	}
}

// An engine's runs keep its epoch while no other engine took the journal, and take
// a new one when another did: the journal's fsyncs fall from four to three a run.
func TestEpochKeptAcrossRuns(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	e1, e2 := newEngine(t, dd), newEngine(t, dd)
	syncs := 0
	e1.OnSync = func(string) { syncs++ }
	e2.OnSync = e1.OnSync
	apply := func(e *Engine, path, value string) *Result {
		t.Helper()
		p := &Plan{Command: "set", Items: []Item{{Kind: KindSet, Path: path, Expect: version(t, dd, path), After: []byte(value)}}}
		res, err := e.Apply(ctx, p, ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	r1 := apply(e1, "/a", "1")
	if _, err := e1.Recover(ctx); err != nil { // nothing unfinished: takes no epoch
		t.Fatal(err)
	}
	syncs = 0
	r2 := apply(e1, "/a", "2")
	if r2.Epoch != r1.Epoch || syncs != 3 {
		t.Errorf("second run: epoch %d (first %d), %d fsyncs; want the same epoch and 3 fsyncs", r2.Epoch, r1.Epoch, syncs)
	}
	r3 := apply(e2, "/a", "3") // another engine takes the journal
	r4 := apply(e1, "/a", "4")
	if r3.Epoch <= r2.Epoch || r4.Epoch <= r3.Epoch {
		t.Errorf("epochs %d, %d, %d: each engine that takes the journal over needs a newer one", r2.Epoch, r3.Epoch, r4.Epoch)
	}
}

// With TrustBefore the preflight does not re-read nodes that carry their
// before-image: a node changed since the plan read it is refused by the write
// step's compare-and-set instead, and nothing is written.
func TestTrustBeforeRefusedByCompareAndSet(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	e := newEngine(t, dd)
	va, vb := version(t, dd, "/a"), version(t, dd, "/b")
	plan := func() *Plan {
		return &Plan{Command: "backfill", Items: []Item{
			{Kind: KindSet, Path: "/a", Expect: va, Before: []byte("a0"), After: []byte("a1")},
			{Kind: KindSet, Path: "/b", Expect: vb, Before: []byte("b0"), After: []byte("b1")},
		}}
	}
	if _, err := dd.Metadata.CompareAndSet("/b", vb, []byte("b-other")); err != nil {
		t.Fatal(err)
	}
	before := dump(t, dd)
	res, err := e.Apply(ctx, plan(), ApplyOptions{TrustBefore: true})
	if !errors.Is(err, store.ErrVersionMismatch) || res == nil || res.State != StateRolledBack {
		t.Fatalf("apply of a stale plan = %+v, %v; want rolled back with a version mismatch", res, err)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("a refused run wrote:\n%s", d)
	}
	// Unchanged nodes: the run commits and journals the before-images it was given.
	vb = version(t, dd, "/b")
	p := plan()
	p.Items[1].Expect, p.Items[1].Before = vb, []byte("b-other")
	res, err = e.Apply(ctx, p, ApplyOptions{TrustBefore: true})
	if err != nil || res.State != StateCommitted {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	rec, err := Show(e.JournalDir(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Items[0].Before) != "a0" || string(rec.Items[1].Before) != "b-other" {
		t.Errorf("journaled before-images %q, %q", rec.Items[0].Before, rec.Items[1].Before)
	}
	if _, err := e.Undo(ctx, res.RunID, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := before.diff(dump(t, dd)); d != "" {
		t.Errorf("undo:\n%s", d)
	}
}
