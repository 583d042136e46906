package app

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestBKFixturesGenerate puts a generated cluster with faults on real bookies
// (fixtures generate --metadata zk://... --ledgers bk:): the Java client, with a
// recovery open as a broker does, reads exactly the generated entries of each
// closed ledger; the lost ledgers are not on the cluster; the ledger id
// generator is past the fixture's ids; and check of the live cluster finds what
// check of the same seed generated into a data dir finds.
func TestBKFixturesGenerate(t *testing.T) {
	c := testutil.StartBookKeeper(t, testutil.BKOptions{})
	live := []string{"--metadata", "zk://" + c.ZK.Addr, "--ledgers", "bk:", "--json"}
	gen := []string{"fixtures", "generate", "--seed", "7", "--topics", "5", "--ledgers", "3", "--entries", "4",
		"--lose-schema-ledgers", "1", "--lose-schema-entries", "1", "--lose-topic-ledger", "--lose-entries-only"}
	liveOut := filepath.Join(t.TempDir(), "live")
	out := mustBin(t, 0, append(append(live, gen...), "--out", liveOut)...)
	if !strings.Contains(out, "to the bookies") {
		t.Fatalf("generate with --ledgers bk: says nothing of the bookies:\n%s", out)
	}
	dirOut := filepath.Join(t.TempDir(), "dir")
	mustBin(t, 0, append(gen, "--out", dirOut)...)

	// Same seed, same cluster: the live one's managed ledgers and locators are
	// the data dir's, byte for byte.
	src, err := datadir.Open(dirOut, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	mu, err := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	if err != nil {
		t.Fatal(err)
	}
	zk, err := datadir.OpenMetadata(mu, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	for _, prefix := range []string{formats.ManagedLedgersRoot, "/schemas"} {
		n := 0
		err := src.Metadata.Walk(context.Background(), prefix, func(nd store.Node) error {
			got, err := zk.Get(nd.Path)
			if err != nil || !bytes.Equal(got.Value, nd.Value) {
				t.Errorf("%s: live node %v differs from the data dir's", nd.Path, err)
			}
			n++
			return nil
		})
		if err != nil || n == 0 {
			t.Fatalf("walk %s: %d nodes, %v", prefix, n, err)
		}
	}

	m, err := fixtures.LoadManifest(dirOut)
	if err != nil {
		t.Fatal(err)
	}
	lost := map[int64]bool{}
	for _, f := range m.Faults {
		if f.NodeLost {
			lost[f.Ledger] = true
		}
	}
	if len(lost) < 2 {
		t.Fatalf("want a lost schema ledger and a lost topic ledger, manifest faults: %+v", m.Faults)
	}
	listed := map[int64]bool{}
	maxID := int64(0)
	for _, l := range c.ListLedgers() {
		listed[l.LedgerID] = true
	}
	// (a) each closed ledger with entries, read by the Java client with a
	// recovery open, holds exactly the generated entries.
	read, open := 0, 0
	openID, openWant := int64(-1), [][]byte(nil) // an OPEN ledger with entries
	err = src.Metadata.Walk(context.Background(), formats.LedgersRoot+"/", func(nd store.Node) error {
		id, err := formats.ParseLedgerPath(nd.Path)
		if err != nil {
			return nil
		}
		maxID = max(maxID, id)
		if !listed[id] {
			t.Errorf("ledger %d of the data dir is not on the live cluster", id)
		}
		md, err := formats.DecodeLedgerMetadata(nd.Value)
		if err != nil {
			return err
		}
		var want [][]byte
		if err := src.Ledgers.Entries(context.Background(), id, 0, -1, func(_ int64, v []byte) error {
			want = append(want, append([]byte{}, v...))
			return nil
		}); err != nil {
			return err
		}
		if md.GetState() != bkpb.LedgerMetadataFormat_CLOSED {
			open++
			if len(want) > 1 && openWant == nil {
				openID, openWant = id, want
			}
			return nil
		}
		if len(want) == 0 || read >= 6 {
			return nil
		}
		r, err := c.ReadLedger(id, "", false)
		if err != nil || !r.Recovery || len(r.Entries) != len(want) {
			t.Fatalf("bk tool read (recovery) of ledger %d: %d entries, want %d, %v", id, len(r.Entries), len(want), err)
		}
		for i := range want {
			if !bytes.Equal(r.Entries[i], want[i]) {
				t.Errorf("ledger %d entry %d: the Java client read %d bytes that differ from the %d generated", id, i, len(r.Entries[i]), len(want[i]))
			}
		}
		read++
		return nil
	})
	if err != nil || read == 0 || open == 0 || openWant == nil {
		t.Fatalf("read %d closed ledgers, %d open, %v", read, open, err)
	}
	for id := range lost {
		if listed[id] {
			t.Errorf("lost ledger %d is on the live cluster", id)
		}
	}
	// The cluster's own generator hands out no fixture id.
	w := c.WriteLedger(testutil.BKWriteArg{}, [][]byte{[]byte("after the fixture")})
	if w.LedgerID <= maxID {
		t.Errorf("the Java client took ledger id %d, not past the fixture's %d", w.LedgerID, maxID)
	}
	if _, err := c.Tool("delete", "--ledger", fmt.Sprint(w.LedgerID)); err != nil {
		t.Fatal(err)
	}

	// (b) check finds on the live cluster what it finds in the data dir.
	// A ledger node without entries is, on live bookies, a ledger no bookie of
	// its ensemble holds: the same fact, the live store's kind.
	var wantF []string
	for _, f := range findingSet(t, mustBin(t, 1, "-d", dirOut, "--json", "check")) {
		wantF = append(wantF, strings.Replace(f, " ledger-node-without-entries ", " ledger-not-on-bookies ", 1))
	}
	slices.Sort(wantF)
	gotF := findingSet(t, mustBin(t, 1, append(live, "check")...))
	if !slices.Equal(gotF, wantF) {
		t.Fatalf("check of the live cluster:\n%s\nwant (check of the data dir):\n%s", strings.Join(gotF, "\n"), strings.Join(wantF, "\n"))
	}

	// An OPEN ledger, as a Java writer leaves it: a reader without recovery sees
	// up to the last add confirmed (the entry before the last, each add carrying
	// its predecessor's), a recovery open all of them, and closes it.
	r, err := c.ReadLedger(openID, "", true)
	if err != nil || r.LAC != int64(len(openWant))-2 || len(r.Entries) != len(openWant)-1 {
		t.Fatalf("bk tool read --no-recovery of open ledger %d: LAC %d, %d entries, want %d; %v", openID, r.LAC, len(r.Entries), len(openWant)-1, err)
	}
	if r, err = c.ReadLedger(openID, "", false); err != nil || len(r.Entries) != len(openWant) || !bytes.Equal(r.Entries[len(r.Entries)-1], openWant[len(openWant)-1]) {
		t.Fatalf("bk tool read (recovery) of open ledger %d: %d entries, want %d; %v", openID, len(r.Entries), len(openWant), err)
	}

	// Generating again onto the same cluster overwrites nothing: exit 3.
	if _, stderr, code := runBin(t, append(append(live, gen...), "--out", filepath.Join(t.TempDir(), "again"))...); code != 3 {
		t.Fatalf("generate onto a cluster that holds the fixture: exit %d, %s", code, stderr)
	}
	// Bad usage: --ledgers bk: without a live ZooKeeper, or another ledger store.
	for _, args := range [][]string{
		{"--ledgers", "bk:"},
		{"--metadata", "zk://" + c.ZK.Addr, "--ledgers", "bookie:" + t.TempDir()},
	} {
		if _, stderr, code := runBin(t, append(append(args, gen...), "--out", filepath.Join(t.TempDir(), "x"))...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
}
