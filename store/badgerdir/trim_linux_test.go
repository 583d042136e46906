//go:build linux

package badgerdir

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

func TestParseTableMapping(t *testing.T) {
	dirs := map[string]bool{"/d/ledgers": true}
	cases := []struct {
		line  string
		ok    bool
		start uintptr
		end   uintptr
	}{
		{"7f0000000000-7f0000200000 r--s 00000000 fd:01 42    /d/ledgers/000006.sst", true, 0x7f0000000000, 0x7f0000200000},
		{"7f0000000000-7f0000200000 rw-s 00000000 fd:01 42 /d/ledgers/000006.sst", true, 0x7f0000000000, 0x7f0000200000},
		// private: written pages would be lost; never trimmed
		{"7f0000000000-7f0000200000 rw-p 00000000 fd:01 42 /d/ledgers/000006.sst", false, 0, 0},
		{"7f0000000000-7f0000200000 r--s 00000000 fd:01 42 /other/000006.sst", false, 0, 0},
		{"7f0000000000-7f0000200000 rw-s 00000000 fd:01 42 /d/ledgers/00001.mem", false, 0, 0},
		{"7f0000000000-7f0000200000 rw-s 00000000 fd:01 42 /d/ledgers/000006.sst (deleted)", false, 0, 0},
		{"7f0000000000-7f0000200000 rw-p 00000000 00:00 0", false, 0, 0},
		{"zz-7f0000200000 r--s 00000000 fd:01 42 /d/ledgers/000006.sst", false, 0, 0},
		{"7f0000200000-7f0000000000 r--s 00000000 fd:01 42 /d/ledgers/000006.sst", false, 0, 0},
		{"", false, 0, 0},
	}
	for _, c := range cases {
		r, ok := parseTableMapping(c.line, dirs)
		if ok != c.ok || (ok && (r.start != c.start || r.end != c.end)) {
			t.Errorf("%q: %v %x-%x, want %v %x-%x", c.line, ok, r.start, r.end, c.ok, c.start, c.end)
		}
	}
}

// residentIn sums the resident kB of the mappings of files in dir whose names
// end in suffix (/proc/self/smaps).
func residentIn(t *testing.T, dir, suffix string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	kb, in := 0, false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-"): // a mapping's header line
			in = len(f) >= 6 && filepath.Dir(f[5]) == dir && strings.HasSuffix(f[5], suffix)
		case in && len(f) >= 2 && f[0] == "Rss:":
			n, _ := strconv.Atoi(f[1])
			kb += n
		}
	}
	return kb
}

