package repair

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// lostVersion names a version the test destroys.
type lostVersion struct {
	key     string
	version int64
	ledger  int64
	node    bool
	deleted bool
}

// pickLosses chooses versions to destroy: a real version with node and entries, a
// tombstone, one whose node stays, and a KEY_VALUE version when there is one.
func pickLosses(m *fixtures.Manifest) []lostVersion {
	var out []lostVersion
	haveTomb, haveKV, haveEntryOnly := false, false, false
	for _, s := range m.Schemas {
		for _, v := range s.Versions {
			switch {
			case v.Deleted && !haveTomb:
				haveTomb = true
				out = append(out, lostVersion{s.Key, v.Version, v.Ledger, true, true})
			case v.Type == "KEY_VALUE" && !haveKV:
				haveKV = true
				out = append(out, lostVersion{s.Key, v.Version, v.Ledger, true, false})
			case v.Version == 0 && !v.Deleted && !haveEntryOnly:
				haveEntryOnly = true
				out = append(out, lostVersion{s.Key, v.Version, v.Ledger, false, false})
			case v.Version == 1 && !v.Deleted && len(out) < 6:
				out = append(out, lostVersion{s.Key, v.Version, v.Ledger, true, false})
			}
		}
	}
	return out
}

func TestCaptureLoseRepair(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 7})
	capPath, st := captureFile(t, dir)
	if st.Skipped != 0 || st.Written != m.Totals.SchemaVersions {
		t.Fatalf("capture of a healthy dir: wrote %d of %d versions, skipped %v", st.Written, m.Totals.SchemaVersions, st.Skipped)
	}

	before := testutil.Dump(t, dir)

	losses := pickLosses(m)
	if len(losses) < 4 {
		t.Fatalf("fixture offers only %d losses", len(losses))
	}
	lostKeys := map[string]bool{}
	for _, l := range losses {
		loseLedger(t, dir, l.ledger, l.node)
		lostKeys[formats.SchemasRoot+"/"+l.key] = true
	}

	rp, res, err := planAndApply(t, dir, loadCands(t, capPath), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rp.Unresolved() != 0 || rp.Restored() != len(losses) {
		t.Fatalf("restored %d, unresolved %d; want %d restored: %+v", rp.Restored(), rp.Unresolved(), len(losses), rp.Versions)
	}
	if res == nil || res.State != mutate.StateCommitted || !res.Verified {
		t.Fatalf("result %+v", res)
	}

	after := testutil.Dump(t, dir)
	dd := testutil.OpenReadOnly(t, dir)
	assertAllReadable(t, dd)
	for _, l := range losses {
		sv := manifestVersion(t, m, l.key, l.version)
		got := storedInfo(t, dd, l.key, l.version)
		want := &schemapb.SchemaInfo{}
		// The manifest holds what the generator wrote; the capture held the same.
		want.SchemaId, want.User, want.Type = proto.String(l.key), proto.String(sv.User), typeOf(t, sv.Type).Enum()
		want.Schema, want.Timestamp, want.Deleted = sv.Definition, proto.Int64(sv.Timestamp), proto.Bool(sv.Deleted)
		if want.Schema == nil {
			want.Schema = []byte{}
		}
		for _, p := range propsOf(sv) {
			want.Props = append(want.Props, &schemapb.SchemaInfo_KeyValuePair{Key: proto.String(p.Key), Value: proto.String(p.Value)})
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s version %d restored as\n%v\nwant\n%v", l.key, l.version, got, want)
		}
	}
	closeDD(t, dd)
	// Untouched nodes are byte-identical; repaired locators keep versions and hashes.
	for p, b := range before.Nodes {
		if formats.ClassifyPath(p) == formats.NodeLedgerMetadata {
			continue
		}
		if lostKeys[p] {
			assertSameVersionsAndHashes(t, p, b, after.Nodes[p])
			continue
		}
		if !bytes.Equal(after.Nodes[p], b) {
			t.Errorf("node %s changed", p)
		}
	}
	for k, v := range after.Entries {
		if old, ok := before.Entries[k]; ok && !bytes.Equal(old, v) {
			t.Errorf("ledger %d entry %d changed", k.Ledger, k.Entry)
		}
	}
	assertRestoredAsWritten(t, losses, before, after, rp)

	// Idempotent: a second run finds nothing to do.
	rp2, res2, err := planAndApply(t, dir, loadCands(t, capPath), Options{})
	if err != nil || rp2.Plan != nil || res2 != nil || len(rp2.Versions) != 0 {
		t.Fatalf("second run: plan %+v, result %+v, err %v", rp2.Plan, res2, err)
	}

	// Undo returns every touched node byte-identical to its state after the loss.
	dd = openRW(t, dir)
	eng, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Undo(context.Background(), res.RunID, mutate.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	undone := testutil.DumpStore(t, dd).Nodes
	closeDD(t, dd)
	for _, l := range losses {
		if l.node {
			delete(before.Nodes, formats.LedgerPath(l.ledger))
		}
	}
	for p := range lostKeys {
		if !bytes.Equal(undone[p], before.Nodes[p]) {
			t.Errorf("undo: locator %s differs from before the repair", p)
		}
	}
	if len(undone) != len(before.Nodes) {
		t.Errorf("undo: %d nodes, want %d", len(undone), len(before.Nodes))
	}
}

func typeOf(t testing.TB, name string) schemapb.SchemaInfo_SchemaType {
	t.Helper()
	v, err := cluster.ParseSchemaType(name)
	if err != nil {
		t.Fatalf("manifest type %q: %v", name, err)
	}
	return v
}

func propsOf(sv fixtures.SchemaVersion) Properties {
	var out Properties
	for _, p := range sv.Props {
		out = append(out, Property{p.Key, p.Value})
	}
	return out
}

func assertSameVersionsAndHashes(t *testing.T, path string, before, after []byte) {
	t.Helper()
	a, err := formats.DecodeSchemaLocator(before)
	if err != nil {
		t.Fatal(err)
	}
	b, err := formats.DecodeSchemaLocator(after)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.GetIndex()) != len(b.GetIndex()) {
		t.Fatalf("%s: index has %d entries, was %d", path, len(b.GetIndex()), len(a.GetIndex()))
	}
	for i := range a.GetIndex() {
		x, y := a.GetIndex()[i], b.GetIndex()[i]
		if x.GetVersion() != y.GetVersion() || !bytes.Equal(x.GetHash(), y.GetHash()) {
			t.Errorf("%s index %d: version/hash %d/%x became %d/%x", path, i, x.GetVersion(), x.GetHash(), y.GetVersion(), y.GetHash())
		}
	}
	if a.GetInfo().GetVersion() != b.GetInfo().GetVersion() || !bytes.Equal(a.GetInfo().GetHash(), b.GetInfo().GetHash()) {
		t.Errorf("%s: info changed version or hash", path)
	}
}

