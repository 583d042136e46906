package mutate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

var fixedTime = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// recoverAndCheck reopens the data dir, recovers, and checks the result is exactly
// one of the allowed states; a second Recover must then write nothing.
func recoverAndCheck(t *testing.T, dd *datadir.DataDir, path string, allowed ...state) *datadir.DataDir {
	t.Helper()
	dd = reopen(t, dd, path)
	e := newEngine(t, dd)
	if _, err := e.Recover(ctx); err != nil {
		t.Fatalf("recover: %v", err)
	}
	got := dump(t, dd)
	var diffs []string
	for _, want := range allowed {
		d := want.diff(got)
		if d == "" {
			diffs = nil
			break
		}
		diffs = append(diffs, d)
	}
	if diffs != nil {
		t.Fatalf("after recovery the data dir is a mixture:\n%s", strings.Join(diffs, "\n--- or ---\n"))
	}
	runs, err := List(e.JournalDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if !r.State.Finished() {
			t.Errorf("run %s still %s after recovery", r.RunID, r.State)
		}
	}
	journal := snapshotDir(t, e.JournalDir())
	reports, err := newEngine(t, dd).Recover(ctx)
	if err != nil || len(reports) != 0 {
		t.Errorf("second recover: %v, %v; want nothing to do", reports, err)
	}
	if d := state(journal).diff(snapshotDir(t, e.JournalDir())); d != "" {
		t.Errorf("second recover wrote to the journal:\n%s", d)
	}
	if d := got.diff(dump(t, dd)); d != "" {
		t.Errorf("second recover changed the data dir:\n%s", d)
	}
	return dd
}

// TestCrashDuringApply stops the run at every crash point, with the writes batched
// (the default) and with one write per step.
func TestCrashDuringApply(t *testing.T) {
	for _, mode := range stepModes {
		t.Run(mode.name, func(t *testing.T) {
			setStepBytes(t, mode.bytes)
			var steps []string
			{
				dd, _ := newDataDir(t)
				seed(t, dd)
				steps = recordSteps(func() {
					if _, err := newEngine(t, dd).Apply(ctx, samplePlan(t, dd), ApplyOptions{Backup: filepath.Join(t.TempDir(), "b")}); err != nil {
						t.Fatal(err)
					}
				})
			}
			for _, want := range []string{"journaled", "item-0-entry-1", "item-0", "item-5", "applied", "verified", "committed"} {
				if !slices.Contains(steps, want) {
					t.Fatalf("crash points = %v, no %s", steps, want)
				}
			}
			for _, step := range steps {
				t.Run(step, func(t *testing.T) {
					dd, path := newDataDir(t)
					seed(t, dd)
					before := dump(t, dd)
					plan := samplePlan(t, dd)
					after := applyModel(before, plan)
					e := newEngine(t, dd)
					crashed := crashAt(t, e.JournalDir(), step)(func() {
						e.Apply(ctx, plan, ApplyOptions{Backup: filepath.Join(t.TempDir(), "b")})
					})
					if !crashed {
						t.Fatal("did not reach the crash point")
					}
					if step == "committed" {
						recoverAndCheck(t, dd, path, after)
					} else {
						recoverAndCheck(t, dd, path, before)
					}
				})
			}
		})
	}
}

