package repair

import (
	"context"
	"errors"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// testScan is the app's wiring of MessageScan (app/schema.go), for tests here.
func testScan(dd *datadir.DataDir) MessageScan {
	return func(ctx context.Context, key string, split map[int64]int64) ([]VersionUse, bool, error) {
		t, _ := formats.ParseSchemaLocatorPath(formats.SchemasRoot + "/" + key)
		ss, err := inspect.SplitVersionUsage(ctx, dd, t, split)
		if errors.Is(err, inspect.ErrNoSuchTopic) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		var out []VersionUse
		for _, s := range ss {
			out = append(out, VersionUse{Version: s.Version,
				Before: MessageSpan{Messages: s.Before.Messages, Entries: s.Before.Entries},
				After:  MessageSpan{Messages: s.After.Messages, Entries: s.After.Entries}})
		}
		return out, true, nil
	}
}

// TestRebuildUndecodableLocator: a locator whose bytes do not decode is rebuilt
// from the capture with compare-and-set against the damaged node's version.
func TestRebuildUndecodableLocator(t *testing.T) {
	healthy, m := testutil.Fixture(t, fixtures.Options{Seed: 41})
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 41})
	capPath, _ := captureFile(t, healthy)
	key := m.Schemas[1].Key
	path := formats.SchemasRoot + "/" + key
	dd := openRW(t, dir)
	n, err := dd.Metadata.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Metadata.CompareAndSet(path, n.Version, []byte{0xff, 0xff, 0x01}); err != nil {
		t.Fatal(err)
	}
	closeDD(t, dd)

	dd = openRW(t, dir)
	rp, err := Plan(context.Background(), dd, loadCands(t, capPath), Options{Scan: testScan(dd)})
	closeDD(t, dd)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Plan == nil || rp.Unresolved() != 0 || rp.Restored() != len(m.Schemas[1].Versions) {
		t.Fatalf("plan: %+v", rp.Versions)
	}
	last := rp.Plan.Items[len(rp.Plan.Items)-1]
	if last.Kind != mutate.KindSet || last.Path != path || last.Expect == 0 {
		t.Fatalf("locator item %+v, want a compare-and-set of the damaged node", last)
	}
	for _, v := range rp.Versions {
		if v.State != StateLocatorUndecodable || v.Action != ActionRebuild {
			t.Errorf("version %d: %s %s", v.Version, v.State, v.Action)
		}
	}
	dd = openRW(t, dir)
	eng, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	if rp, err = Plan(context.Background(), dd, loadCands(t, capPath), Options{Scan: testScan(dd)}); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), eng, rp, mutate.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	closeDD(t, dd)
	dd = testutil.OpenReadOnly(t, dir)
	defer closeDD(t, dd)
	assertAllReadable(t, dd)
	for _, v := range m.Schemas[1].Versions {
		info := storedInfo(t, dd, key, v.Version)
		if string(info.GetSchema()) != string(v.Definition) || info.GetTimestamp() != v.Timestamp || info.GetUser() != v.User {
			t.Errorf("version %d rebuilt as %v", v.Version, info)
		}
	}
}

// TestRebuildRefusedWhenLocatorAppears: the locator of a deleted history is
// created with "must not exist": when a broker registers a new version 0
// between plan and apply, the run is refused and nothing is written.
func TestRebuildRefusedWhenLocatorAppears(t *testing.T) {
	healthy, m := testutil.Fixture(t, fixtures.Options{Seed: 42})
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 42, DeleteSchemaHistory: 1})
	capPath, _ := captureFile(t, healthy)
	dd := openRW(t, dir)
	defer closeDD(t, dd)
	eng, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := Plan(context.Background(), dd, loadCands(t, capPath), Options{Scan: testScan(dd)})
	if err != nil || rp.Plan == nil {
		t.Fatalf("plan: %v", err)
	}
	before := testutil.DumpStore(t, dd)
	path := formats.SchemasRoot + "/" + m.Schemas[0].Key
	if _, err := dd.Metadata.CompareAndSet(path, 0, []byte{0x0a, 0x00}); err != nil {
		t.Fatal(err)
	}
	before.Nodes[path] = []byte{0x0a, 0x00}
	if _, err := Apply(context.Background(), eng, rp, mutate.ApplyOptions{}); err == nil {
		t.Fatal("apply overwrote a locator created after the plan")
	}
	if d := before.Diff(testutil.DumpStore(t, dd)); len(d) > 0 {
		t.Fatalf("a refused run wrote: %v", d)
	}
}

// TestRebuildSkipsDeletedTopics: a captured key whose topic has no managed
// ledger (the topic itself was deleted) is not rebuilt.
func TestRebuildSkipsDeletedTopics(t *testing.T) {
	healthy, m := testutil.Fixture(t, fixtures.Options{Seed: 43})
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 43, DeleteSchemaHistory: 1})
	capPath, _ := captureFile(t, healthy)
	dd := openRW(t, dir)
	for _, ml := range m.ManagedLedgers {
		if ml.BaseTopic != m.Schemas[0].Topic {
			continue
		}
		n, err := dd.Metadata.Get(ml.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ml.Cursors {
			cn, err := dd.Metadata.Get(c.Path)
			if err != nil {
				t.Fatal(err)
			}
			if err := dd.Metadata.CompareAndDelete(c.Path, cn.Version); err != nil {
				t.Fatal(err)
			}
		}
		if err := dd.Metadata.CompareAndDelete(ml.Path, n.Version); err != nil {
			t.Fatal(err)
		}
	}
	rp, err := Plan(context.Background(), dd, loadCands(t, capPath), Options{Scan: testScan(dd)})
	closeDD(t, dd)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Plan != nil || rp.Unresolved() != 0 || len(rp.Notes) == 0 {
		t.Fatalf("plan %v, versions %+v, notes %v", rp.Plan, rp.Versions, rp.Notes)
	}
}