func TestRepairFixtureFaults(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 3, LoseSchemaLedgers: 3, LoseSchemaEntries: 1})
	if len(m.Faults) != 4 {
		t.Fatalf("faults %+v", m.Faults)
	}
	// Inputs: a capture built from what the generator wrote.
	capPath := manifestCapture(t, m, nil)
	rp, res, err := planAndApply(t, dir, loadCands(t, capPath), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rp.Restored() != 4 || rp.Unresolved() != 0 || res.State != mutate.StateCommitted {
		t.Fatalf("restored %d unresolved %d: %+v", rp.Restored(), rp.Unresolved(), rp.Versions)
	}
	dd := testutil.OpenReadOnly(t, dir)
	defer closeDD(t, dd)
	assertAllReadable(t, dd)
	for _, v := range rp.Versions {
		if v.NewLedgerID < m.NextLedgerID {
			t.Errorf("new ledger %d is below the manifest's next free id %d", v.NewLedgerID, m.NextLedgerID)
		}
		n, err := dd.Metadata.Get(formats.LedgerPath(v.NewLedgerID))
		if err != nil {
			t.Fatal(err)
		}
		md, err := formats.DecodeLedgerMetadata(n.Value)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := formats.CustomMetadata(md, "pulsar/schemaId"); id != v.SchemaKey {
			t.Errorf("ledger %d schemaId %q", v.NewLedgerID, id)
		}
		if md.GetState() != 3 || md.GetEnsembleSize() != 3 || md.GetQuorumSize() != 2 || md.GetAckQuorumSize() != 2 ||
			len(md.GetSegment()) != 1 || len(md.GetSegment()[0].GetEnsembleMember()) != 3 || md.Password == nil {
			t.Errorf("ledger %d metadata %v", v.NewLedgerID, md)
		}
	}
}