// The crash points of a batched run say which writes are durable: the ledger's
// entries in one step, then every node in one step.
func TestBatchedCrashPoints(t *testing.T) {
	dd, _ := newDataDir(t)
	seed(t, dd)
	steps := recordSteps(func() {
		if _, err := newEngine(t, dd).Apply(ctx, samplePlan(t, dd), ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	want := []string{"epoch", "journaled", "item-0-entry-0", "item-0-entry-1", "item-0",
		"item-1", "item-2", "item-3", "item-4", "item-5", "applied", "verified", "committed"}
	if !slices.Equal(steps, want) {
		t.Errorf("crash points\n got %v\nwant %v", steps, want)
	}
}

// TestCrashDuringRollback makes a run fail mid-way (another writer changes a node
// between two of the run's steps) and stops the rollback at each of its crash points.
func TestCrashDuringRollback(t *testing.T) {
	for _, mode := range []struct {
		name      string
		bytes     int
		interfere string // the crash point after which /b (item 4) is changed
		minSteps  int
	}{
		{"batched", stepBytes, "item-0", 3}, // the node step is refused whole
		{"per-item", 1, "item-3", 6},        // items 1 to 3 were written
	} {
		t.Run(mode.name, func(t *testing.T) {
			setStepBytes(t, mode.bytes)
			interfere := func(t *testing.T, dd *datadir.DataDir) func(string) {
				return func(step string) {
					if step == mode.interfere {
						if _, err := dd.Metadata.CompareAndSet("/b", version(t, dd, "/b"), []byte("b-other")); err != nil {
							t.Error(err)
						}
					}
				}
			}
			var steps []string
			{
				dd, _ := newDataDir(t)
				seed(t, dd)
				hook := interfere(t, dd)
				e := newEngine(t, dd)
				plan := samplePlan(t, dd)
				steps = recordSteps(func() {
					h := testHook
					testHook = func(s string) { h(s); hook(s) }
					if _, err := e.Apply(ctx, plan, ApplyOptions{}); !errors.Is(err, ErrRolledBack) {
						t.Fatalf("err = %v, want rolled back", err)
					}
				})
			}
			var rollbackSteps []string
			for _, s := range steps {
				if strings.HasPrefix(s, "rollback") || s == "rolled-back" {
					rollbackSteps = append(rollbackSteps, s)
				}
			}
			if len(rollbackSteps) < mode.minSteps {
				t.Fatalf("rollback crash points = %v", rollbackSteps)
			}
			for _, step := range rollbackSteps {
				t.Run(step, func(t *testing.T) {
					dd, path := newDataDir(t)
					seed(t, dd)
					plan := samplePlan(t, dd)
					before := dump(t, dd)
					before[nodeKey("/b")] = "b-other"
					e := newEngine(t, dd)
					hook := interfere(t, dd)
					crashed := crashAt(t, e.JournalDir(), step)(func() {
						h := testHook
						testHook = func(s string) { hook(s); h(s) }
						e.Apply(ctx, plan, ApplyOptions{})
					})
					if !crashed {
						t.Fatal("did not reach the crash point")
					}
					recoverAndCheck(t, dd, path, before)
				})
			}
		})
	}
}

// TestCrashDuringUndo stops an undo at every crash point: afterwards the data dir is
// the applied state (undo rolled back) or the original one (undo done).
func TestCrashDuringUndo(t *testing.T) {
	for _, mode := range stepModes {
		t.Run(mode.name, func(t *testing.T) {
			setStepBytes(t, mode.bytes)
			testCrashDuringUndo(t)
		})
	}
}

func testCrashDuringUndo(t *testing.T) {
	setup := func(t *testing.T) (*datadir.DataDir, string, *Engine, string, state, state) {
		dd, path := newDataDir(t)
		seed(t, dd)
		before := dump(t, dd)
		e := newEngine(t, dd)
		res, err := e.Apply(ctx, samplePlan(t, dd), ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return dd, path, e, res.RunID, before, dump(t, dd)
	}
	_, _, e0, run0, _, _ := setup(t)
	steps := recordSteps(func() {
		if _, err := e0.Undo(ctx, run0, ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			dd, path, e, runID, before, after := setup(t)
			if !crashAt(t, e.JournalDir(), step)(func() { e.Undo(ctx, runID, ApplyOptions{}) }) {
				t.Fatal("did not reach the crash point")
			}
			want := after
			if step == "committed" {
				want = before
			}
			dd = recoverAndCheck(t, dd, path, want)
			// An interrupted undo can simply be run again.
			if step != "committed" {
				if _, err := newEngine(t, dd).Undo(ctx, runID, ApplyOptions{}); err != nil {
					t.Fatalf("undo after recovery: %v", err)
				}
				if d := before.diff(dump(t, dd)); d != "" {
					t.Errorf("undo after recovery:\n%s", d)
				}
			}
		})
	}
}

// TestCrashDuringRecovery stops a recovery's rollback at each point; the next
// recovery finishes it.
func TestCrashDuringRecovery(t *testing.T) {
	for _, step := range []string{"rollback-journaled", "rollback-item-5", "rollback-item-2", "rollback-item-0", "rolled-back"} {
		t.Run(step, func(t *testing.T) {
			dd, path := newDataDir(t)
			seed(t, dd)
			before := dump(t, dd)
			e := newEngine(t, dd)
			if !crashAt(t, e.JournalDir(), "applied")(func() { e.Apply(ctx, samplePlan(t, dd), ApplyOptions{}) }) {
				t.Fatal("apply did not crash")
			}
			dd = reopen(t, dd, path)
			e = newEngine(t, dd)
			if !crashAt(t, e.JournalDir(), step)(func() { e.Recover(ctx) }) {
				t.Fatal("recovery did not reach the crash point")
			}
			recoverAndCheck(t, dd, path, before)
		})
	}
}

// The real thing: the engine runs in a child process that SIGKILLs itself at a crash
// point; the parent then recovers the data dir.
const (
	envChildDir = "LEDGERMEDIC_MUTATE_CHILD_DIR"
	envCrashAt  = "LEDGERMEDIC_CRASH_AT"
	envPerItem  = "LEDGERMEDIC_MUTATE_PER_ITEM" // the child writes one item per step
)

// TestChildProcess is the child's body; it does nothing in a normal test run.
func TestChildProcess(t *testing.T) {
	dir := os.Getenv(envChildDir)
	if dir == "" {
		t.Skip("only runs as the child of TestKilledProcessRecovers")
	}
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, dd)
	if os.Getenv(envPerItem) != "" {
		e.StepBytes = 1
	}
	e.CrashHook = KillAt(os.Getenv(envCrashAt))
	e.Apply(ctx, samplePlan(t, dd), ApplyOptions{})
	t.Fatalf("not killed at %s", os.Getenv(envCrashAt))
}

// runKilledAt re-executes the test binary as a child that applies samplePlan to the
// data dir at path and is SIGKILLed at step. It fails the test unless the child died
// by that signal.
func runKilledAt(t *testing.T, path, step string, perItem bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChildDir+"="+path, envCrashAt+"="+step)
	if perItem {
		cmd.Env = append(cmd.Env, envPerItem+"=1")
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child at %s: %v\n%s", step, err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child at %s was not killed: %v\n%s", step, err, out)
	}
}

func TestKilledProcessRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs subprocesses")
	}
	for _, mode := range []struct {
		name    string
		perItem bool
		steps   []string
	}{
		// Batched: before any write, after the ledger step, after the node step, before commit.
		{"batched", false, []string{"journaled", "item-0", "item-5", "applied", "verified", "committed"}},
		// One write per step: between any two writes.
		{"per-item", true, []string{"item-0-entry-0", "item-2", "item-4"}},
	} {
		for _, step := range mode.steps {
			t.Run(mode.name+"/"+step, func(t *testing.T) {
				dd, path := newDataDir(t)
				seed(t, dd)
				before := dump(t, dd)
				after := applyModel(before, samplePlan(t, dd))
				if err := dd.Close(); err != nil {
					t.Fatal(err)
				}
				runKilledAt(t, path, step, mode.perItem)
				dd2, err := datadir.Open(path, store.Options{})
				if err != nil {
					t.Fatal(err)
				}
				want := before
				if step == "committed" {
					want = after
				}
				recoverAndCheck(t, dd2, path, want)
			})
		}
	}
}

