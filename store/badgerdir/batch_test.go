package badgerdir

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

func TestCompareAndSetNodes(t *testing.T) {
	d := newWritable(t)
	m := d.Metadata.(store.NodeBatcher)
	va, _ := d.Metadata.CompareAndSet("/a", 0, []byte("a0"))
	vb, _ := d.Metadata.CompareAndSet("/b", 0, []byte("b0"))

	versions, err := m.CompareAndSetNodes([]store.NodeWrite{
		{Path: "/a", Expect: va, Value: []byte("a1")},
		{Path: "/b", Expect: vb, Delete: true},
		{Path: "/c", Value: []byte("c1")},
		{Path: "/empty", Value: nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := m.GetNodes([]string{"/a", "/b", "/c", "/empty", "/missing"})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		value   string
		exists  bool
		version uint64
	}{{"a1", true, versions[0]}, {"", false, 0}, {"c1", true, versions[2]}, {"", true, versions[3]}, {"", false, 0}}
	for i, w := range want {
		n := nodes[i]
		if (n.Version != 0) != w.exists || string(n.Value) != w.value || n.Version != w.version {
			t.Errorf("%s = %q version %d; want %q exists=%v version %d", n.Path, n.Value, n.Version, w.value, w.exists, w.version)
		}
	}
	if versions[1] != 0 || versions[0] == va || versions[0] == 0 {
		t.Errorf("versions = %v (old /a %d): want new versions and 0 for the delete", versions, va)
	}
	// GetNodes agrees with Get.
	for _, n := range nodes {
		g, err := d.Metadata.Get(n.Path)
		if n.Version == 0 {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get(%s) = %v, want not found", n.Path, err)
			}
			continue
		}
		if err != nil || g.Version != n.Version || !bytes.Equal(g.Value, n.Value) {
			t.Errorf("Get(%s) = %+v, %v; GetNodes said %+v", n.Path, g, err, n)
		}
	}
}

func TestCompareAndSetNodesAllOrNothing(t *testing.T) {
	d := newWritable(t)
	m := d.Metadata.(store.NodeBatcher)
	va, _ := d.Metadata.CompareAndSet("/a", 0, []byte("a0"))
	vb, _ := d.Metadata.CompareAndSet("/b", 0, []byte("b0"))
	vb2, _ := d.Metadata.CompareAndSet("/b", vb, []byte("b-other")) // someone wrote /b

	for _, tc := range []struct {
		name   string
		writes []store.NodeWrite
		names  []string
	}{
		{"stale version", []store.NodeWrite{{Path: "/a", Expect: va, Value: []byte("x")}, {Path: "/b", Expect: vb, Value: []byte("x")}}, []string{`"/b"`}},
		{"create of an existing node", []store.NodeWrite{{Path: "/new", Value: []byte("x")}, {Path: "/a", Value: []byte("x")}}, []string{`"/a"`}},
		{"node gone", []store.NodeWrite{{Path: "/a", Expect: va, Value: []byte("x")}, {Path: "/gone", Expect: 7, Value: []byte("x")}}, []string{`"/gone"`}},
		{"delete expecting absence", []store.NodeWrite{{Path: "/a", Expect: va, Value: []byte("x")}, {Path: "/gone", Delete: true}}, []string{`"/gone"`}},
		{"two stale", []store.NodeWrite{{Path: "/a", Expect: va + 50, Value: []byte("x")}, {Path: "/b", Expect: vb, Delete: true}}, []string{`"/a"`, `"/b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.CompareAndSetNodes(tc.writes)
			if !errors.Is(err, store.ErrVersionMismatch) {
				t.Fatalf("err = %v, want ErrVersionMismatch", err)
			}
			for _, name := range tc.names {
				if !strings.Contains(err.Error(), "node "+name) {
					t.Errorf("error does not name %s: %v", name, err)
				}
			}
			nodes, _ := m.GetNodes([]string{"/a", "/b", "/new", "/gone"})
			if string(nodes[0].Value) != "a0" || nodes[0].Version != va || string(nodes[1].Value) != "b-other" ||
				nodes[1].Version != vb2 || nodes[2].Version != 0 || nodes[3].Version != 0 {
				t.Errorf("a refused batch wrote: %+v", nodes)
			}
		})
	}
	if _, err := m.CompareAndSetNodes([]store.NodeWrite{{Path: "/z", Value: []byte("1")}, {Path: "/z", Value: []byte("2")}}); err == nil {
		t.Error("a batch writing one node twice was accepted")
	}
}

func TestBatchesTooBig(t *testing.T) {
	d := newWritable(t)
	// Values under Badger's value threshold (1 MB) go into the transaction whole.
	big := bytes.Repeat([]byte("x"), 900<<10)
	var writes []store.NodeWrite
	var entries []store.EntryWrite
	for i := range 8 {
		writes = append(writes, store.NodeWrite{Path: fmt.Sprintf("/big/%d", i), Value: big})
		entries = append(entries, store.EntryWrite{LedgerID: 9, EntryID: int64(i), Value: big})
	}
	if _, err := d.Metadata.(store.NodeBatcher).CompareAndSetNodes(writes); !errors.Is(err, store.ErrBatchTooBig) {
		t.Errorf("CompareAndSetNodes of 7 MB: err = %v, want ErrBatchTooBig", err)
	}
	if _, err := d.Metadata.Get("/big/0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a too-big batch wrote /big/0: %v", err)
	}
	if err := d.Ledgers.(store.EntryBatcher).PutEntries(entries); !errors.Is(err, store.ErrBatchTooBig) {
		t.Errorf("PutEntries of 7 MB: err = %v, want ErrBatchTooBig", err)
	}
	if _, err := d.Ledgers.LastEntry(9); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a too-big entry batch wrote: %v", err)
	}
	// One fits: a transaction holds 15% of the writable memtable (1.2 MB), and
	// Pulsar keeps metadata nodes under 1 MB.
	if _, err := d.Metadata.(store.NodeBatcher).CompareAndSetNodes(writes[:1]); err != nil {
		t.Errorf("one node of 900 kB: %v", err)
	}
}

func TestPutEntries(t *testing.T) {
	d := newWritable(t)
	b := d.Ledgers.(store.EntryBatcher)
	if err := b.PutEntries(nil); err != nil {
		t.Fatal(err)
	}
	entries := []store.EntryWrite{{LedgerID: 3, EntryID: 0, Value: []byte("e0")}, {LedgerID: 3, EntryID: 1}, {LedgerID: 4, EntryID: 7, Value: []byte("x")}}
	if err := b.PutEntries(entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		v, err := d.Ledgers.Entry(e.LedgerID, e.EntryID)
		if err != nil || !bytes.Equal(v, e.Value) {
			t.Errorf("ledger %d entry %d = %q, %v; want %q", e.LedgerID, e.EntryID, v, err, e.Value)
		}
	}
}

func TestBatchesOnReadOnly(t *testing.T) {
	dir := filledDataDir(t, map[string]string{"/a": "1"}, nil)
	d := mustOpen(t, dir, store.Options{ReadOnly: true})
	if _, err := d.Metadata.(store.NodeBatcher).CompareAndSetNodes([]store.NodeWrite{{Path: "/b"}}); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("CompareAndSetNodes: %v, want ErrReadOnly", err)
	}
	if err := d.Ledgers.(store.EntryBatcher).PutEntries([]store.EntryWrite{{LedgerID: 1, EntryID: 0}}); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("PutEntries: %v, want ErrReadOnly", err)
	}
	if n, err := d.Metadata.(store.NodeBatcher).GetNodes([]string{"/a"}); err != nil || string(n[0].Value) != "1" {
		t.Errorf("GetNodes on read-only = %+v, %v", n, err)
	}
}

// Property: a random sequence of batches, each with right or stale versions, leaves
// the store equal to a model that applies each batch whole or not at all.
func TestCompareAndSetNodesModel(t *testing.T) {
	d := newWritable(t)
	m := d.Metadata.(store.NodeBatcher)
	r := rand.New(rand.NewPCG(3, 4))
	type node struct {
		value   string
		version uint64
	}
	model := map[string]node{}
	paths := []string{"/p/0", "/p/1", "/p/2", "/p/3", "/p/4"}
	for step := range 300 {
		var writes []store.NodeWrite
		ok := true
		for _, p := range paths {
			if r.IntN(2) == 0 {
				continue
			}
			cur, exists := model[p]
			w := store.NodeWrite{Path: p, Expect: cur.version, Value: []byte(fmt.Sprint(step))}
			if exists && r.IntN(3) == 0 {
				w.Delete, w.Value = true, nil
			}
			if r.IntN(8) == 0 { // stale or wrong
				w.Expect += 1 + uint64(r.IntN(2))
				ok = false
			}
			if w.Delete && w.Expect == 0 {
				ok = false
			}
			writes = append(writes, w)
		}
		if len(writes) == 0 {
			continue
		}
		versions, err := m.CompareAndSetNodes(writes)
		if ok != (err == nil) {
			t.Fatalf("step %d: err = %v, want success %v", step, err, ok)
		}
		if ok {
			for i, w := range writes {
				if w.Delete {
					delete(model, w.Path)
				} else {
					model[w.Path] = node{string(w.Value), versions[i]}
				}
			}
		} else if !errors.Is(err, store.ErrVersionMismatch) {
			t.Fatalf("step %d: err = %v, want ErrVersionMismatch", step, err)
		}
		nodes, err := m.GetNodes(paths)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			want, exists := model[n.Path]
			if (n.Version != 0) != exists || string(n.Value) != want.value || n.Version != want.version {
				t.Fatalf("step %d: %s = %q v%d, model %+v (exists %v)", step, n.Path, n.Value, n.Version, want, exists)
			}
		}
	}
}

const batchNodes = 40

// writeBatchesForever is the "batches" helper: generation g sets every node
// /batch/NN to "gen g" (with a 4 kB tail) in one CompareAndSetNodes.
func writeBatchesForever(d *Dir) error {
	m := d.Metadata.(store.NodeBatcher)
	tail := strings.Repeat("t", 4096)
	versions := make([]uint64, batchNodes)
	for gen := 0; ; gen++ {
		writes := make([]store.NodeWrite, batchNodes)
		for i := range writes {
			writes[i] = store.NodeWrite{Path: fmt.Sprintf("/batch/%02d", i), Expect: versions[i], Value: []byte(fmt.Sprintf("gen %d %s", gen, tail))}
		}
		var err error
		if versions, err = m.CompareAndSetNodes(writes); err != nil {
			return err
		}
	}
}

// A writer SIGKILLed in the middle of batches leaves every node of the last durable
// batch, never a mixture of two generations.
func TestCompareAndSetNodesCrashAtomic(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for round := range 3 {
		dir := t.TempDir()
		d, err := Create(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		cmd, _ := startHelper(t, "batches", dir)
		time.Sleep(time.Duration(100+round*150) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		d = mustOpen(t, dir, store.Options{}) // writable: Badger replays its log
		gens := map[string]int{}
		for i := range batchNodes {
			n, err := d.Metadata.Get(fmt.Sprintf("/batch/%02d", i))
			if errors.Is(err, store.ErrNotFound) {
				gens["absent"]++
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			gen, _, _ := strings.Cut(strings.TrimPrefix(string(n.Value), "gen "), " ")
			gens["gen "+gen]++
		}
		if len(gens) != 1 {
			t.Fatalf("round %d: after a kill the nodes mix generations: %v", round, gens)
		}
		t.Logf("round %d: %v", round, gens)
	}
}

func TestBadgerOptionsMemory(t *testing.T) {
	dir := t.TempDir()
	ro, rw := badgerOptions(dir, true), badgerOptions(dir, false)
	if ro.BlockCacheSize != blockCacheSize || ro.IndexCacheSize != indexCacheSize || ro.MemTableSize != readOnlyMemTableSize {
		t.Errorf("read-only options: block cache %d, index cache %d, memtable %d", ro.BlockCacheSize, ro.IndexCacheSize, ro.MemTableSize)
	}
	if rw.MemTableSize != writableMemTableSize || rw.NumMemtables != writableMemTables || !rw.SyncWrites || ro.SyncWrites {
		t.Errorf("writable options: memtable %d x %d, sync %v", rw.MemTableSize, rw.NumMemtables, rw.SyncWrites)
	}
	// A write-ahead log left by a writer with bigger memtables raises the size, so
	// its replay fits.
	if err := os.WriteFile(filepath.Join(dir, "00001.mem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "00001.mem"), 128<<20); err != nil {
		t.Fatal(err)
	}
	if got := badgerOptions(dir, true).MemTableSize; got < 128<<20 {
		t.Errorf("memtable size with a 128 MB log = %d, want at least the log's size", got)
	}
}

// A log written with Badger's default 64 MB memtables, cut off by a crash, replays
// under this package's smaller options (Badger exits the process when the memtable
// arena is too small, so this test would die rather than fail).
func TestReplayLogOfBiggerMemtables(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	cmd, _ := startHelper(t, "bigmem", dir)
	cmd.Process.Kill()
	cmd.Wait()
	d = mustOpen(t, dir, store.Options{})
	last, err := d.Ledgers.LastEntry(1)
	if err != nil || last < 1000 {
		t.Fatalf("after replay: last entry %d, %v; want the killed writer's entries", last, err)
	}
}

// writeBigMemtable is the "bigmem" helper: Badger's default options, 30 MB of small
// entries into one memtable (more than this package's memtables hold), then wait to
// be killed.
func writeBigMemtable(dir string) error {
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, LedgersDirName)).WithLogger(nil).WithSyncWrites(true))
	if err != nil {
		return err
	}
	wb := db.NewWriteBatch()
	v := bytes.Repeat([]byte("v"), 100)
	for i := range int64(200_000) {
		if err := wb.Set(EntryKey(1, i), v); err != nil {
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	fmt.Println("ready")
	select {}
}