// manifestCapture writes a capture file from a fixture manifest; keep, when set,
// chooses the versions written.
func manifestCapture(t testing.TB, m *fixtures.Manifest, keep func(key string, v int64) bool) string {
	t.Helper()
	var buf bytes.Buffer
	for _, s := range m.Schemas {
		for _, sv := range s.Versions {
			if keep != nil && !keep(s.Key, sv.Version) {
				continue
			}
			info := &schemapb.SchemaInfo{User: proto.String(sv.User), Type: typeOf(t, sv.Type).Enum(), Schema: sv.Definition,
				Timestamp: proto.Int64(sv.Timestamp), Deleted: proto.Bool(sv.Deleted), Props: propsOf(sv).toInfo()}
			ie := &schemapb.IndexEntry{Version: proto.Int64(sv.Version),
				Position: &schemapb.PositionInfo{LedgerId: proto.Int64(sv.Ledger), EntryId: proto.Int64(0)}}
			b, err := json.Marshal(recordOf(s.Key, ie, info, "2024-01-01T00:00:00Z"))
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(append(b, '\n'))
		}
	}
	return writeTemp(t, "manifest.jsonl", buf.Bytes())
}

func TestPartialInputsLeaveExactlyTheRestUnresolved(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 5, LoseSchemaLedgers: 3, LoseSchemaEntries: 1})
	var real []fixtures.Fault
	for _, f := range m.Faults {
		if !f.Deleted {
			real = append(real, f)
		}
	}
	if len(real) < 2 {
		t.Fatalf("need two lost real versions: %+v", m.Faults)
	}
	skip := real[0]
	capPath := manifestCapture(t, m, func(key string, v int64) bool { return !(key == skip.SchemaKey && v == *skip.Version) })
	rp, _, err := planAndApply(t, dir, loadCands(t, capPath), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var unresolved []VersionRepair
	for _, v := range rp.Versions {
		if v.Action == ActionUnresolved {
			unresolved = append(unresolved, v)
		}
	}
	if len(unresolved) != 1 || unresolved[0].SchemaKey != skip.SchemaKey || unresolved[0].Version != *skip.Version {
		t.Fatalf("unresolved %+v, want only %s version %d", unresolved, skip.SchemaKey, *skip.Version)
	}
	if rp.Restored() != len(m.Faults)-1 {
		t.Fatalf("restored %d, want %d", rp.Restored(), len(m.Faults)-1)
	}
	// The rest was written; a second run still lists exactly that version.
	rp2, _, err := planAndApply(t, dir, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rp2.Versions) != 1 || rp2.Versions[0].Version != *skip.Version || rp2.Plan != nil {
		t.Fatalf("second run: %+v", rp2.Versions)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 9, LoseSchemaLedgers: 2, LoseSchemaEntries: 1})
	capPath := manifestCapture(t, m, nil)
	cands := loadCands(t, capPath)
	before := testutil.HashTree(t, dir)
	dd := testutil.OpenReadOnly(t, dir)
	rp, err := Plan(context.Background(), dd, cands, Options{})
	closeDD(t, dd)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Plan == nil || rp.Restored() != 3 {
		t.Fatalf("plan restores %d", rp.Restored())
	}
	testutil.SameTree(t, before, testutil.HashTree(t, dir))
}

