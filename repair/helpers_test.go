package repair

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
)

// generate makes a fixture data dir in a temp dir.
func generate(t testing.TB, opts fixtures.Options) (string, *fixtures.Manifest) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dd")
	m, err := fixtures.Generate(context.Background(), dir, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

func openRW(t testing.TB, dir string) *store.DataDir {
	t.Helper()
	dd, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dd
}

func openRO(t testing.TB, dir string) *store.DataDir {
	t.Helper()
	dd, err := store.Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	return dd
}

func closeDD(t testing.TB, dd *store.DataDir) {
	t.Helper()
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
}

// nodes returns every metadata node's bytes.
func nodes(t testing.TB, dd *store.DataDir) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := dd.Metadata.Walk(context.Background(), "/", func(n store.Node) error {
		out[n.Path] = bytes.Clone(n.Value)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// entries returns every ledger entry's bytes keyed by store key.
func entries(t testing.TB, dd *store.DataDir) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := dd.RawLedgerIteration(context.Background(), func(k, v []byte) error {
		out[string(k)] = bytes.Clone(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hashFiles hashes every file below dir.
func hashFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		out[p] = hex.EncodeToString(h[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loseLedger deletes a ledger's entries, and its node too when node is set.
func loseLedger(t testing.TB, dir string, ledger int64, node bool) {
	t.Helper()
	dd := openRW(t, dir)
	defer closeDD(t, dd)
	if err := dd.Ledgers.DeleteLedgerEntries(ledger); err != nil {
		t.Fatal(err)
	}
	if node {
		n, err := dd.Metadata.Get(formats.LedgerPath(ledger))
		if err != nil {
			t.Fatal(err)
		}
		if err := dd.Metadata.CompareAndDelete(n.Path, n.Version); err != nil {
			t.Fatal(err)
		}
	}
}

// assertAllReadable is a check-style verification: every version of every locator
// has a ledger node that decodes, an entry that decodes to this key's SchemaInfo,
// and (except tombstones) a definition whose SHA-256 is the locator's hash.
func assertAllReadable(t testing.TB, dd *store.DataDir) {
	t.Helper()
	err := scanLocators(context.Background(), dd, "", func(lv *locatorView) error {
		if lv.DecodeErr != nil {
			t.Errorf("%s: %v", lv.Path, lv.DecodeErr)
			return nil
		}
		for _, ie := range append(locatorVersions(lv.Locator), lv.Locator.GetInfo()) {
			l, e := ie.GetPosition().GetLedgerId(), ie.GetPosition().GetEntryId()
			n, err := dd.Metadata.Get(formats.LedgerPath(l))
			if err != nil {
				t.Errorf("%s version %d: ledger %d node: %v", lv.Key, ie.GetVersion(), l, err)
				continue
			}
			md, err := formats.DecodeLedgerMetadata(n.Value)
			if err != nil {
				t.Errorf("%s version %d: ledger %d node: %v", lv.Key, ie.GetVersion(), l, err)
				continue
			}
			b, err := dd.Ledgers.Entry(l, e)
			if err != nil {
				t.Errorf("%s version %d: ledger %d entry %d: %v", lv.Key, ie.GetVersion(), l, e, err)
				continue
			}
			if md.GetLength() != int64(len(b)) || md.GetLastEntryId() != 0 {
				t.Errorf("%s version %d: ledger %d length %d last %d, entry is %d bytes", lv.Key, ie.GetVersion(), l,
					md.GetLength(), md.GetLastEntryId(), len(b))
			}
			_, info, why := decodeStored(b, lv.Key)
			if why != "" {
				t.Errorf("%s version %d: %s", lv.Key, ie.GetVersion(), why)
				continue
			}
			if len(ie.GetHash()) > 0 && !bytes.Equal(formats.SchemaHash(info.GetSchema()), ie.GetHash()) {
				t.Errorf("%s version %d: stored definition does not hash to the locator's hash", lv.Key, ie.GetVersion())
			}
			if len(ie.GetHash()) == 0 && !info.GetDeleted() {
				t.Errorf("%s version %d: tombstone restored as not deleted", lv.Key, ie.GetVersion())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// captureFile captures dir into a JSONL file and returns its path.
func captureFile(t testing.TB, dir string) (string, CaptureStats) {
	t.Helper()
	dd := openRO(t, dir)
	defer closeDD(t, dd)
	p := filepath.Join(t.TempDir(), "capture.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Capture(context.Background(), dd, "", f)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p, st
}

func loadCands(t testing.TB, paths ...string) []Candidate {
	t.Helper()
	c, bad, err := LoadCandidates(paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("input error: %v", b)
	}
	return c
}

// planAndApply plans with cands on a writable open and applies.
func planAndApply(t testing.TB, dir string, cands []Candidate, opts Options) (*RepairPlan, *mutate.Result, error) {
	t.Helper()
	dd := openRW(t, dir)
	defer closeDD(t, dd)
	eng, err := mutate.New(dd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	rp, err := Plan(context.Background(), dd, cands, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), eng, rp, mutate.ApplyOptions{})
	return rp, res, err
}

// manifestVersion finds one version in a fixture manifest.
func manifestVersion(m *fixtures.Manifest, key string, v int64) (fixtures.SchemaVersion, bool) {
	for _, s := range m.Schemas {
		if s.Key != key {
			continue
		}
		for _, sv := range s.Versions {
			if sv.Version == v {
				return sv, true
			}
		}
	}
	return fixtures.SchemaVersion{}, false
}

func storedInfo(t testing.TB, dd *store.DataDir, key string, version int64) *schemapb.SchemaInfo {
	t.Helper()
	n, err := dd.Metadata.Get(formats.SchemasRoot + "/" + key)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := formats.DecodeSchemaLocator(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	for _, ie := range loc.GetIndex() {
		if ie.GetVersion() == version {
			sv, err := readVersion(dd, key, ie)
			if err != nil {
				t.Fatal(err)
			}
			return sv.Info
		}
	}
	t.Fatalf("%s has no version %d", key, version)
	return nil
}
