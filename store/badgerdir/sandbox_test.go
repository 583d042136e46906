package badgerdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

// What makes Badger v4 refuse a read-only open: a memtable write-ahead log (*.mem)
// left by a process that did not close the database. The file is preallocated
// (2 x MemTableSize) and only a clean close flushes and removes it; a read-only
// open finds its replayable end before its size and returns ErrTruncateNeeded.
func TestBadgerRefusesCrashedDirReadOnly(t *testing.T) {
	dir := crashedDataDir(t)
	mems, _ := filepath.Glob(filepath.Join(dir, MetadataDirName, "*.mem"))
	if len(mems) == 0 {
		t.Fatal("crashed writer left no .mem file")
	}
	_, err := badger.Open(badgerOptions(filepath.Join(dir, MetadataDirName), true))
	if err == nil || !strings.Contains(err.Error(), "Log truncate required") {
		t.Fatalf("badger read-only open of a crashed dir: err = %v, want Log truncate required", err)
	}
	if mapped := mapOpenError(dir, err); !errors.Is(mapped, store.ErrUncleanShutdown) {
		t.Errorf("mapOpenError(%v) = %v, want ErrUncleanShutdown", err, mapped)
	}
}

func TestOpenUncleanUsesSandbox(t *testing.T) {
	dir := crashedDataDir(t)
	before := snapshot(t, dir)
	var log bytes.Buffer
	d, err := Open(dir, store.Options{ReadOnly: true, SandboxDir: t.TempDir(), Logger: &log})
	if err != nil {
		t.Fatal(err)
	}
	if d.SandboxPath == "" || len(d.Notes) != 2 || !strings.Contains(d.Notes[0], "original was not written") {
		t.Errorf("sandbox %q, notes %q; want a sandbox and one note per database", d.SandboxPath, d.Notes)
	}
	if !strings.Contains(log.String(), d.SandboxPath) {
		t.Errorf("log %q does not name the sandbox", log.String())
	}
	// What the crashed writer wrote is visible.
	for i := range 50 {
		n, err := d.Metadata.Get(fmt.Sprintf("/crash/node-%02d", i))
		if err != nil || string(n.Value) != fmt.Sprintf("value %d", i) {
			t.Errorf("node %d: %q, %v", i, n.Value, err)
		}
	}
	if last, err := d.Ledgers.LastEntry(77); err != nil || last != 49 {
		t.Errorf("LastEntry(77) = %d, %v; want 49", last, err)
	}
	if _, err := d.Metadata.CompareAndSet("/x", 0, nil); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("write through sandbox: err = %v, want ErrReadOnly", err)
	}
	sandbox := d.SandboxPath
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sandbox); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sandbox %s left behind: %v", sandbox, err)
	}
	assertSameSnapshot(t, before, snapshot(t, dir))
}

func TestOpenUncleanNoSandbox(t *testing.T) {
	dir := crashedDataDir(t)
	before := snapshot(t, dir)
	_, err := Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
	if !errors.Is(err, store.ErrUncleanShutdown) || !strings.Contains(err.Error(), dir) {
		t.Errorf("err = %v, want ErrUncleanShutdown naming %s", err, dir)
	}
	assertSameSnapshot(t, before, snapshot(t, dir))

	// A writable open recovers the dir itself.
	d := mustOpen(t, dir, store.Options{})
	if last, err := d.Ledgers.LastEntry(77); err != nil || last != 49 {
		t.Errorf("LastEntry(77) = %d, %v; want 49", last, err)
	}
}

func allocated(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks
}

func TestCopyDirSparse(t *testing.T) {
	// The crashed dir holds Badger's real sparse files: a 128 MiB .mem, a 2 GiB .vlog.
	src := filepath.Join(crashedDataDir(t), LedgersDirName)
	// A hand-made file too: data, a 64 MiB hole, data, a trailing hole.
	sparse := filepath.Join(src, "sparse.test")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte("a"), 5000), 0)
	f.WriteAt(bytes.Repeat([]byte("b"), 5000), 64<<20)
	f.Truncate(100 << 20)
	f.Close()

	dst := filepath.Join(t.TempDir(), "copy")
	if err := copyDirSparse(src, dst); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, src)
	delete(want, badgerLockFile)
	assertSameSnapshot(t, want, snapshot(t, dst))
	for name := range want {
		if strings.HasSuffix(name, "/") {
			continue
		}
		orig, cp := allocated(t, filepath.Join(src, name)), allocated(t, filepath.Join(dst, name))
		if cp > orig {
			t.Errorf("%s: copy allocates %d blocks, original %d", name, cp, orig)
		}
	}
}

