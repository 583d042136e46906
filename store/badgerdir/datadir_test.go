package badgerdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

func TestReadOnlyOpenWritesNothing(t *testing.T) {
	dir := filledDataDir(t, map[string]string{"/a": "1", "/b/c": "2"}, map[int64]int{3: 20})
	before := snapshot(t, dir)

	d, err := Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := d.Metadata.Get("/a"); err != nil {
		t.Error(err)
	}
	if err := d.Metadata.Walk(ctx, "", func(store.Node) error { return nil }); err != nil {
		t.Error(err)
	}
	if err := d.Ledgers.Entries(ctx, 3, 0, -1, func(int64, []byte) error { return nil }); err != nil {
		t.Error(err)
	}
	if _, err := d.Ledgers.LastEntry(3); err != nil {
		t.Error(err)
	}
	if err := d.Ledgers.LedgerIDs(ctx, func(int64, int64) error { return nil }); err != nil {
		t.Error(err)
	}
	if err := d.RawLedgerIteration(ctx, func(k, v []byte) error { return nil }); err != nil {
		t.Error(err)
	}
	if err := d.BackupMetadata(new(bytes.Buffer)); err != nil {
		t.Error(err)
	}
	if len(d.Notes) != 0 || d.SandboxPath != "" {
		t.Errorf("clean dir: notes %q, sandbox %q", d.Notes, d.SandboxPath)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	assertSameSnapshot(t, before, snapshot(t, dir))
}

func TestWritesOnReadOnlyDir(t *testing.T) {
	d := mustOpen(t, filledDataDir(t, map[string]string{"/a": "1"}, map[int64]int{3: 2}), store.Options{ReadOnly: true})
	n, err := d.Metadata.Get("/a")
	if err != nil {
		t.Fatal(err)
	}
	w := d.NewBulkWriter()
	writes := map[string]func() error{
		"CompareAndSet":       func() error { _, err := d.Metadata.CompareAndSet("/a", n.Version, nil); return err },
		"CompareAndDelete":    func() error { return d.Metadata.CompareAndDelete("/a", n.Version) },
		"PutEntry":            func() error { return d.Ledgers.PutEntry(3, 9, nil) },
		"DeleteLedgerEntries": func() error { return d.Ledgers.DeleteLedgerEntries(3) },
		"BulkWriter.PutNode":  func() error { return w.PutNode("/x", nil) },
		"BulkWriter.PutEntry": func() error { return w.PutEntry(1, 1, nil) },
		"BulkWriter.Delete":   func() error { return w.DeleteNode("/a") },
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("%s: err = %v, want ErrReadOnly", name, err)
		}
	}
	if last, err := d.Ledgers.LastEntry(3); err != nil || last != 1 {
		t.Errorf("LastEntry(3) = %d, %v after refused writes", last, err)
	}
}

func TestOpenNotADataDir(t *testing.T) {
	empty := t.TempDir()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	onlyMeta := t.TempDir()
	os.Mkdir(filepath.Join(onlyMeta, MetadataDirName), 0o755)
	onlyLedgers := t.TempDir()
	os.Mkdir(filepath.Join(onlyLedgers, LedgersDirName), 0o755)
	noManifest := t.TempDir()
	os.Mkdir(filepath.Join(noManifest, MetadataDirName), 0o755)
	os.Mkdir(filepath.Join(noManifest, LedgersDirName), 0o755)
	metaIsFile := filledDataDir(t, nil, nil)
	os.RemoveAll(filepath.Join(metaIsFile, MetadataDirName))
	os.WriteFile(filepath.Join(metaIsFile, MetadataDirName), nil, 0o600)

	cases := []struct {
		name, path, mention string
	}{
		{"missing", filepath.Join(empty, "nope"), "no such file"},
		{"file", file, "not a directory"},
		{"empty dir", empty, "neither metadata/ nor ledgers/"},
		{"only metadata", onlyMeta, "ledgers/ is missing"},
		{"only ledgers", onlyLedgers, "metadata/ is missing"},
		{"metadata is a file", metaIsFile, "metadata is not a directory"},
		{"no manifest", noManifest, "no MANIFEST"},
	}
	for _, c := range cases {
		for _, ro := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/readonly=%v", c.name, ro), func(t *testing.T) {
				before := snapshot(t, filepath.Dir(c.path))
				d, err := Open(c.path, store.Options{ReadOnly: ro})
				if err == nil {
					d.Close()
					t.Fatal("Open succeeded")
				}
				if !errors.Is(err, store.ErrNotDataDir) || !strings.Contains(err.Error(), c.mention) || !strings.Contains(err.Error(), c.path) {
					t.Errorf("err = %v; want ErrNotDataDir naming %s and mentioning %q", err, c.path, c.mention)
				}
				assertSameSnapshot(t, before, snapshot(t, filepath.Dir(c.path)))
			})
		}
	}
}

func TestCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Metadata.CompareAndSet("/a", 0, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a data dir: err = %v, want fs.ErrExist", err)
	}
	d = mustOpen(t, dir, store.Options{ReadOnly: true})
	if n, err := d.Metadata.Get("/a"); err != nil || string(n.Value) != "1" {
		t.Errorf("after reopen: %q, %v", n.Value, err)
	}

	// A dir holding other things (a journal) is fine.
	withJournal := t.TempDir()
	os.Mkdir(filepath.Join(withJournal, "journal"), 0o755)
	d2, err := Create(withJournal)
	if err != nil {
		t.Fatal(err)
	}
	d2.Close()
}

func TestOpenLockedInProcess(t *testing.T) {
	dir := filledDataDir(t, nil, nil)
	w := mustOpen(t, dir, store.Options{})
	for _, ro := range []bool{false, true} {
		d, err := Open(dir, store.Options{ReadOnly: ro})
		if err == nil {
			d.Close()
			t.Fatalf("second open (readonly=%v) succeeded while a writer holds the dir", ro)
		}
		if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "another process") {
			t.Errorf("readonly=%v: err = %v, want ErrLocked saying another process has it", ro, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Readers share the dir.
	r1 := mustOpen(t, dir, store.Options{ReadOnly: true})
	r2 := mustOpen(t, dir, store.Options{ReadOnly: true})
	r1.Close()
	r2.Close()
}

func TestOpenLockedBySubprocess(t *testing.T) {
	dir := filledDataDir(t, map[string]string{"/a": "1"}, nil)
	cmd, stdin := startHelper(t, "hold", dir)
	_, err := Open(dir, store.Options{ReadOnly: true})
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Errorf("err = %v, want ErrLocked naming %s", err, dir)
	}
	stdin.Close() // the helper closes cleanly and exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	d := mustOpen(t, dir, store.Options{ReadOnly: true})
	if len(d.Notes) != 0 {
		t.Errorf("after a clean close: notes %q", d.Notes)
	}
}