func TestHashMismatch(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 11, LoseSchemaLedgers: 1})
	f := m.Faults[0]
	sv := manifestVersion(t, m, f.SchemaKey, *f.Version)
	// Same key and version, a different (valid) definition.
	other := bytes.Replace(sv.Definition, []byte(`"name"`), []byte(`"doc":"edited","name"`), 1)
	if bytes.Equal(other, sv.Definition) {
		other = append(bytes.Clone(sv.Definition), ' ')
	}
	rec := recordOf(f.SchemaKey, &schemapb.IndexEntry{Version: f.Version, Position: &schemapb.PositionInfo{LedgerId: proto.Int64(f.Ledger), EntryId: proto.Int64(0)}},
		&schemapb.SchemaInfo{Type: typeOf(t, sv.Type).Enum(), Schema: other, User: proto.String(sv.User)}, "x")
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	cands := loadCands(t, writeTemp(t, "bad.jsonl", b))

	dd := testutil.OpenReadOnly(t, dir)
	rp, err := Plan(context.Background(), dd, cands, Options{})
	closeDD(t, dd)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Unresolved() != 1 || rp.Plan != nil || len(rp.Refusals) != 1 || !bytes.Contains([]byte(rp.Refusals[0].Reason), []byte("hash mismatch")) {
		t.Fatalf("unresolved %d, refusals %+v", rp.Unresolved(), rp.Refusals)
	}

	rp, res, err := planAndApply(t, dir, cands, Options{AllowHashMismatch: true})
	if err != nil {
		t.Fatal(err)
	}
	if rp.Versions[0].Action != ActionRestoreMismatch || len(rp.Warnings) == 0 {
		t.Fatalf("allowed mismatch: %+v warnings %v", rp.Versions[0], rp.Warnings)
	}
	rec2, err := mutate.Show(mutate.JournalDir(dir), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec2.Flags["allow-hash-mismatch"] != "true" || rec2.Flags["hash-mismatch-versions"] == "" {
		t.Errorf("journal flags %v", rec2.Flags)
	}
}

func TestConcurrentLocatorChangeIsNotOverwritten(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 13, LoseSchemaLedgers: 2})
	cands := loadCands(t, manifestCapture(t, m, nil))
	dd := openRW(t, dir)
	defer closeDD(t, dd)
	eng, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := Plan(context.Background(), dd, cands, Options{})
	if err != nil || rp.Plan == nil {
		t.Fatalf("plan: %v", err)
	}
	// A broker writes a new schema version between plan and apply.
	path := formats.SchemasRoot + "/" + m.Faults[0].SchemaKey
	n, err := dd.Metadata.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := append(bytes.Clone(n.Value), 0x10, 0x01) // an extra unknown varint field
	if _, err := dd.Metadata.CompareAndSet(path, n.Version, changed); err != nil {
		t.Fatal(err)
	}
	before := testutil.DumpStore(t, dd)
	_, err = Apply(context.Background(), eng, rp, mutate.ApplyOptions{})
	if !errors.Is(err, store.ErrVersionMismatch) {
		t.Fatalf("apply after a concurrent change: %v", err)
	}
	if d := before.Diff(testutil.DumpStore(t, dd)); d != nil {
		t.Fatalf("a refused run changed the data dir (the concurrent change included): %v", d)
	}
}

// assertRestoredAsWritten: a restored version whose earlier versions were not lost
// is written back exactly as the broker first wrote it (the fixture generator
// writes what BookkeeperSchemaStorage writes): the same entry bytes, and ledger
// metadata that differs only in ctime and bookies.
func assertRestoredAsWritten(t *testing.T, losses []lostVersion, before, after testutil.Snapshot, rp *RepairPlan) {
	t.Helper()
	newLedger := map[string]int64{}
	for _, v := range rp.Versions {
		newLedger[fmt.Sprintf("%s@%d", v.SchemaKey, v.Version)] = v.NewLedgerID
	}
	compared := 0
	for _, l := range losses {
		if slices.ContainsFunc(losses, func(o lostVersion) bool { return o.key == l.key && o.version < l.version }) {
			continue // its entry's index points at a restored ledger, not the lost one
		}
		id := newLedger[fmt.Sprintf("%s@%d", l.key, l.version)]
		got, want := after.Entries[testutil.EntryID{Ledger: id}], before.Entries[testutil.EntryID{Ledger: l.ledger}]
		if !bytes.Equal(got, want) {
			t.Errorf("%s version %d: restored entry (ledger %d)\n%x\nwas written as (ledger %d)\n%x", l.key, l.version, id, got, l.ledger, want)
		}
		gotMD, wantMD := ledgerMetadata(t, after.Nodes[formats.LedgerPath(id)]), ledgerMetadata(t, before.Nodes[formats.LedgerPath(l.ledger)])
		for _, md := range []*bkpb.LedgerMetadataFormat{gotMD, wantMD} {
			md.Ctime, md.Segment = nil, nil
		}
		if !proto.Equal(gotMD, wantMD) {
			t.Errorf("%s version %d: restored ledger metadata\n%v\nwas written as\n%v", l.key, l.version, gotMD, wantMD)
		}
		compared++
	}
	if compared == 0 {
		t.Fatal("no restored version to compare with what was written")
	}
}

