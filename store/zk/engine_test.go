package zk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
	zkstore "github.com/ledgermedic/ledgermedic/store/zk"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// The mutation engine on a live ZooKeeper: the data dir holds the journal and the
// ledgers, the metadata is the server's.

// zkJournalDir makes an empty data dir for the journal and ledger store.
func zkJournalDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dd")
	d, err := datadir.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// zkEngine opens the data dir with its metadata on the ZooKeeper at addr.
func zkEngine(t testing.TB, dir, addr string) (*datadir.DataDir, *mutate.Engine) {
	t.Helper()
	u, err := store.ParseMetadataURL("zk://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := datadir.Open(dir, store.Options{Metadata: &u})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd.Close() })
	e, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	return dd, e
}

// setPlan sets each node to its new value at the version the store holds now.
func setPlan(t testing.TB, dd *datadir.DataDir, want map[string][]byte) *mutate.Plan {
	t.Helper()
	p := &mutate.Plan{Command: "test set"}
	for _, path := range slices.Sorted(maps.Keys(want)) {
		n, err := dd.Metadata.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		p.Items = append(p.Items, mutate.Item{Kind: mutate.KindSet, Path: path, Expect: n.Version, After: want[path]})
	}
	return p
}

// sameTree reports the differences between two trees (path -> value).
func sameTree(want, got map[string]string) string {
	var diffs []string
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if g != want[p] {
			diffs = append(diffs, fmt.Sprintf("%s: %d bytes, want %d", p, len(g), len(want[p])))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	return strings.Join(diffs, "; ")
}

func TestZKEngineApplyUndo(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	seedNodes := map[string][]byte{
		"/m/a": []byte("a0"), "/m/b": {0, 1, 0xff, 0xfe}, "/m/old": []byte("old0"), "/m/empty": {},
	}
	for p, v := range seedNodes {
		zkCreateAll(t, raw, p, v)
	}
	before := zkTree(t, raw, "/m")
	dd, e := zkEngine(t, zkJournalDir(t), srv.Addr)
	ver := func(p string) uint64 {
		n, err := dd.Metadata.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		return n.Version
	}
	plan := &mutate.Plan{Command: "test", Items: []mutate.Item{
		{Kind: mutate.KindSet, Path: "/m/a", Expect: ver("/m/a"), After: []byte("a1")},
		{Kind: mutate.KindSet, Path: "/m/b", Expect: ver("/m/b"), After: []byte{0xff, 0, 7}},
		{Kind: mutate.KindSet, Path: "/m/empty", Expect: ver("/m/empty"), After: []byte("now full")},
		{Kind: mutate.KindDelete, Path: "/m/old", Expect: ver("/m/old")},
		{Kind: mutate.KindCreate, Path: "/m/new/deep/c", After: []byte("c")},
	}}
	res, err := e.Apply(context.Background(), plan, mutate.ApplyOptions{})
	if err != nil || res.State != mutate.StateCommitted || !res.Verified {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	wantAfter := map[string]string{
		"/m/a": "a1", "/m/b": "\xff\x00\x07", "/m/empty": "now full",
		"/m/new": "", "/m/new/deep": "", "/m/new/deep/c": "c",
	}
	if d := sameTree(wantAfter, zkTree(t, raw, "/m")); d != "" {
		t.Fatalf("after apply: %s", d)
	}
	if _, err := e.Undo(context.Background(), res.RunID, mutate.ApplyOptions{}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	// Every node as before, byte for byte. The parents the create made stay as
	// empty containers (ZooKeeper reaps them, as it does Pulsar's, on its next
	// container sweep).
	after := zkTree(t, raw, "/m")
	for _, p := range []string{"/m/new", "/m/new/deep"} {
		if v, ok := after[p]; ok && v == "" {
			delete(after, p)
		}
	}
	if d := sameTree(before, after); d != "" {
		t.Fatalf("after undo: %s", d)
	}
}

// zkBigPlan is n nodes of 300 kB each: the engine writes them in several multis
// (about 1 MB each), so a kill between two of them leaves a mixture on the server
// that only the journal can undo.
func zkBigValues(n int, fill byte) map[string][]byte {
	out := map[string][]byte{}
	for i := range n {
		v := bytes.Repeat([]byte{fill}, 300_000)
		copy(v, fmt.Sprintf("node %d", i))
		out[fmt.Sprintf("/k/n%02d", i)] = v
	}
	return out
}

func asTree(m map[string][]byte) map[string]string {
	out := map[string]string{}
	for p, v := range m {
		out[p] = string(v)
	}
	return out
}

// TestZKEngineKilledServer kills the server right after the first of three multis
// committed: the run fails, the server holds a mixture, and the next start's
// recovery (after the server is back) restores the state before the run; a re-run
// then applies fully.
func TestZKEngineKilledServer(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	beforeVals, afterVals := zkBigValues(8, 'b'), zkBigValues(8, 'A')
	for p, v := range beforeVals {
		zkCreateAll(t, raw, p, v)
	}
	dir := zkJournalDir(t)
	dd, e := zkEngine(t, dir, srv.Addr)
	plan := setPlan(t, dd, afterVals)

	e.CrashHook = func(step string) {
		if step == "item-0" { // the first multi is committed
			srv.Kill()
		}
	}
	_, err := e.Apply(context.Background(), plan, mutate.ApplyOptions{})
	e.CrashHook = nil
	if err == nil || !strings.Contains(err.Error(), "the next start finishes it") {
		t.Fatalf("apply against a killed server = %v", err)
	}
	dd.Close()

	srv.Restart()
	raw = testutil.ZKClient(t, srv.Addr)
	mixed := zkTree(t, raw, "/k")
	if sameTree(asTree(beforeVals), mixed) == "" || sameTree(asTree(afterVals), mixed) == "" {
		t.Fatal("the kill did not land between two multis: the test proves nothing")
	}
	dd, e = zkEngine(t, dir, srv.Addr)
	reports, err := e.Recover(context.Background())
	if err != nil || len(reports) != 1 || reports[0].State != mutate.StateRolledBack {
		t.Fatalf("recover = %+v, %v", reports, err)
	}
	if d := sameTree(asTree(beforeVals), zkTree(t, raw, "/k")); d != "" {
		t.Fatalf("after recovery: %s", d)
	}
	res, err := e.Apply(context.Background(), setPlan(t, dd, afterVals), mutate.ApplyOptions{})
	if err != nil || res.State != mutate.StateCommitted {
		t.Fatalf("re-run = %+v, %v", res, err)
	}
	if d := sameTree(asTree(afterVals), zkTree(t, raw, "/k")); d != "" {
		t.Fatalf("after the re-run: %s", d)
	}
}

// TestZKEngineKillAnytime kills the server at a few moments of a run of four
// multis: after restart and recovery the nodes are all before or all after.
func TestZKEngineKillAnytime(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	beforeVals := zkBigValues(12, 'b')
	for p, v := range beforeVals {
		zkCreateAll(t, raw, p, v)
	}
	dir := zkJournalDir(t)
	// An undisturbed run first, to time the kills at fractions of a run.
	dd, e := zkEngine(t, dir, srv.Addr)
	beforeVals = zkBigValues(12, 'B')
	start := time.Now()
	if _, err := e.Apply(context.Background(), setPlan(t, dd, beforeVals), mutate.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	run := time.Since(start)
	dd.Close()
	for round, frac := range []float64{0.3, 0.6, 0.9} {
		delay := time.Duration(frac * float64(run))
		prev := zkTree(t, raw, "/k")
		afterVals := zkBigValues(12, byte('C'+round))
		dd, e := zkEngine(t, dir, srv.Addr)
		plan := setPlan(t, dd, afterVals)
		done := make(chan error, 1)
		go func() {
			_, err := e.Apply(context.Background(), plan, mutate.ApplyOptions{})
			done <- err
		}()
		time.Sleep(delay)
		srv.Kill()
		applyErr := <-done
		dd.Close()
		srv.Restart()
		raw = testutil.ZKClient(t, srv.Addr)
		dd, e = zkEngine(t, dir, srv.Addr)
		if _, err := e.Recover(context.Background()); err != nil {
			t.Fatalf("round %d: recover: %v", round, err)
		}
		got := zkTree(t, raw, "/k")
		if sameTree(prev, got) != "" && sameTree(asTree(afterVals), got) != "" {
			t.Fatalf("round %d (kill after %v, apply: %v): a mixture: vs before: %s", round, delay, applyErr, sameTree(prev, got))
		}
		t.Logf("round %d: kill after %v of a %v run: %s (apply: %v)", round, delay, run, map[bool]string{true: "before", false: "applied"}[sameTree(prev, got) == ""], applyErr)
		dd.Close()
	}
}

// TestZKEngineOutcomeUnknown cuts the connection after the run's multi reached the
// server: the engine reads the nodes back and rolls back; the re-run applies.
func TestZKEngineOutcomeUnknown(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	proxy := startDropProxy(t, srv.Addr)
	before := map[string][]byte{"/k/a": []byte("a0"), "/k/b": []byte("b0")}
	for p, v := range before {
		zkCreateAll(t, raw, p, v)
	}
	after := map[string][]byte{"/k/a": bytes.Repeat([]byte("A"), 60_000), "/k/b": bytes.Repeat([]byte("B"), 60_000)}
	dd, e := zkEngine(t, zkJournalDir(t), proxy.addr)
	proxy.arm(100_000)
	_, err := e.Apply(context.Background(), setPlan(t, dd, after), mutate.ApplyOptions{})
	if !errors.Is(err, zkstore.ErrOutcomeUnknown) || !errors.Is(err, mutate.ErrRolledBack) {
		t.Fatalf("apply with a cut connection = %v", err)
	}
	if d := sameTree(asTree(before), zkTree(t, raw, "/k")); d != "" {
		t.Fatalf("after the rolled-back run: %s", d)
	}
	if _, err := e.Apply(context.Background(), setPlan(t, dd, after), mutate.ApplyOptions{}); err != nil {
		t.Fatalf("re-run: %v", err)
	}
	if d := sameTree(asTree(after), zkTree(t, raw, "/k")); d != "" {
		t.Fatalf("after the re-run: %s", d)
	}
}
