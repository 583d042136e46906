package repair

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func openRW(t testing.TB, dir string) *datadir.DataDir {
	t.Helper()
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dd
}

func closeDD(t testing.TB, dd *datadir.DataDir) {
	t.Helper()
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
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

// assertAllReadable is a check-style verification, independent of this package's
// scanning: every version of every locator has a ledger node that decodes, an
// entry that decodes to this key's SchemaInfo, and (except tombstones) a
// definition whose SHA-256 is the locator's hash.
func assertAllReadable(t testing.TB, dd *datadir.DataDir) {
	t.Helper()
	locators := 0
	err := dd.Metadata.Walk(context.Background(), formats.SchemasRoot+"/", func(n store.Node) error {
		locators++
		key := strings.TrimPrefix(n.Path, formats.SchemasRoot+"/")
		loc, err := formats.DecodeSchemaLocator(n.Value)
		if err != nil {
			t.Errorf("%s: %v", n.Path, err)
			return nil
		}
		for _, ie := range append(loc.GetIndex(), loc.GetInfo()) {
			info, err := readSchemaInfo(dd, ie)
			if err != nil {
				t.Errorf("%s version %d: %v", key, ie.GetVersion(), err)
				continue
			}
			if info.GetSchemaId() != key {
				t.Errorf("%s version %d: entry is schema %q's", key, ie.GetVersion(), info.GetSchemaId())
			}
			if len(ie.GetHash()) > 0 && !bytes.Equal(formats.SchemaHash(info.GetSchema()), ie.GetHash()) {
				t.Errorf("%s version %d: stored definition does not hash to the locator's hash", key, ie.GetVersion())
			}
			if len(ie.GetHash()) == 0 && !info.GetDeleted() {
				t.Errorf("%s version %d: tombstone restored as not deleted", key, ie.GetVersion())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if locators == 0 {
		t.Fatal("no schema locator to check")
	}
}

// readSchemaInfo reads what an index entry points at as a broker would: the
// ledger's node (closed, last entry 0, length the entry's), then the entry.
func readSchemaInfo(dd *datadir.DataDir, ie *schemapb.IndexEntry) (*schemapb.SchemaInfo, error) {
	l, e := ie.GetPosition().GetLedgerId(), ie.GetPosition().GetEntryId()
	n, err := dd.Metadata.Get(formats.LedgerPath(l))
	if err != nil {
		return nil, fmt.Errorf("ledger %d node: %w", l, err)
	}
	md, err := formats.DecodeLedgerMetadata(n.Value)
	if err != nil {
		return nil, fmt.Errorf("ledger %d node: %w", l, err)
	}
	b, err := dd.Ledgers.Entry(l, e)
	if err != nil {
		return nil, fmt.Errorf("ledger %d entry %d: %w", l, e, err)
	}
	if md.GetState() != bkpb.LedgerMetadataFormat_CLOSED || md.GetLength() != int64(len(b)) || md.GetLastEntryId() != 0 {
		return nil, fmt.Errorf("ledger %d: state %v length %d last %d, entry is %d bytes", l, md.GetState(), md.GetLength(), md.GetLastEntryId(), len(b))
	}
	se, err := formats.DecodeSchemaEntry(b)
	if err != nil {
		return nil, fmt.Errorf("ledger %d entry %d: %w", l, e, err)
	}
	return formats.DecodeSchemaInfo(se.GetSchemaData())
}

// captureFile captures dir into a JSONL file and returns its path.
func captureFile(t testing.TB, dir string) (string, CaptureStats) {
	t.Helper()
	dd := testutil.OpenReadOnly(t, dir)
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
func manifestVersion(t testing.TB, m *fixtures.Manifest, key string, v int64) fixtures.SchemaVersion {
	t.Helper()
	for _, s := range m.Schemas {
		if s.Key != key {
			continue
		}
		for _, sv := range s.Versions {
			if sv.Version == v {
				return sv
			}
		}
	}
	t.Fatalf("the manifest has no %s version %d", key, v)
	return fixtures.SchemaVersion{}
}

// storedInfo reads the SchemaInfo the locator of key points at for version.
func storedInfo(t testing.TB, dd *datadir.DataDir, key string, version int64) *schemapb.SchemaInfo {
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
			info, err := readSchemaInfo(dd, ie)
			if err != nil {
				t.Fatalf("%s version %d: %v", key, version, err)
			}
			return info
		}
	}
	t.Fatalf("%s has no version %d", key, version)
	return nil
}

func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
