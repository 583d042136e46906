package mutate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

// seriesRuns and seriesNodes shape the series tests: run r sets nodes /s/r/0.. from
// "r-i-0" to "r-i-1".
const seriesRuns, seriesNodes = 5, 3

func seriesPath(r, i int) string { return fmt.Sprintf("/s/%d/%d", r, i) }

func seedSeries(t testing.TB, dd *datadir.DataDir) {
	t.Helper()
	for r := range seriesRuns {
		for i := range seriesNodes {
			if _, err := dd.Metadata.CompareAndSet(seriesPath(r, i), 0, fmt.Appendf(nil, "%d-%d-0", r, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// seriesPlans are the plans of the series, with before-images and versions as a
// walk would have read them (for TrustBefore).
func seriesPlans(t testing.TB, dd *datadir.DataDir) []*Plan {
	t.Helper()
	var plans []*Plan
	for r := range seriesRuns {
		p := &Plan{Command: "index backfill"}
		for i := range seriesNodes {
			path := seriesPath(r, i)
			n, err := dd.Metadata.Get(path)
			if err != nil {
				t.Fatal(err)
			}
			p.Items = append(p.Items, Item{Kind: KindSet, Path: path, Expect: n.Version, Before: n.Value, After: fmt.Appendf(nil, "%d-%d-1", r, i)})
		}
		plans = append(plans, p)
	}
	return plans
}

type seriesOutcome struct {
	plan *Plan
	res  *Result
	err  error
}

func runSeries(t *testing.T, e *Engine, plans []*Plan) (map[*Plan]seriesOutcome, error) {
	t.Helper()
	var mu sync.Mutex
	out := map[*Plan]seriesOutcome{}
	s, err := e.StartSeries(ctx, ApplyOptions{TrustBefore: true}, func(p *Plan, r *Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := out[p]; dup {
			t.Errorf("plan reported twice")
		}
		out[p] = seriesOutcome{p, r, err}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if err := s.Apply(p); err != nil {
			break
		}
	}
	err = s.Close()
	if len(out) != len(plans) {
		t.Errorf("%d of %d plans reported", len(out), len(plans))
	}
	return out, err
}

// startSeriesTest seeds a data dir for the series plans and returns it with a
// recovered engine, the plans, the dump before them and the dump they should leave.
func startSeriesTest(t *testing.T) (dd *datadir.DataDir, e *Engine, plans []*Plan, before, want state) {
	dd, _ = newDataDir(t)
	seedSeries(t, dd)
	before = dump(t, dd)
	plans = seriesPlans(t, dd)
	want = before
	for _, p := range plans {
		want = applyModel(want, p)
	}
	e = newEngine(t, dd)
	if _, err := e.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	return dd, e, plans, before, want
}

// A series commits every run, each its own journaled run that undo reverts alone.
func TestSeriesAppliesEveryRun(t *testing.T) {
	dd, e, plans, before, want := startSeriesTest(t)
	var fileSyncs, dirSyncs atomic.Int64 // the stages fsync concurrently
	e.OnSync = func(path string) {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			dirSyncs.Add(1)
		} else {
			fileSyncs.Add(1)
		}
	}
	out, err := runSeries(t, e, plans)
	e.OnSync = nil
	if err != nil {
		t.Fatal(err)
	}
	// Files: the epoch once, two a run (the applying record; the commit's append).
	if want := int64(1 + 2*seriesRuns); fileSyncs.Load() != want {
		t.Errorf("%d journal file fsyncs, want %d", fileSyncs.Load(), want)
	}
	// The folder: at most one a run; runs journaled at once share one (syncDir).
	if n := dirSyncs.Load(); n < 1 || n > seriesRuns {
		t.Errorf("%d journal folder fsyncs, want 1..%d", n, seriesRuns)
	}
	for i, p := range plans {
		if o := out[p]; o.err != nil || o.res.State != StateCommitted || !o.res.Verified {
			t.Errorf("run %d: %+v, %v", i, o.res, o.err)
		}
	}
	if d := want.diff(dump(t, dd)); d != "" {
		t.Fatalf("after the series:\n%s", d)
	}
	// Undo the middle run: only its nodes go back.
	if _, err := e.Undo(ctx, out[plans[2]].res.RunID, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range seriesNodes {
		want[nodeKey(seriesPath(2, i))] = before[nodeKey(seriesPath(2, i))]
	}
	if d := want.diff(dump(t, dd)); d != "" {
		t.Errorf("after undoing run 2:\n%s", d)
	}
}

// Runs are written seriesWriters at once: a run held after its write (before its
// verification) does not keep the next run from being written. With one writer
// the second "applied" would never come while the first is held.
func TestSeriesWritesRunsAtOnce(t *testing.T) {
	dd, e, plans, _, want := startSeriesTest(t)
	var applied atomic.Int64
	second := make(chan struct{})
	var overlapped atomic.Bool
	e.CrashHook = func(step string) {
		if step != "applied" {
			return
		}
		switch applied.Add(1) {
		case 1: // the first run written: hold it until another one is written too
			select {
			case <-second:
				overlapped.Store(true)
			case <-time.After(10 * time.Second):
			}
		case 2:
			close(second)
		}
	}
	out, err := runSeries(t, e, plans)
	e.CrashHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if !overlapped.Load() {
		t.Fatal("no run was written while the first written run waited for its verification")
	}
	for i, p := range plans {
		if o := out[p]; o.err != nil || o.res.State != StateCommitted || !o.res.Verified {
			t.Errorf("run %d: %+v, %v", i, o.res, o.err)
		}
	}
	if d := want.diff(dump(t, dd)); d != "" {
		t.Fatalf("after the series:\n%s", d)
	}
}

// A run refused because one of its nodes changed since the plan read it writes
// nothing and does not stop the series.
func TestSeriesRefusedRunDoesNotStop(t *testing.T) {
	dd, _ := newDataDir(t)
	seedSeries(t, dd)
	plans := seriesPlans(t, dd)
	if _, err := dd.Metadata.CompareAndSet(seriesPath(1, 2), plans[1].Items[2].Expect, []byte("broker")); err != nil {
		t.Fatal(err)
	}
	want := dump(t, dd)
	for i, p := range plans {
		if i != 1 {
			want = applyModel(want, p)
		}
	}
	out, err := runSeries(t, newEngine(t, dd), plans)
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	for i, p := range plans {
		o := out[p]
		if i == 1 {
			if !errors.Is(o.err, store.ErrVersionMismatch) || o.res == nil || o.res.State != StateRolledBack {
				t.Errorf("stale run: %+v, %v; want rolled back with a version mismatch", o.res, o.err)
			}
		} else if o.err != nil {
			t.Errorf("run %d: %v", i, o.err)
		}
	}
	if d := want.diff(dump(t, dd)); d != "" {
		t.Errorf("after the series:\n%s", d)
	}
}

// A plan that touches a node of a run in flight waits for that run: here the second
// plan, read before the first ran, is then refused by its preflight, and the node
// holds the first run's bytes.
func TestSeriesOverlappingPlansWait(t *testing.T) {
	dd, _ := newDataDir(t)
	seedSeries(t, dd)
	plans := seriesPlans(t, dd)
	second := &Plan{Command: "other", Items: []Item{{Kind: KindSet, Path: seriesPath(0, 0), Expect: plans[0].Items[0].Expect, After: []byte("second")}}}
	want := applyModel(dump(t, dd), plans[0])
	out, err := runSeries(t, newEngine(t, dd), []*Plan{plans[0], second})
	if err != nil {
		t.Fatal(err)
	}
	if o := out[second]; !errors.Is(o.err, store.ErrVersionMismatch) || o.res.State != StateRefused {
		t.Errorf("second plan: %+v, %v; want refused", o.res, o.err)
	}
	if d := want.diff(dump(t, dd)); d != "" {
		t.Errorf("after the series:\n%s", d)
	}
}

// A failure that is not a refusal (here: a plan whose run id is taken) stops the
// series: a run journaled but not yet written when it happened is rolled back, one
// already written finishes; nothing is left applying.
func TestSeriesStopsOnFailure(t *testing.T) {
	dd, _ := newDataDir(t)
	seedSeries(t, dd)
	before := dump(t, dd)
	plans := seriesPlans(t, dd)
	e := newEngine(t, dd)
	plans[0].RunID = "dup"
	plans[1].RunID = "dup" // the second record cannot be created
	out, err := runSeries(t, e, plans[:2])
	if err == nil || !errors.Is(out[plans[1]].err, ErrInvalidPlan) {
		t.Fatalf("close = %v, second = %v; want the invalid plan to stop the series", err, out[plans[1]].err)
	}
	want := before
	switch first := out[plans[0]]; {
	case first.err == nil:
		want = applyModel(before, plans[0])
	case errors.Is(first.err, ErrSeriesStopped) && first.res.State == StateRolledBack:
	default:
		t.Errorf("first run: %+v, %v", first.res, first.err)
	}
	if d := want.diff(dump(t, dd)); d != "" {
		t.Errorf("after the series:\n%s", d)
	}
	runs, _ := List(e.JournalDir())
	for _, r := range runs {
		if !r.State.Finished() {
			t.Errorf("run %s left %s", r.RunID, r.State)
		}
	}
}

// The real thing for a series: the child applies the series and SIGKILLs itself at
// the nth time any run reaches a crash point; afterwards recovery leaves every run
// either wholly applied or wholly not, and nothing unfinished.
const (
	envSeriesDir = "LEDGERMEDIC_SERIES_CHILD_DIR"
	envSeriesNth = "LEDGERMEDIC_SERIES_CRASH_NTH"
)

func TestSeriesChildProcess(t *testing.T) {
	dir := os.Getenv(envSeriesDir)
	if dir == "" {
		t.Skip("only runs as the child of TestSeriesKilledProcessRecovers")
	}
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(dd)
	if err != nil {
		t.Fatal(err)
	}
	nth, _ := strconv.Atoi(os.Getenv(envSeriesNth))
	var mu sync.Mutex
	seen := 0
	kill := KillAt(os.Getenv(envCrashAt))
	e.CrashHook = func(step string) {
		if step != os.Getenv(envCrashAt) {
			return
		}
		mu.Lock()
		seen++
		n := seen
		mu.Unlock()
		if n == nth {
			kill(step)
		}
	}
	runSeries(t, e, seriesPlans(t, dd))
	t.Fatalf("not killed at %s #%d", os.Getenv(envCrashAt), nth)
}

func TestSeriesKilledProcessRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs subprocesses")
	}
	for _, step := range []string{"journaled", "item-1", "applied", "verified", "committed"} {
		for _, nth := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s#%d", step, nth), func(t *testing.T) {
				dd, path := newDataDir(t)
				seedSeries(t, dd)
				before := dump(t, dd)
				if err := dd.Close(); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(os.Args[0], "-test.run=^TestSeriesChildProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), envSeriesDir+"="+path, envCrashAt+"="+step, envSeriesNth+"="+strconv.Itoa(nth))
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("child: %v\n%s", err, out)
				}
				if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("child was not killed: %v\n%s", err, out)
				}
				dd, err = datadir.Open(path, store.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dd.Close() })
				e := newEngine(t, dd)
				if _, err := e.Recover(ctx); err != nil {
					t.Fatalf("recover: %v", err)
				}
				got := dump(t, dd)
				applied := 0
				for r := range seriesRuns {
					ends := map[string]bool{}
					for i := range seriesNodes {
						v := got[nodeKey(seriesPath(r, i))]
						if v != before[nodeKey(seriesPath(r, i))] && v != fmt.Sprintf("%d-%d-1", r, i) {
							t.Fatalf("node %s holds %q", seriesPath(r, i), v)
						}
						ends[v[len(v)-1:]] = true
					}
					if len(ends) != 1 {
						t.Errorf("run %d is a mixture after recovery: %v", r, ends)
					}
					if ends["1"] {
						applied++
					}
				}
				runs, err := List(e.JournalDir())
				if err != nil {
					t.Fatal(err)
				}
				committed := 0
				for _, r := range runs {
					if !r.State.Finished() {
						t.Errorf("run %s is %s after recovery", r.RunID, r.State)
					}
					if r.State == StateCommitted {
						committed++
					}
				}
				if committed != applied {
					t.Errorf("%d runs committed but %d applied", committed, applied)
				}
				t.Logf("killed at %s #%d: %d of %d runs stand", step, nth, applied, seriesRuns)
			})
		}
	}
}
