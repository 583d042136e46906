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

// state is a dump of a whole data dir: "node <path>" and "entry <ledger> <entry>"
// keys to their bytes.
type state map[string]string

func nodeKey(path string) string          { return "node " + path }
func entryKey(ledger, entry int64) string { return fmt.Sprintf("entry %d %d", ledger, entry) }

// dump reads every node and every ledger entry of the data dir.
func dump(t testing.TB, dd *datadir.DataDir) state {
	t.Helper()
	ctx := context.Background()
	s := state{}
	err := dd.Metadata.Walk(ctx, "", func(n store.Node) error {
		s[nodeKey(n.Path)] = string(n.Value)
		return nil
	})
	if err != nil {
		t.Fatalf("dump nodes: %v", err)
	}
	var ledgers []int64
	if err := dd.Ledgers.LedgerIDs(ctx, func(id, _ int64) error { ledgers = append(ledgers, id); return nil }); err != nil {
		t.Fatalf("dump ledger ids: %v", err)
	}
	for _, l := range ledgers {
		err := dd.Ledgers.Entries(ctx, l, 0, -1, func(e int64, v []byte) error {
			s[entryKey(l, e)] = string(v)
			return nil
		})
		if err != nil {
			t.Fatalf("dump ledger %d: %v", l, err)
		}
	}
	return s
}

// diff describes how got differs from want, "" when equal.
func (want state) diff(got state) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			out = append(out, "missing "+k)
		} else if g != want[k] {
			out = append(out, fmt.Sprintf("%s = %q, want %q", k, g, want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			out = append(out, "extra "+k)
		}
	}
	return strings.Join(out, "\n")
}

// applyModel returns what the plan should leave behind, computed without the store.
func applyModel(before state, p *Plan) state {
	s := maps.Clone(before)
	for _, it := range p.Items {
		switch it.Kind {
		case KindSet, KindCreate:
			s[nodeKey(it.Path)] = string(it.After)
		case KindDelete:
			delete(s, nodeKey(it.Path))
		case KindLedger:
			for _, e := range it.Entries {
				s[entryKey(it.LedgerID, e.EntryID)] = string(e.Value)
			}
		case KindDropLedger:
			for _, e := range it.Entries {
				delete(s, entryKey(it.LedgerID, e.EntryID))
			}
		}
	}
	return s
}

func newDataDir(t testing.TB) (*datadir.DataDir, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dd")
	dd, err := datadir.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd.Close() })
	return dd, path
}

// seed fills a data dir with a few nodes and two ledgers.
func seed(t testing.TB, dd *datadir.DataDir) {
	t.Helper()
	for _, n := range []struct{ path, value string }{
		{"/a", "a0"}, {"/b", "b0"}, {"/old", "old0"}, {"/keep", "k"},
		{"/ledgers/00/0000/L0001", "ledger 1 meta"}, {"/empty", ""},
	} {
		if _, err := dd.Metadata.CompareAndSet(n.path, 0, []byte(n.value)); err != nil {
			t.Fatal(err)
		}
	}
	for e := int64(0); e < 3; e++ {
		if err := dd.Ledgers.PutEntry(1, e, []byte(fmt.Sprintf("l1e%d", e))); err != nil {
			t.Fatal(err)
		}
	}
	if err := dd.Ledgers.PutEntry(5, 0, []byte("l5e0")); err != nil {
		t.Fatal(err)
	}
}

func version(t testing.TB, dd *datadir.DataDir, path string) uint64 {
	t.Helper()
	n, err := dd.Metadata.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return n.Version
}

// samplePlan exercises every kind a feature uses: a new ledger and its node, sets,
// a delete. Versions are read from dd as a feature would.
func samplePlan(t testing.TB, dd *datadir.DataDir) *Plan {
	t.Helper()
	return &Plan{
		Command: "schema repair",
		Args:    []string{"--topic", "orders"},
		Flags:   map[string]string{"allow-hash-mismatch": "true"},
		Notes:   []string{"test plan"},
		Items: []Item{
			{Kind: KindLedger, LedgerID: 100, Entries: []LedgerEntry{{0, []byte("e0")}, {1, []byte("e1")}}, Description: "schema ledger"},
			{Kind: KindCreate, Path: "/ledgers/00/0000/L0100", After: []byte("ledger 100 meta"), Description: "ledger node"},
			{Kind: KindSet, Path: "/a", Expect: version(t, dd, "/a"), Before: []byte("a0"), After: []byte("a1"), Description: "point a"},
			{Kind: KindDelete, Path: "/old", Expect: version(t, dd, "/old"), Description: "drop old"},
			{Kind: KindSet, Path: "/b", Expect: version(t, dd, "/b"), After: []byte("b1"), Description: "point b"},
			{Kind: KindSet, Path: "/empty", Expect: version(t, dd, "/empty"), After: []byte{}, Description: "same bytes"},
		},
	}
}

func newEngine(t testing.TB, dd *datadir.DataDir) *Engine {
	t.Helper()
	e, err := New(dd)
	if err != nil {
		t.Fatal(err)
	}
	e.CrashHook = func(step string) {
		if testHook != nil {
			testHook(step)
		}
	}
	e.StepBytes = testStepBytes
	return e
}

// The settings of the engines newEngine makes: testHook sees every crash point of
// each (the tests here stop runs from it), testStepBytes is their StepBytes.
var (
	testHook      func(step string)
	testStepBytes int
)

// reopen closes the data dir and opens it again, writable, as a new process would.
func reopen(t testing.TB, dd *datadir.DataDir, path string) *datadir.DataDir {
	t.Helper()
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
	dd2, err := datadir.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd2.Close() })
	return dd2
}

// errCrash is what the in-process crash hook panics with.
var errCrash = errors.New("simulated crash")

// crashAt makes testHook panic at step, after checking the journal parses there.
// It returns the function that runs fn and reports whether the crash happened.
func crashAt(t *testing.T, journal, step string) func(fn func()) bool {
	t.Helper()
	return func(fn func()) (crashed bool) {
		testHook = func(s string) {
			if _, err := List(journal); err != nil {
				t.Errorf("at step %s the journal does not parse: %v", s, err)
			}
			if s == step {
				panic(errCrash)
			}
		}
		defer func() {
			testHook = nil
			if r := recover(); r != nil {
				if r != errCrash {
					panic(r)
				}
				crashed = true
			}
		}()
		fn()
		return false
	}
}

// recordSteps returns the crash points fn passes through.
func recordSteps(fn func()) []string {
	var steps []string
	testHook = func(s string) { steps = append(steps, s) }
	defer func() { testHook = nil }()
	fn()
	return steps
}

// snapshotDir returns every file's bytes under dir, for "writes nothing" checks.
func snapshotDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stepModes are the two ways a run's writes can be grouped: the default (the whole
// run in a few store transactions) and one item, or ledger entry, per transaction,
// which puts a crash point between any two writes.
var stepModes = []struct {
	name  string
	bytes int
}{{"batched", stepBytes}, {"per-item", 1}}

// setStepBytes sets the step size of the engines newEngine makes, for one test.
func setStepBytes(t testing.TB, n int) {
	old := testStepBytes
	testStepBytes = n
	t.Cleanup(func() { testStepBytes = old })
}

// appliedSample is a seeded data dir (and its path) with samplePlan applied by
// the engine it returns, and the run's result.
func appliedSample(t testing.TB) (*datadir.DataDir, string, *Engine, *Result) {
	t.Helper()
	dd, path := newDataDir(t)
	seed(t, dd)
	e := newEngine(t, dd)
	res, err := e.Apply(ctx, samplePlan(t, dd), ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dd, path, e, res
}
