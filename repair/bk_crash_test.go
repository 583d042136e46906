package repair

import (
	"context"
	"errors"
	"fmt"
	"github.com/ledgermedic/ledgermedic/datadir"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"

	_ "github.com/ledgermedic/ledgermedic/store/bookkeeper" // bk:
)

// Environment of the live crash child: a repair against ZooKeeper and real
// bookies (--ledgers bk:), killed by the engine's crash hook.
const envBKCrashZK = "LEDGERMEDIC_REPAIR_BK_CRASH_ZK"

// openLive opens dir's journal with ZooKeeper at zkAddr and its bookies.
func openLive(dir, zkAddr string) (*datadir.DataDir, error) {
	mu, err := store.ParseMetadataURL("zk://" + zkAddr)
	if err != nil {
		return nil, err
	}
	lu, err := store.ParseLedgersURL("bk:")
	if err != nil {
		return nil, err
	}
	return datadir.Open(dir, store.Options{Metadata: &mu, Ledgers: &lu})
}

// bkCrashChild is `schema repair --apply --ledgers bk:` in a process the crash
// hook SIGKILLs at step ("": runs to the end).
func bkCrashChild(dir, zkAddr, input, step string) int {
	dd, err := openLive(dir, zkAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer dd.Close()
	if err := repairLive(context.Background(), dd, input, step, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func repairLive(ctx context.Context, dd *datadir.DataDir, input, step string, hook func(string)) error {
	eng, err := mutate.New(dd)
	if err != nil {
		return err
	}
	switch {
	case step != "":
		eng.CrashHook = mutate.KillAt(step)
	case hook != nil:
		eng.CrashHook = hook
	}
	if _, err := eng.Recover(ctx); err != nil {
		return err
	}
	cands, _, err := LoadCandidates([]string{input})
	if err != nil {
		return err
	}
	rp, err := Plan(ctx, dd, cands, Options{TakeLedgerIDs: true})
	if err != nil {
		return err
	}
	_, err = Apply(ctx, eng, rp, mutate.ApplyOptions{})
	return err
}

// liveState is what a broker would see: the locators and every ledger node.
type liveState struct {
	locators map[string][]byte
	ledgers  map[int64]*bkpb.LedgerMetadataFormat
}

func readLive(t *testing.T, ms store.MetadataStore) liveState {
	t.Helper()
	st := liveState{locators: map[string][]byte{}, ledgers: map[int64]*bkpb.LedgerMetadataFormat{}}
	err := ms.Walk(t.Context(), "/", func(n store.Node) error {
		switch formats.ClassifyPath(n.Path) {
		case formats.NodeSchemaLocator:
			st.locators[n.Path] = append([]byte(nil), n.Value...)
		case formats.NodeLedgerMetadata:
			id, _ := formats.ParseLedgerPath(n.Path)
			md, err := formats.DecodeLedgerMetadata(n.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Path, err)
			}
			st.ledgers[id] = md
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// referenced is every ledger a locator names.
func (s liveState) referenced(t *testing.T) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	for p, v := range s.locators {
		loc, err := formats.DecodeSchemaLocator(v)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, ie := range loc.GetIndex() {
			out[ie.GetPosition().GetLedgerId()] = true
		}
	}
	return out
}

// TestBKRepairKilled kills `schema repair --apply` on real bookies after each
// write step, re-runs it, and checks at every point that no locator names a
// ledger that is not CLOSED with its entry on every bookie of its write set,
// and after the re-run that the repair is fully applied with no ledger node
// left that nothing references (a half-made ledger is deleted by recovery).
func TestBKRepairKilled(t *testing.T) {
	c := testutil.StartBookKeeper(t, testutil.BKOptions{})
	vs, ms := c.WriteSchemas(t)
	dir := t.TempDir()
	input := filepath.Join(t.TempDir(), "capture.jsonl")
	captureLive(t, dir, c.ZK.Addr, input)
	lost := []testutil.BKSchemaVersion{vs[1], vs[2]}
	for _, v := range lost {
		if _, err := c.Tool("delete", "--ledger", fmt.Sprint(v.Ledger)); err != nil {
			t.Fatal(err)
		}
	}
	before := readLive(t, ms)
	// Items: 0 orders v1's ledger, 1 orders' locator, 2 users v0's ledger, 3
	// users' locator. "epoch": the ids are taken, nothing is journaled yet;
	// "item-2": both ledgers read back, before the locator write.
	steps := []string{"epoch", "journaled", "item-0-created", "item-0-add-0", "item-0-add-1", "item-0-closed", "item-0",
		"item-2-created", "item-2-add-1", "item-2-closed", "item-2", "item-1", "applied", "verified", "committed"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			if code := runBKChild(t, dir, c.ZK.Addr, input, step); code != -1 {
				t.Fatalf("the child was not killed at %s (exit %d)", step, code)
			}
			checkReadable(t, dir, c.ZK.Addr, readLive(t, ms))
			if code := runBKChild(t, dir, c.ZK.Addr, input, ""); code != 0 {
				t.Fatalf("re-run after a kill at %s: exit %d", step, code)
			}
			after := readLive(t, ms)
			checkApplied(t, dir, c.ZK.Addr, before, after, lost)
			undoLast(t, dir, c.ZK.Addr)
			if got := readLive(t, ms); !sameLocators(got, before) || len(got.ledgers) != len(before.ledgers) {
				t.Fatalf("after undo: %d ledger nodes (want %d), locators restored: %v", len(got.ledgers), len(before.ledgers), sameLocators(got, before))
			}
		})
	}

	// A bookie of the new ledgers' ensemble killed after the first node is
	// created: the adds to it fail, the run is rolled back (the node deleted),
	// and once the bookie is back a re-run is applied.
	t.Run("bookie-killed", func(t *testing.T) {
		tmpl := before.ledgers[vs[0].Ledger].GetSegment()[0].GetEnsembleMember()
		victim := c.Bookie(tmpl[0])
		dd, err := openLive(dir, c.ZK.Addr)
		if err != nil {
			t.Fatal(err)
		}
		err = repairLive(t.Context(), dd, input, "", func(step string) {
			if step == "item-0-created" {
				victim.Kill()
			}
		})
		dd.Close()
		if err == nil || !errors.Is(err, mutate.ErrRolledBack) || !strings.Contains(err.Error(), victim.ID) {
			t.Fatalf("repair with a bookie killed: %v (want rolled back, naming bookie %s)", err, victim.ID)
		}
		if got := readLive(t, ms); !sameLocators(got, before) || len(got.ledgers) != len(before.ledgers) {
			t.Fatalf("after the failed run: %d ledger nodes (want %d)", len(got.ledgers), len(before.ledgers))
		}
		victim.Restart()
		if code := runBKChild(t, dir, c.ZK.Addr, input, ""); code != 0 {
			t.Fatalf("re-run with bookie %s back: exit %d; its log ends:\n%s", victim.ID, code, victim.LogTail())
		}
		after := readLive(t, ms)
		checkApplied(t, dir, c.ZK.Addr, before, after, lost)
		// The Java client, as a broker: a recovery open of each new ledger.
		for id := range after.referenced(t) {
			if _, ok := before.ledgers[id]; ok {
				continue
			}
			r, err := c.ReadLedger(id, "", false)
			if err != nil || len(r.Entries) != 1 {
				t.Fatalf("bk tool read (recovery) of ledger %d: %+v %v", id, r, err)
			}
		}
	})
}

func captureLive(t *testing.T, dir, zkAddr, out string) {
	t.Helper()
	dd, err := openLive(dir, zkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Capture(t.Context(), dd, "", f); err != nil {
		t.Fatal(err)
	}
}

func runBKChild(t *testing.T, dir, zkAddr, input, step string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envBKCrashZK+"="+zkAddr, envCrashDir+"="+dir, envCrashInput+"="+input, envCrashStep+"="+step)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1
		}
		t.Logf("child output: %s", out)
		return ee.ExitCode()
	}
	t.Fatalf("child: %v\n%s", err, out)
	return 0
}

// checkReadable: every ledger a locator names is CLOSED and its entry 0 reads
// from every bookie of its write set (our reader, no fencing).
func checkReadable(t *testing.T, dir, zkAddr string, st liveState) {
	t.Helper()
	dd, err := openLive(dir, zkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	for id := range st.referenced(t) {
		md, ok := st.ledgers[id]
		if !ok {
			continue // a lost ledger, as before the repair
		}
		if md.GetState() != bkpb.LedgerMetadataFormat_CLOSED {
			t.Fatalf("a locator names ledger %d, which is %s", id, md.GetState())
		}
		probe, err := dd.Ledgers.(store.ReplicaProber).ProbeEntry(t.Context(), id, 0)
		if err != nil || len(probe.Holding) != len(probe.WriteSet) {
			t.Fatalf("a locator names ledger %d; entry 0: %+v, %v", id, probe, err)
		}
	}
}

// checkApplied: each lost version's locator entry names a new CLOSED ledger
// whose entry 0 is on every bookie; no other ledger node was added.
func checkApplied(t *testing.T, dir, zkAddr string, before, after liveState, lost []testutil.BKSchemaVersion) {
	t.Helper()
	checkReadable(t, dir, zkAddr, after)
	ref := after.referenced(t)
	for _, v := range lost {
		if ref[v.Ledger] {
			t.Fatalf("%s version %d still names its lost ledger %d", v.Key, v.Version, v.Ledger)
		}
	}
	var extra []int64
	for id := range after.ledgers {
		if _, old := before.ledgers[id]; !old && !ref[id] {
			extra = append(extra, id)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		t.Fatalf("ledger nodes left that nothing references: %v", extra)
	}
	if n := len(after.ledgers) - len(before.ledgers); n != len(lost) {
		t.Fatalf("%d new ledger nodes, want %d", n, len(lost))
	}
}

// undoLast undoes the newest committed schema repair run.
func undoLast(t *testing.T, dir, zkAddr string) {
	t.Helper()
	dd, err := openLive(dir, zkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	eng, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := mutate.List(eng.JournalDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if r := runs[i]; r.Command == Command && r.State == mutate.StateCommitted && r.UndoneBy == "" {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if _, err := eng.Undo(ctx, r.RunID, mutate.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("no committed schema repair run to undo")
}

func sameLocators(a, b liveState) bool {
	if len(a.locators) != len(b.locators) {
		return false
	}
	for k, v := range a.locators {
		if string(b.locators[k]) != string(v) {
			return false
		}
	}
	return true
}