func ledgerMetadata(t *testing.T, node []byte) *bkpb.LedgerMetadataFormat {
	t.Helper()
	md, err := formats.DecodeLedgerMetadata(node)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// TestRestoredSchemaEntryIndexIsUpstreams pins the index of a restored entry to
// what BookkeeperSchemaStorage writes: version 0 (createNewSchema) holds one
// placeholder for itself, its hash at position (-1, -1); a later version holds the
// locator's index entries of every earlier version, here as repaired.
func TestRestoredSchemaEntryIndexIsUpstreams(t *testing.T) {
	defs := [][]byte{[]byte(`"string"`), []byte(`"int"`), []byte(`"long"`)}
	dir := buildDir(t, map[string][]handVersion{"t/ns/topic": {
		{version: 0, def: defs[0], typ: schemapb.SchemaInfo_AVRO, lost: true, ledger: 3},
		{version: 1, def: defs[1], typ: schemapb.SchemaInfo_AVRO, ledger: 4},
		{version: 2, def: defs[2], typ: schemapb.SchemaInfo_AVRO, lost: true, ledger: 5},
	}})
	var in bytes.Buffer
	for _, d := range [][]byte{defs[0], defs[2]} {
		b, err := json.Marshal(map[string]string{"type": "AVRO", "schema": string(d)})
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	rp, _, err := planAndApply(t, dir, loadCands(t, writeTemp(t, "upload.jsonl", in.Bytes())), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rp.Restored() != 2 || rp.Versions[0].NewLedgerID != 6 || rp.Versions[1].NewLedgerID != 7 {
		t.Fatalf("restored %+v", rp.Versions)
	}
	ie := func(version, ledger, entry int64, def []byte) *schemapb.IndexEntry {
		return &schemapb.IndexEntry{Version: proto.Int64(version), Hash: formats.SchemaHash(def),
			Position: &schemapb.PositionInfo{LedgerId: proto.Int64(ledger), EntryId: proto.Int64(entry)}}
	}
	want := map[int64][]*schemapb.IndexEntry{
		6: {ie(0, -1, -1, defs[0])},
		7: {ie(0, 6, 0, defs[0]), ie(1, 4, 0, defs[1])},
	}
	dd := testutil.OpenReadOnly(t, dir)
	defer closeDD(t, dd)
	for ledger, index := range want {
		b, err := dd.Ledgers.Entry(ledger, 0)
		if err != nil {
			t.Fatal(err)
		}
		se, err := formats.DecodeSchemaEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(se.GetIndex()) != len(index) {
			t.Fatalf("ledger %d: index %v, want %v", ledger, se.GetIndex(), index)
		}
		for i := range index {
			if !proto.Equal(se.GetIndex()[i], index[i]) {
				t.Errorf("ledger %d: index entry %d is %v, want %v", ledger, i, se.GetIndex()[i], index[i])
			}
		}
	}
}

func TestNeighbour(t *testing.T) {
	infos := map[int64]*schemapb.SchemaInfo{}
	for _, v := range []int64{1, 4, 9} {
		infos[v] = &schemapb.SchemaInfo{Timestamp: proto.Int64(v)}
	}
	for _, tc := range []struct {
		v, want int64 // want -1: none
		infos   map[int64]*schemapb.SchemaInfo
	}{
		{0, 1, infos},  // nothing below: nearest above
		{4, 1, infos},  // itself never counts
		{5, 4, infos},  // nearest below, not nearest overall
		{8, 4, infos},  // below wins over a nearer one above
		{20, 9, infos}, // above everything
		{3, -1, map[int64]*schemapb.SchemaInfo{3: {}}},
		{3, -1, nil},
	} {
		info, v, ok := neighbour(tc.infos, tc.v)
		if tc.want < 0 {
			if ok {
				t.Errorf("neighbour of %d = %d, want none", tc.v, v)
			}
			continue
		}
		if !ok || v != tc.want || info.GetTimestamp() != tc.want {
			t.Errorf("neighbour of %d = %d (%v, ok %v), want %d", tc.v, v, info, ok, tc.want)
		}
	}
}