// randomPlan builds a plan over the seeded nodes and a few new ones: each node is
// left alone, set, deleted (existing) or created (new); sometimes a new ledger.
func randomPlan(r *rand.Rand, t *testing.T, dd *datadir.DataDir) *Plan {
	p := &Plan{Command: "random"}
	for _, path := range []string{"/a", "/b", "/old", "/keep", "/empty", "/ledgers/00/0000/L0001"} {
		switch r.IntN(3) {
		case 1:
			p.Items = append(p.Items, Item{Kind: KindSet, Path: path, Expect: version(t, dd, path), After: randBytes(r)})
		case 2:
			p.Items = append(p.Items, Item{Kind: KindDelete, Path: path, Expect: version(t, dd, path)})
		}
	}
	for i := range r.IntN(3) {
		p.Items = append(p.Items, Item{Kind: KindCreate, Path: fmt.Sprintf("/new/%d", i), After: randBytes(r)})
	}
	if r.IntN(2) == 0 {
		l := Item{Kind: KindLedger, LedgerID: 200 + r.Int64N(5)}
		for e := range r.IntN(4) {
			l.Entries = append(l.Entries, LedgerEntry{EntryID: int64(e * 2), Value: randBytes(r)})
		}
		p.Items = append(p.Items, l)
	}
	r.Shuffle(len(p.Items), func(i, j int) { p.Items[i], p.Items[j] = p.Items[j], p.Items[i] })
	return p
}

func randBytes(r *rand.Rand) []byte {
	b := make([]byte, r.IntN(20))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// Property: applying a random plan then undoing it leaves every byte as before; and a
// crash at a random point, then recovery, leaves the before or after state.
func TestRandomPlansApplyUndo(t *testing.T) {
	for seedN := range uint64(25) {
		t.Run(fmt.Sprint(seedN), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seedN, 7))
			dd, path := newDataDir(t)
			seed(t, dd)
			before := dump(t, dd)
			plan := randomPlan(r, t, dd)
			after := applyModel(before, plan)
			e := newEngine(t, dd)
			mode := stepModes[r.IntN(len(stepModes))]
			setStepBytes(t, mode.bytes)

			if r.IntN(2) == 0 {
				steps := []string{"epoch", "journaled", "applied", "verified", "committed"}
				for i := range plan.Items {
					steps = append(steps, fmt.Sprintf("item-%d", i))
				}
				step := steps[r.IntN(len(steps))]
				if !crashAt(t, e.JournalDir(), step)(func() { e.Apply(ctx, plan, ApplyOptions{}) }) {
					t.Fatalf("no crash at %s", step)
				}
				recoverAndCheck(t, dd, path, before, after)
				return
			}
			res, err := e.Apply(ctx, plan, ApplyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d := after.diff(dump(t, dd)); d != "" {
				t.Fatalf("apply:\n%s", d)
			}
			if _, err := e.Undo(ctx, res.RunID, ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			if d := before.diff(dump(t, dd)); d != "" {
				t.Fatalf("undo:\n%s", d)
			}
		})
	}
}
