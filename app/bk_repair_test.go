package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestBKSchemaRepairEndToEnd is the product's first incident on a real cluster,
// from the CLI: schema ledgers lost on live bookies, check names them, schema
// repair --apply writes new ledgers to the bookies, the Java client reads each
// with a recovery open (as a broker does) and gets a SchemaEntry whose definition
// hashes to the locator's hash, check is clean, and undo restores the locators
// and deletes the ledgers.
func TestBKSchemaRepairEndToEnd(t *testing.T) {
	c := testutil.StartBookKeeper(t, testutil.BKOptions{})
	vs, ms := c.WriteSchemas(t)
	live := []string{"--metadata", "zk://" + c.ZK.Addr, "--ledgers", "bk:", "--json"}
	capFile := filepath.Join(t.TempDir(), "schemas.jsonl")
	mustBin(t, 0, append(live, "schema", "capture", "--out", capFile)...)
	if clean := findingSet(t, mustBin(t, 0, append(live, "check")...)); len(clean) != 0 {
		t.Fatalf("check of the healthy cluster: %v", clean)
	}
	// Lose orders version 1 and users version 0: their ledgers are deleted.
	lost := []testutil.BKSchemaVersion{vs[1], vs[2]}
	for _, v := range lost {
		if _, err := c.Tool("delete", "--ledger", fmt.Sprint(v.Ledger)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"error schema-ledger-lost schema public/default/orders version 1",
		"error schema-ledger-lost schema public/default/users version 0"}
	if got := findingSet(t, mustBin(t, 1, append(live, "check")...)); !slices.Equal(got, want) {
		t.Fatalf("check after the loss:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	locBefore := locators(t, ms)
	ledgersBefore := c.ListLedgers()

	dir := t.TempDir() // the journal's data dir
	rw := append([]string{"-d", dir}, live...)
	// The dry run shows the bookie writes and writes nothing.
	out, stderr, code := runBin(t, append(rw, "schema", "repair", "--from", capFile)...)
	if code != 0 || !strings.Contains(out, "written to live bookies") || !strings.Contains(out, "placeholders") {
		t.Fatalf("dry run: exit %d, %s\n%s", code, stderr, out)
	}
	// The flags size the new ledgers; sizes that do not nest are bad usage.
	out, stderr, code = runBin(t, append(rw, "schema", "repair", "--from", capFile, "--ensemble-size", "3", "--write-quorum", "3")...)
	if code != 0 || strings.Count(out, "(3/3/2 CRC32C)") != 2 {
		t.Fatalf("dry run with --ensemble-size 3 --write-quorum 3: exit %d, %s\n%s", code, stderr, out)
	}
	if _, stderr, code = runBin(t, append(rw, "schema", "repair", "--from", capFile, "--write-quorum", "3")...); code != 2 {
		t.Fatalf("--write-quorum 3 over the sibling's ensemble of 2: exit %d, %s", code, stderr)
	}
	if _, stderr, code = runBin(t, "-d", dir, "schema", "repair", "--from", capFile, "--ensemble-size", "3"); code != 2 {
		t.Fatalf("--ensemble-size without bk:: exit %d, %s", code, stderr)
	}
	if !mapsEqual(locators(t, ms), locBefore) || len(c.ListLedgers()) != len(ledgersBefore) {
		t.Fatal("the dry run wrote")
	}

	out, stderr, code = runBin(t, append(rw, "schema", "repair", "--from", capFile, "--apply")...)
	var rep struct {
		RunID    string  `json:"run_id"`
		Restored int     `json:"restored"`
		NotOnBK  []int64 `json:"ledgers_not_on_bookies"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Restored != 2 || rep.NotOnBK != nil {
		t.Fatalf("repair --apply: exit %d, %+v, %v\n%s\n%s", code, rep, err, stderr, out)
	}
	if strings.Contains(stderr, "does not write to bookies") {
		t.Errorf("a repair that wrote to bookies warns that it did not:\n%s", stderr)
	}
	// A broker's read: a recovery open of each new ledger, entry 0 a SchemaEntry
	// whose definition hashes to the locator's hash.
	newIDs := map[int64]bool{}
	for _, v := range lost {
		ie := indexEntry(t, ms, v.Key, v.Version)
		id := ie.GetPosition().GetLedgerId()
		newIDs[id] = true
		if id == v.Ledger || ie.GetPosition().GetEntryId() != 0 {
			t.Fatalf("%s version %d: locator points at ledger %d entry %d", v.Key, v.Version, id, ie.GetPosition().GetEntryId())
		}
		r, err := c.ReadLedger(id, "", false)
		if err != nil || !r.Recovery || len(r.Entries) != 1 {
			t.Fatalf("bk tool read (recovery) of ledger %d: %+v, %v", id, r, err)
		}
		se, err := formats.DecodeSchemaEntry(r.Entries[0])
		if err != nil {
			t.Fatalf("ledger %d entry 0: %v", id, err)
		}
		var info schemapb.SchemaInfo
		if err := proto.Unmarshal(se.GetSchemaData(), &info); err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(info.GetSchema()); !bytes.Equal(h[:], ie.GetHash()) || !bytes.Equal(info.GetSchema(), v.Def) {
			t.Fatalf("ledger %d: the definition's SHA-256 %x is not the locator's %x", id, h, ie.GetHash())
		}
		var md struct {
			State  string            `json:"state"`
			Ens    int               `json:"ensemble_size"`
			Custom map[string]string `json:"custom_metadata"`
		}
		if err := json.Unmarshal(r.Metadata, &md); err != nil || md.State != "CLOSED" || md.Ens != 2 ||
			md.Custom["pulsar/schemaId"] != v.Key || md.Custom["component"] != "schema" || md.Custom["application"] != "pulsar" {
			t.Fatalf("ledger %d metadata: %s", id, r.Metadata)
		}
	}
	if got := findingSet(t, mustBin(t, 0, append(live, "check")...)); len(got) != 0 {
		t.Fatalf("check after the repair: %v", got)
	}

	mustBin(t, 0, append(rw, "journal", "undo", "--apply", rep.RunID)...)
	if !mapsEqual(locators(t, ms), locBefore) {
		t.Fatal("undo did not restore the locators byte for byte")
	}
	for _, l := range c.ListLedgers() {
		if newIDs[l.LedgerID] {
			t.Fatalf("after undo, bk tool list still shows ledger %d", l.LedgerID)
		}
	}

	// The same repair made on a working copy, then pushed with --ledgers bk:
	// the new ledgers go to the bookies with ids from the cluster's generator.
	wc := filepath.Join(t.TempDir(), "wc")
	mustBin(t, 0, append(live, "import", "--out", wc, "--copy-ledgers")...)
	var wrep struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(mustBin(t, 0, "-d", wc, "--json", "schema", "repair", "--from", capFile, "--apply")), &wrep); err != nil {
		t.Fatal(err)
	}
	push := []string{"-d", wc, "--metadata", "zk://" + c.ZK.Addr, "--ledgers", "bk:", "--json", "journal", "push", wrep.RunID}
	if out := mustBin(t, 0, push...); strings.Count(out, `"bookie-ledger"`) != 2 || !strings.Contains(out, "placeholders") {
		t.Fatalf("push dry run:\n%s", out)
	}
	if !mapsEqual(locators(t, ms), locBefore) {
		t.Fatal("the push dry run wrote")
	}
	out, stderr, code = runBin(t, append(push, "--apply")...)
	if code != 0 || strings.Contains(stderr, "does not write to bookies") {
		t.Fatalf("push --apply: exit %d\n%s\n%s", code, stderr, out)
	}
	pushed := map[int64]bool{}
	for _, v := range lost {
		ie := indexEntry(t, ms, v.Key, v.Version)
		id := ie.GetPosition().GetLedgerId()
		pushed[id] = true
		r, err := c.ReadLedger(id, "", false)
		if err != nil || len(r.Entries) != 1 {
			t.Fatalf("bk tool read (recovery) of pushed ledger %d: %+v, %v", id, r, err)
		}
		se, err := formats.DecodeSchemaEntry(r.Entries[0])
		if err != nil {
			t.Fatal(err)
		}
		var info schemapb.SchemaInfo
		if err := proto.Unmarshal(se.GetSchemaData(), &info); err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(info.GetSchema()); !bytes.Equal(h[:], ie.GetHash()) {
			t.Fatalf("pushed ledger %d: the definition's SHA-256 is not the locator's", id)
		}
		for _, ie := range se.GetIndex() {
			if n := ie.GetPosition().GetLedgerId(); n >= 0 && n != vs[0].Ledger && !pushed[n] {
				// Earlier versions it names are readable ledgers of the cluster
				// (-1: version 0 names itself before its ledger exists).
				if _, err := c.ReadLedger(n, "", true); err != nil {
					t.Fatalf("pushed ledger %d's SchemaEntry names ledger %d: %v", id, n, err)
				}
			}
		}
	}
	if got := findingSet(t, mustBin(t, 0, append(live, "check")...)); len(got) != 0 {
		t.Fatalf("check after the push: %v", got)
	}
	var journal struct {
		Runs []struct {
			RunID string `json:"run"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(mustBin(t, 0, "-d", wc, "--json", "journal", "list")), &journal); err != nil || len(journal.Runs) < 2 {
		t.Fatalf("journal list: %v %+v", err, journal)
	}
	last := journal.Runs[len(journal.Runs)-1].RunID
	mustBin(t, 0, "-d", wc, "--metadata", "zk://"+c.ZK.Addr, "--ledgers", "bk:", "journal", "undo", "--apply", last)
	if !mapsEqual(locators(t, ms), locBefore) {
		t.Fatal("undo of the push did not restore the locators")
	}
	for _, l := range c.ListLedgers() {
		if pushed[l.LedgerID] {
			t.Fatalf("after undoing the push, bk tool list still shows ledger %d", l.LedgerID)
		}
	}
}

// locators reads every schema locator.
func locators(t *testing.T, ms store.MetadataStore) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	if err := ms.Walk(t.Context(), formats.SchemasRoot+"/", func(n store.Node) error {
		out[n.Path] = bytes.Clone(n.Value)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func mapsEqual(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// indexEntry is version's entry in key's locator.
func indexEntry(t *testing.T, ms store.MetadataStore, key string, version int64) *schemapb.IndexEntry {
	t.Helper()
	n, err := ms.Get(formats.SchemasRoot + "/" + key)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := formats.DecodeSchemaLocator(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	for _, ie := range loc.GetIndex() {
		if ie.GetVersion() == version {
			return ie
		}
	}
	t.Fatalf("%s: no version %d in the locator", key, version)
	return nil
}