// writeToValueLog writes nodes and entries into a data dir with a small value
// threshold, so the values live in the value log rather than in the LSM tree.
func writeToValueLog(t *testing.T, dir string, nodes, entries int) {
	t.Helper()
	for _, name := range []string{MetadataDirName, LedgersDirName} {
		opts := badgerOptions(filepath.Join(dir, name), false).WithValueThreshold(64).WithSyncWrites(false)
		db, err := badger.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		// One transaction per key, so the value log holds the values in key order.
		for i := range map[string]int{MetadataDirName: nodes, LedgersDirName: entries}[name] {
			k := []byte(fmt.Sprintf("/n/%03d", i))
			if name == LedgersDirName {
				k = EntryKey(5, int64(i))
			}
			err := db.Update(func(txn *badger.Txn) error { return txn.Set(k, bytes.Repeat([]byte{byte(i)}, 1000)) })
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// truncateLargestVlog cuts the biggest value-log file of db dir to half its size.
func truncateLargestVlog(t *testing.T, dbDir string) {
	t.Helper()
	vlogs, _ := filepath.Glob(filepath.Join(dbDir, "*.vlog"))
	var biggest string
	var size int64
	for _, v := range vlogs {
		if fi, err := os.Stat(v); err == nil && fi.Size() > size {
			biggest, size = v, fi.Size()
		}
	}
	if size < 50_000 {
		t.Fatalf("no value log holds the values (biggest %s, %d bytes)", biggest, size)
	}
	if err := os.Truncate(biggest, size/2); err != nil {
		t.Fatal(err)
	}
}

func TestTruncatedValueLog(t *testing.T) {
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	writeToValueLog(t, dir, 100, 100)
	truncateLargestVlog(t, filepath.Join(dir, MetadataDirName))
	truncateLargestVlog(t, filepath.Join(dir, LedgersDirName))

	d = mustOpen(t, dir, store.Options{ReadOnly: true})
	ctx := context.Background()

	// Early values survive, late ones are gone.
	if v, err := d.Ledgers.Entry(5, 0); err != nil || len(v) != 1000 {
		t.Errorf("Entry(5, 0): %d bytes, %v", len(v), err)
	}
	_, err = d.Ledgers.Entry(5, 99)
	if !errors.Is(err, store.ErrTruncatedValue) || !strings.Contains(err.Error(), "ledger 5 entry 99") {
		t.Errorf("Entry(5, 99): err = %v, want ErrTruncatedValue naming ledger 5 entry 99", err)
	}
	if n, err := d.Metadata.Get("/n/000"); err != nil || len(n.Value) != 1000 {
		t.Errorf("Get(/n/000): %d bytes, %v", len(n.Value), err)
	}
	_, err = d.Metadata.Get("/n/099")
	if !errors.Is(err, store.ErrTruncatedValue) || !strings.Contains(err.Error(), "/n/099") {
		t.Errorf("Get(/n/099): err = %v, want ErrTruncatedValue naming /n/099", err)
	}

	good := 0
	err = d.Ledgers.Entries(ctx, 5, 0, -1, func(e int64, v []byte) error {
		if len(v) != 1000 || v[0] != byte(e) {
			t.Errorf("entry %d: %d bytes served as good", e, len(v))
		}
		good++
		return nil
	})
	if !errors.Is(err, store.ErrTruncatedValue) || good == 0 || good >= 100 {
		t.Errorf("Entries: %d good entries then err %v; want some, then ErrTruncatedValue", good, err)
	}
	err = d.Metadata.Walk(ctx, "/n/", func(n store.Node) error {
		if len(n.Value) != 1000 {
			t.Errorf("%s: %d bytes served as good", n.Path, len(n.Value))
		}
		return nil
	})
	if !errors.Is(err, store.ErrTruncatedValue) {
		t.Errorf("Walk: err = %v, want ErrTruncatedValue", err)
	}
}
