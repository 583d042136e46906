package badgerdir

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
)

// cacheTestDir is a closed data dir whose ledger table is larger than the hashed
// footer (so a data block lies outside it), with the verification cache in a
// temp dir and the racy window off (its tables were written a moment ago).
func cacheTestDir(t *testing.T) (dir, table string) {
	t.Helper()
	t.Setenv(store.CacheDirEnv, t.TempDir())
	t.Setenv(VerifyModeEnv, "")
	old := racyWindow
	racyWindow = 0
	t.Cleanup(func() { racyWindow = old })
	dir = filledDataDir(t, map[string]string{"/a": "1", "/b": "2"}, map[int64]int{1: 4000, 2: 4000})
	ssts, _ := filepath.Glob(filepath.Join(dir, LedgersDirName, "*.sst"))
	for _, s := range ssts {
		if fi, err := os.Stat(s); err == nil && fi.Size() > 4*footerHashSize {
			table = s
		}
	}
	if table == "" {
		t.Fatalf("no ledger table larger than %d bytes in %v", 4*footerHashSize, ssts)
	}
	return dir, table
}

// openCounting opens dir read-only and returns the child processes the open
// started and the damage it found.
func openCounting(t *testing.T, dir string, opts store.Options) (children int64, damage []Damage) {
	t.Helper()
	opts.ReadOnly = true
	before := verifyChildRuns.Load()
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return verifyChildRuns.Load() - before, d.Damage
}

func TestVerifyCacheHitSkipsChild(t *testing.T) {
	dir, _ := cacheTestDir(t)
	if n, dmg := openCounting(t, dir, store.Options{}); n == 0 || len(dmg) > 0 {
		t.Fatalf("cold open: %d children, damage %v; want children and no damage", n, dmg)
	}
	n, dmg := openCounting(t, dir, store.Options{})
	if n != 0 || len(dmg) > 0 {
		t.Fatalf("warm open: %d children, damage %v; want none", n, dmg)
	}
	// What the cache let through still reads.
	d := mustOpen(t, dir, store.Options{ReadOnly: true})
	v, err := d.Ledgers.Entry(2, 3999)
	if err != nil || string(v) != string(entryValue(2, 3999)) {
		t.Fatalf("entry 2/3999 through a cached open: %q, %v", v, err)
	}
}

func TestVerifyCacheInvalidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, table string)
	}{
		{"mtime", func(t *testing.T, table string) {
			if err := os.Chtimes(table, time.Time{}, time.Now().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
		}},
		{"rewritten in place, mtime restored", func(t *testing.T, table string) {
			fi, _ := os.Stat(table)
			b, _ := os.ReadFile(table)
			if err := os.WriteFile(table, b, 0o644); err != nil { // same bytes: only ctime tells
				t.Fatal(err)
			}
			if err := os.Chtimes(table, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by a copy (new inode)", func(t *testing.T, table string) {
			fi, _ := os.Stat(table)
			b, _ := os.ReadFile(table)
			tmp := table + ".new"
			if err := os.WriteFile(tmp, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, table); err != nil {
				t.Fatal(err)
			}
		}},
		{"size", func(t *testing.T, table string) {
			f, err := os.OpenFile(table, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte{0}); err != nil {
				t.Fatal(err)
			}
		}},
		{"footer differs (identity otherwise equal)", func(t *testing.T, table string) {
			// ctime cannot be set back from user space; forge the cache entry instead,
			// as if only the footer bytes had changed.
			dir := filepath.Dir(filepath.Dir(table))
			vc := openVerifyCache(dir, false)
			rel := filepath.Join(LedgersDirName, filepath.Base(table))
			e, ok := vc.file.Tables[rel]
			if !ok {
				t.Fatalf("%s not cached", rel)
			}
			e.Footer = strings.Repeat("0", len(e.Footer))
			vc.file.Tables[rel], vc.changed = e, true
			vc.save()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, table := cacheTestDir(t)
			openCounting(t, dir, store.Options{})
			if n, _ := openCounting(t, dir, store.Options{}); n != 0 {
				t.Fatalf("warm open started %d children", n)
			}
			tc.change(t, table)
			if n, _ := openCounting(t, dir, store.Options{}); n == 0 {
				t.Fatalf("after the change, the table was taken from the cache")
			}
		})
	}
}

// flipInDataBlock flips a byte of table's first block, outside the hashed footer.
func flipInDataBlock(t *testing.T, table string) {
	t.Helper()
	f, err := os.OpenFile(table, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 100); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, 100); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyCacheNeverCachesDamage(t *testing.T) {
	dir, table := cacheTestDir(t)
	flipInDataBlock(t, table)
	rel := filepath.Join(LedgersDirName, filepath.Base(table))
	for i := range 3 {
		n, dmg := openCounting(t, dir, store.Options{})
		if n == 0 || len(dmg) != 1 || dmg[0].File != rel {
			t.Fatalf("open %d: %d children, damage %v; want the damaged %s verified again and reported", i, n, dmg, rel)
		}
		if _, cached := openVerifyCache(dir, false).file.Tables[rel]; cached {
			t.Fatalf("open %d: damaged %s is in the cache", i, rel)
		}
	}
}

// TestFullVerifyFindsRotTheCacheHides: a bit flip inside a data block that
// changes no metadata (bit rot; simulated by updating the cache entry to the new
// ctime) is not seen by a view that trusts the cache (the documented limit), and is
// found by a full verification (check's, or LEDGERMEDIC_VERIFY=full).
func TestFullVerifyFindsRotTheCacheHides(t *testing.T) {
	dir, table := cacheTestDir(t)
	openCounting(t, dir, store.Options{})
	flipInDataBlock(t, table)
	rel := filepath.Join(LedgersDirName, filepath.Base(table))
	vc := openVerifyCache(dir, false)
	id, err := identify(table)
	if err != nil {
		t.Fatal(err)
	}
	e := vc.file.Tables[rel]
	if e.Footer != id.Footer {
		t.Fatalf("a flip at offset 100 of a %d-byte table changed the footer hash", id.Size)
	}
	e.tableIdentity, vc.changed = id, true
	vc.file.Tables[rel] = e
	vc.save()

	if n, dmg := openCounting(t, dir, store.Options{}); n != 0 || len(dmg) != 0 {
		t.Fatalf("view: %d children, damage %v; the forged entry should have been trusted", n, dmg)
	}
	full := func(t *testing.T, opts store.Options) {
		n, dmg := openCounting(t, dir, opts)
		if n == 0 || len(dmg) != 1 || dmg[0].File != rel {
			t.Fatalf("full verification: %d children, damage %v; want %s reported", n, dmg, rel)
		}
	}
	t.Run("Options.FullVerify", func(t *testing.T) { full(t, store.Options{FullVerify: true}) })
	t.Run("env", func(t *testing.T) {
		t.Setenv(VerifyModeEnv, "full")
		full(t, store.Options{})
	})
	// The full verification dropped the entry: the next view verifies it too.
	if n, dmg := openCounting(t, dir, store.Options{}); n == 0 || len(dmg) != 1 {
		t.Fatalf("view after a full verification: %d children, damage %v", n, dmg)
	}
}

func TestVerifyCacheCorruptFileIgnored(t *testing.T) {
	dir, _ := cacheTestDir(t)
	openCounting(t, dir, store.Options{})
	vc := openVerifyCache(dir, false)
	for _, junk := range []string{"", "{", "null", `{"version":1,"dir":"/elsewhere","tables":{}}`, "\x00\x01garbage"} {
		if err := os.WriteFile(vc.path, []byte(junk), 0o600); err != nil {
			t.Fatal(err)
		}
		if n, dmg := openCounting(t, dir, store.Options{}); n == 0 || len(dmg) != 0 {
			t.Fatalf("cache %q: %d children, damage %v; want everything verified", junk, n, dmg)
		}
		if n, _ := openCounting(t, dir, store.Options{}); n != 0 {
			t.Fatalf("cache %q was not rewritten: %d children on the next open", junk, n)
		}
	}
}

func TestVerifyCacheRacyTablesNotCached(t *testing.T) {
	dir, _ := cacheTestDir(t)
	racyWindow = time.Hour // every table is "just written"
	openCounting(t, dir, store.Options{})
	if n, _ := openCounting(t, dir, store.Options{}); n == 0 {
		t.Fatal("tables written within the racy window were cached")
	}
}

func TestVerifyCacheNeverWritesDataDir(t *testing.T) {
	dir, table := cacheTestDir(t)
	before := snapshot(t, dir)
	openCounting(t, dir, store.Options{})
	openCounting(t, dir, store.Options{})
	openCounting(t, dir, store.Options{FullVerify: true})
	assertSameSnapshot(t, before, snapshot(t, dir))

	// A cache folder inside the data dir is not used at all.
	t.Setenv(store.CacheDirEnv, filepath.Join(dir, LedgersDirName))
	openCounting(t, dir, store.Options{})
	if n, _ := openCounting(t, dir, store.Options{}); n == 0 {
		t.Fatal("a cache inside the data dir was used")
	}
	assertSameSnapshot(t, before, snapshot(t, dir))
	_ = table
}

// crashOnEnv names table files the verify child must die on, as Badger's reader
// does on some damage (log.Fatalf in y.Check, a panic in a goroutine).
const crashOnEnv = "LEDGERMEDIC_TEST_VERIFY_CRASH_ON"

// Package variables are initialized before any init function, so the hook is in
// place before verify.go's init turns this test binary into a verify child.
var _ = func() bool {
	if on := os.Getenv(crashOnEnv); on != "" {
		verifyChildHook = func(c tableCheck) {
			if slices.Contains(strings.Split(on, ","), c.Path) {
				fmt.Fprintln(os.Stderr, "FATAL: test crash on", c.Path)
				os.Exit(1)
			}
		}
	}
	return true
}()

// TestVerifyTablesChildCrash: a table that ends the child process is a result
// about that table; the tables queued behind it in the same child are verified by
// the next one. Truncated tables are found without a crash.
func TestVerifyTablesChildCrash(t *testing.T) {
	_, table := cacheTestDir(t)
	good, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := map[uint64]int{3: 3228, 5: 3228, 8: 10} // table id -> truncated length
	var checks []tableCheck
	for id := uint64(1); id <= 9; id++ {
		b := good
		if n, ok := bad[id]; ok {
			b = good[:n]
		}
		p := filepath.Join(dir, fmt.Sprintf("%06d.sst", id))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		checks = append(checks, tableCheck{ID: id, Path: p, Compressions: []uint32{1}})
	}
	crashOn := []string{checks[1].Path, checks[5].Path, checks[6].Path} // tables 2, 6, 7
	for _, id := range []uint64{2, 6, 7} {
		bad[id] = len(good) // whole, but the child dies on it
	}
	t.Setenv(crashOnEnv, strings.Join(crashOn, ","))
	before := verifyChildRuns.Load()
	res, err := verifyTables(checks)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		r, ok := res[c.ID]
		_, isBad := bad[c.ID]
		switch {
		case !ok:
			t.Errorf("table %d: no result", c.ID)
		case isBad && r.Problem == "":
			t.Errorf("truncated table %d verified", c.ID)
		case !isBad && r.Problem != "":
			t.Errorf("table %d: %s", c.ID, r.Problem)
		}
	}
	for _, id := range []uint64{2, 6, 7} {
		if p := res[id].Problem; !strings.Contains(p, "crashed while reading its index") || !strings.Contains(p, "test crash on") {
			t.Errorf("table %d: problem %q; want the crash and its last line", id, p)
		}
	}
	// A new child follows each crash unless the crash ended its worker's share.
	if runs, most := verifyChildRuns.Load()-before, int64(min(runtime.GOMAXPROCS(0), len(checks))+3); runs < 4 || runs > most {
		t.Errorf("%d children ran; want 4..%d (one per CPU, and one after each of 3 crashes but the last)", runs, most)
	}
}