// writeEntryTables creates a data dir holding entry 0 of ledgers 0..n-1, 2,100
// random bytes each, and closes it.
func writeEntryTables(t *testing.T, n int64) string {
	t.Helper()
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	var batch []store.EntryWrite
	for id := range n {
		batch = append(batch, store.EntryWrite{LedgerID: id, EntryID: 0, Value: randomBytes(id, 2100)})
		if len(batch) == 200 {
			if err := d.Ledgers.(store.EntryBatcher).PutEntries(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTrimDropsTablePages: a trim leaves no table page of the data dir resident,
// every entry reads back the same after it, and it leaves alone the pages of
// other folders' tables and of private mappings (whose written pages exist
// nowhere else).
func TestTrimDropsTablePages(t *testing.T) {
	dir := writeEntryTables(t, 12000) // 25 MB: several tables
	ledgers, _ := filepath.EvalSymlinks(filepath.Join(dir, LedgersDirName))

	// Another folder's table, mapped shared, and a private mapping of a table in
	// the trimmed folder, written to.
	other := t.TempDir()
	otherTable := filepath.Join(other, "000001.sst")
	if err := os.WriteFile(otherTable, bytes.Repeat([]byte{1}, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := mapFile(t, otherTable, syscall.MAP_SHARED)
	private := mapFile(t, otherTable, syscall.MAP_PRIVATE)
	for i := range shared {
		touchSink += int(shared[i]) // fault every page in
	}
	copy(private, bytes.Repeat([]byte{9}, len(private)))

	for _, readOnly := range []bool{true, false} {
		d := mustOpen(t, dir, store.Options{ReadOnly: readOnly, NoSandbox: true})
		d.trimmer.Stop() // trims by hand below
		d.trimmer = nil
		sum := func() [32]byte {
			h := sha256.New()
			err := d.RawLedgerIteration(context.Background(), func(k, v []byte) error {
				h.Write(k)
				h.Write(v)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return [32]byte(h.Sum(nil))
		}
		want := sum()
		if kb := residentIn(t, ledgers, ".sst"); kb < 4<<10 {
			t.Fatalf("read-only=%v: %d kB of tables resident after a full read, want several MB (is the test measuring the right mappings?)", readOnly, kb)
		}
		otherBefore := residentIn(t, other, ".sst")
		dirs := pathSet(d.tableDirs())
		dirs[other] = true // its private mapping must still be left alone
		tr := &mapTrimmer{}
		if !tr.trim(dirs, false) || tr.trimmed == 0 {
			t.Fatalf("read-only=%v: trim failed or advised nothing (%d bytes)", readOnly, tr.trimmed)
		}
		if kb := residentIn(t, ledgers, ".sst"); kb != 0 {
			t.Errorf("read-only=%v: %d kB of tables still resident after the trim", readOnly, kb)
		}
		if got := residentIn(t, other, ".sst"); got < otherBefore-(1<<10) {
			t.Errorf("read-only=%v: private mapping lost pages: %d kB resident, was %d", readOnly, got, otherBefore)
		}
		if !bytes.Equal(private, bytes.Repeat([]byte{9}, len(private))) {
			t.Fatalf("read-only=%v: the private mapping's written bytes changed", readOnly)
		}
		if got := sum(); got != want {
			t.Errorf("read-only=%v: entries read differently after the trim", readOnly)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The other folder's shared mapping was trimmed too (dirs[other]): its pages
	// come back from the page cache.
	if !bytes.Equal(shared, bytes.Repeat([]byte{1}, len(shared))) {
		t.Error("the shared mapping reads back differently after the trim")
	}
}

// TestPageoutSkipsUnmappedTables: the flatten deletes tables between the read
// of /proc/self/maps and the madvise, so a reclaim meets ranges no longer mapped
// (ENOMEM). It goes on with the others instead of stopping (which left the rest
// of a flatten's table pages resident: 60-117 MB at 1M ledgers), and pages them out.
func TestPageoutSkipsUnmappedTables(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	var maps [][]byte
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("%06d.sst", i+1))
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i + 1)}, 4<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		m := mapFile(t, p, syscall.MAP_SHARED)
		for j := 0; j < len(m); j += os.Getpagesize() {
			_ = m[j] // fault every page in
		}
		maps = append(maps, m)
	}
	ranges, err := tableMappings(map[string]bool{dir: true})
	if err != nil || len(ranges) != 3 {
		t.Fatalf("%d table mappings, %v; want 3", len(ranges), err)
	}
	slices.SortFunc(ranges, func(a, b mapRange) int { return cmp.Compare(a.start, b.start) })
	// Unmap the lowest range, as a compaction deleting a table would.
	first := slices.IndexFunc(maps, func(m []byte) bool { return uintptr(unsafe.Pointer(&m[0])) == ranges[0].start })
	if first < 0 {
		t.Fatal("the lowest range is none of the test's mappings")
	}
	if err := syscall.Munmap(maps[first]); err != nil {
		t.Fatal(err)
	}
	n, _, err := adviseRanges(ranges, madvPageout)
	if err != nil {
		t.Fatalf("page-out with an unmapped range: %v", err)
	}
	if want := int64(2 * (4 << 20)); n != want {
		t.Errorf("paged out %d bytes, want %d (the two still mapped)", n, want)
	}
	if kb := residentIn(t, dir, ".sst"); kb > 1<<10 {
		t.Errorf("%d kB of the mapped tables still resident after the page-out", kb)
	}
	for i, m := range maps {
		if i != first && !bytes.Equal(m, bytes.Repeat([]byte{byte(i + 1)}, len(m))) {
			t.Errorf("table %d reads back differently after the page-out", i+1)
		}
	}
}

// TestTrimAdvisesTouchingTablesAtOnce: tables mapped end to end take one
// madvise, not one each, and lose their resident pages all the same; a page-out
// that meets one of them unmapped goes on a table at a time and counts only
// the tables still mapped.
func TestTrimAdvisesTouchingTablesAtOnce(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	const size = 4 << 20
	// Reserve one region, then map each table over a third of it.
	region, err := syscall.Mmap(-1, 0, 3*size, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	base := uintptr(unsafe.Pointer(&region[0]))
	t.Cleanup(func() { syscall.Munmap(region) })
	tables := make([][]byte, 3)
	for i := range tables {
		p := filepath.Join(dir, fmt.Sprintf("%06d.sst", i+1))
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i + 1)}, size), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		_, _, errno := syscall.Syscall6(syscall.SYS_MMAP, base+uintptr(i*size), size, syscall.PROT_READ,
			syscall.MAP_SHARED|syscall.MAP_FIXED, f.Fd(), 0)
		f.Close()
		if errno != 0 {
			t.Fatalf("map %s: %v", p, errno)
		}
		tables[i] = region[i*size : (i+1)*size] // the same addresses, now the table's

		for j := 0; j < size; j += os.Getpagesize() {
			touchSink += int(tables[i][j])
		}
	}
	if kb := residentIn(t, dir, ".sst"); kb < 3*size>>10 {
		t.Fatalf("%d kB of the tables resident before the trim, want all %d kB read", kb, 3*size>>10)
	}
	ranges, err := tableMappings(map[string]bool{dir: true})
	if err != nil || len(ranges) != 3 {
		t.Fatalf("%d table mappings, %v; want 3", len(ranges), err)
	}
	n, calls, err := adviseRanges(ranges, syscall.MADV_DONTNEED)
	if err != nil || n != 3*size || calls != 1 {
		t.Fatalf("advised %d bytes in %d calls (%v), want %d in 1", n, calls, err, 3*size)
	}
	if kb := residentIn(t, dir, ".sst"); kb > 1<<10 {
		t.Errorf("%d kB of the tables still resident after the trim", kb)
	}
	for i, m := range tables {
		if !bytes.Equal(m, bytes.Repeat([]byte{byte(i + 1)}, size)) {
			t.Errorf("table %d reads back differently after the trim", i+1)
		}
	}
	// The middle table unmapped after the ranges were read, as a compaction would.
	if _, _, errno := syscall.Syscall(syscall.SYS_MUNMAP, base+size, size, 0); errno != 0 {
		t.Fatal(errno)
	}
	n, calls, err = adviseRanges(ranges, madvPageout)
	if err != nil || n != 2*size || calls != 4 {
		t.Fatalf("page-out around an unmapped table: %d bytes in %d calls (%v), want %d in 4", n, calls, err, 2*size)
	}
}

// TestTrimmerBoundsResidentTables: the trimmer a read-only open starts keeps a
// full read's resident table pages near trimAfter.
func TestTrimmerBoundsResidentTables(t *testing.T) {
	dir := writeEntryTables(t, 24000) // 50 MB
	ledgers, _ := filepath.EvalSymlinks(filepath.Join(dir, LedgersDirName))
	d := mustOpen(t, dir, store.Options{ReadOnly: true, NoSandbox: true})
	if d.trimmer == nil {
		t.Fatal("a read-only open started no trimmer")
	}
	peak := 0
	n := 0
	err := d.RawLedgerIteration(context.Background(), func(k, v []byte) error {
		if n++; n%500 == 0 {
			peak = max(peak, residentIn(t, ledgers, ".sst"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The poll lets the read run on for a while past trimAfter; 50 MB were read.
	if limit := 32 << 10; peak > limit {
		t.Errorf("resident table pages peaked at %d kB, want under %d kB", peak, limit)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// randomBytes are n bytes Snappy cannot shrink, the same for the same seed.
func randomBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mapFile(t *testing.T, path string, flags int) []byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	b, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ|syscall.PROT_WRITE, flags)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return b
}

// TestOpenBoundsResidentTables: while an open runs (openBounded), the table pages
// it maps are bounded as it goes, not only once the trimmer after the open starts.
// The open here is a stand-in that reads every page of 50 MB of tables through
// shared mappings, as Badger's open reads each table's index.
func TestOpenBoundsResidentTables(t *testing.T) {
	dir := writeEntryTables(t, 24000) // 50 MB
	ledgers, _ := filepath.EvalSymlinks(filepath.Join(dir, LedgersDirName))
	tables, err := filepath.Glob(filepath.Join(ledgers, "*.sst"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("no tables in %s: %v", ledgers, err)
	}
	peak, read := 0, 0
	_, err = openBounded([]string{ledgers}, func() (*badger.DB, error) {
		var sum byte
		for _, table := range tables {
			m := mapFile(t, table, syscall.MAP_SHARED)
			for i := 0; i < len(m); i += os.Getpagesize() {
				sum += m[i]
				if read += os.Getpagesize(); read%(1<<20) == 0 {
					time.Sleep(time.Millisecond) // as an open does I/O: the trimmer polls meanwhile
					peak = max(peak, residentIn(t, ledgers, ".sst"))
				}
			}
		}
		pageSink = sum
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < 40<<20 {
		t.Fatalf("the stand-in read %d bytes of tables, want 40 MB or more", read)
	}
	// The poll lets the open run on for a while past trimAfter.
	if limit := 24 << 10; peak > limit {
		t.Errorf("resident table pages peaked at %d kB during the open, want under %d kB", peak, limit)
	}
}

// pageSink keeps the reads of TestOpenBoundsResidentTables from being optimized away.
var pageSink byte

// TestTrimKeepsTableRanges: a trimmer reads /proc/self/maps once and drops the
// same ranges at every trim after it; it reads it again after a close of any
// database (which unmaps tables), and when asked to, then advising nothing if it
// found the same tables (what grew lies elsewhere).
func TestTrimKeepsTableRanges(t *testing.T) {
	dir := writeEntryTables(t, 12000) // 25 MB: several tables
	ledgers, _ := filepath.EvalSymlinks(filepath.Join(dir, LedgersDirName))
	d := mustOpen(t, dir, store.Options{ReadOnly: true, NoSandbox: true})
	defer d.Close()
	d.trimmer.Stop() // trims by hand below
	d.trimmer = nil
	dirs := pathSet(d.tableDirs())
	tr := &mapTrimmer{}
	readAndTrim := func(step string, reread bool, wantReads int, wantDropped bool) {
		t.Helper()
		err := d.RawLedgerIteration(context.Background(), func(k, v []byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		before := residentIn(t, ledgers, ".sst")
		if before < 4<<10 {
			t.Fatalf("%s: %d kB of tables resident after a full read, want several MB", step, before)
		}
		if !tr.trim(dirs, reread) {
			t.Fatalf("%s: the trim failed", step)
		}
		after := residentIn(t, ledgers, ".sst")
		if wantDropped && after != 0 {
			t.Errorf("%s: %d kB of tables still resident after the trim", step, after)
		}
		if !wantDropped && after < before-(1<<10) {
			t.Errorf("%s: %d kB of tables resident after the trim, was %d: it advised them again", step, after, before)
		}
		if tr.mapsReads != wantReads {
			t.Errorf("%s: /proc/self/maps read %d times, want %d", step, tr.mapsReads, wantReads)
		}
	}
	for i := range 3 {
		readAndTrim(fmt.Sprintf("trim %d", i+1), false, 1, true)
	}
	lockMappings() // what a close of another database does
	mappingsMu.Unlock()
	readAndTrim("after a close", false, 2, true)
	readAndTrim("reread, the same tables", true, 3, false)
	readAndTrim("after the reread", false, 3, true)
}

// touchSink keeps what a test's page reads summed, so that the reads are made.
var touchSink int

// TestTrimmerFindsNewTables: a table mapped after the trimmer read its ranges
// (a session's flush, a load's next table) is found once its pages are what
// grew, and dropped.
func TestTrimmerFindsNewTables(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	first := filepath.Join(dir, "000001.sst")
	if err := os.WriteFile(first, randomBytes(1, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	touch := func(b []byte) (sum int) {
		for i := 0; i < len(b); i += os.Getpagesize() {
			sum += int(b[i]) // a load the compiler keeps
		}
		return sum
	}
	sum := touch(mapFile(t, first, syscall.MAP_SHARED))
	if kb := residentIn(t, dir, ".sst"); kb < 1<<10 {
		t.Fatalf("%d kB resident after reading 1 MB through the mapping (sum %d)", kb, sum)
	}
	tr := startTrimmer([]string{dir}, false)
	defer tr.Stop()
	waitResident := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for residentIn(t, dir, ".sst") != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d kB of tables still resident after 5 s", what, residentIn(t, dir, ".sst"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitResident("the table there at the start")
	second := filepath.Join(dir, "000002.sst")
	if err := os.WriteFile(second, randomBytes(2, 4*trimAfter), 0o644); err != nil {
		t.Fatal(err)
	}
	touchSink += touch(mapFile(t, second, syscall.MAP_SHARED)) // kept: unused, the loads could be dropped
	waitResident("a table mapped after the first trim")
}
