package repair

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// Environment of the crash child: the test binary re-run as a repair process.
const (
	envCrashDir     = "LEDGERMEDIC_REPAIR_CRASH_DIR"
	envCrashInput   = "LEDGERMEDIC_REPAIR_CRASH_INPUT"
	envCrashStep    = "LEDGERMEDIC_REPAIR_CRASH_STEP"
	crashChildClock = 1_700_000_000_000 // ms; a fixed ctime makes the repaired state reproducible
)

func TestMain(m *testing.M) {
	if zkAddr := os.Getenv(envBKCrashZK); zkAddr != "" {
		os.Exit(bkCrashChild(os.Getenv(envCrashDir), zkAddr, os.Getenv(envCrashInput), os.Getenv(envCrashStep)))
	}
	if dir := os.Getenv(envCrashDir); dir != "" {
		os.Exit(crashChild(dir, os.Getenv(envCrashInput), os.Getenv(envCrashStep)))
	}
	os.Exit(m.Run())
}

// crashStep is the crash point where the child's engine kills the process ("": none).
var crashStep string

// crashChild runs `schema repair --apply` in-process and is SIGKILLed by the engine's
// crash hook at step.
func crashChild(dir, input, step string) int {
	crashStep = step
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer dd.Close()
	if err := repairOnce(context.Background(), dd, input); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func repairOnce(ctx context.Context, dd *datadir.DataDir, input string) error {
	eng, err := mutate.New(dd)
	if err != nil {
		return err
	}
	if crashStep != "" {
		eng.CrashHook = mutate.KillAt(crashStep)
	}
	if _, err := eng.Recover(ctx); err != nil {
		return err
	}
	cands, _, err := LoadCandidates([]string{input})
	if err != nil {
		return err
	}
	rp, err := Plan(ctx, dd, cands, Options{Now: func() time.Time { return time.UnixMilli(crashChildClock) }})
	if err != nil {
		return err
	}
	_, err = Apply(ctx, eng, rp, mutate.ApplyOptions{})
	return err
}

// readState is everything Pulsar would see: metadata nodes and ledger entries.
func readState(t *testing.T, dir string) testutil.Snapshot {
	t.Helper()
	dd := openRW(t, dir) // a writable open lets Badger replay a log cut by SIGKILL
	defer closeDD(t, dd)
	return testutil.DumpStore(t, dd)
}

// TestCrashDuringApply kills a real repair process at every crash point of the
// engine. After the next start (Recover) the data dir equals the state before the
// repair or the fully repaired state, never a mixture; a committed run undoes to
// the state before, byte for byte.
func TestCrashDuringApply(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	src, m := testutil.Fixture(t, fixtures.Options{Seed: 21, LoseSchemaLedgers: 2, LoseSchemaEntries: 1})
	input := manifestCapture(t, m, nil)
	before := readState(t, src)

	// The fully repaired state, and the plan's size, from an uninterrupted run.
	ref := filepath.Join(t.TempDir(), "ref")
	testutil.CopyDir(t, src, ref)
	dd := openRW(t, ref)
	rp, err := Plan(context.Background(), dd, loadCands(t, input), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := repairOnce(context.Background(), dd, input); err != nil {
		t.Fatal(err)
	}
	closeDD(t, dd)
	repaired := readState(t, ref)
	if repaired.Equal(before) {
		t.Fatal("the repair changed nothing")
	}

	steps := []string{"epoch", "journaled"}
	for i, it := range rp.Plan.Items {
		if it.Kind == mutate.KindLedger {
			steps = append(steps, fmt.Sprintf("item-%d-entry-0", i))
		}
		steps = append(steps, "item-"+strconv.Itoa(i))
	}
	steps = append(steps, "applied", "verified", "committed")

	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dd")
			testutil.CopyDir(t, src, dir)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashInput+"="+input, envCrashStep+"="+step)
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
				t.Fatalf("child was not killed at %s: %v\n%s", step, err, out)
			}
			// Next start: recover.
			dd := openRW(t, dir)
			eng, err := mutate.New(dd)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			runs, err := mutate.List(eng.JournalDir())
			closeDD(t, dd)
			if err != nil || len(runs) > 1 {
				t.Fatalf("journal: %v %+v", err, runs)
			}
			got := readState(t, dir)
			if len(runs) == 0 { // killed before the run was journaled
				if d := before.Diff(got); d != nil {
					t.Fatalf("killed at %s before journaling, yet the data dir changed: %v", step, d)
				}
				return
			}
			switch {
			case got.Equal(before):
				if runs[0].State == mutate.StateCommitted {
					t.Fatal("a committed run left the before state")
				}
			case got.Equal(repaired):
				if runs[0].State != mutate.StateCommitted {
					t.Fatalf("repaired state but the run is %s", runs[0].State)
				}
				dd := openRW(t, dir)
				eng, err := mutate.New(dd)
				if err == nil {
					_, err = eng.Undo(context.Background(), runs[0].RunID, mutate.ApplyOptions{})
				}
				closeDD(t, dd)
				if err != nil {
					t.Fatal(err)
				}
				if d := before.Diff(readState(t, dir)); d != nil {
					t.Fatalf("undo did not restore every node and entry byte for byte: %v", d)
				}
			default:
				t.Fatalf("after a kill at %s and recovery the data dir is a mixture (run %s)", step, runs[0].State)
			}
		})
	}
}
