package badgerdir

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// level0Tables opens one database of a closed dir read-only and counts its
// level-0 tables.
func level0Tables(t *testing.T, dir string) int {
	t.Helper()
	db, err := OpenDB(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	for _, ti := range db.Tables() {
		if ti.Level == 0 {
			n++
		}
	}
	return n
}

// TestSessionLeavesLevelZeroFlat: a writing session that flushes many tables
// leaves its metadata store flattened (at most the last flush on level 0), one
// that writes a few nodes leaves one small table and no compaction, and every
// node reads back either way.
func TestSessionLeavesLevelZeroFlat(t *testing.T) {
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, MetadataDirName)
	value := func(i, round int) []byte { return bytes.Repeat([]byte{byte(i), byte(round)}, 5000) }
	const big = 6000 // 60 MB of values: many memtables flushed
	write := func(n, round int) {
		d := mustOpen(t, dir, store.Options{})
		var batch []store.NodeWrite
		for i := range n {
			path := fmt.Sprintf("/n/%05d", i)
			var expect uint64
			if cur, err := d.Metadata.Get(path); err == nil {
				expect = cur.Version
			}
			batch = append(batch, store.NodeWrite{Path: path, Expect: expect, Value: value(i, round)})
			if len(batch) == 20 || i == n-1 { // 200 kB: under a session's transaction limit
				if _, err := d.Metadata.(store.NodeBatcher).CompareAndSetNodes(batch); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The flatten holds the Go runtime to a soft memory limit (flatten) and
	// gives back the limit it found.
	const userLimit = 1 << 40
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(userLimit))
	write(big, 1)
	if got := debug.SetMemoryLimit(-1); got != userLimit {
		t.Errorf("memory limit after a session's close: %d, want %d as before", got, userLimit)
	}
	if n := level0Tables(t, meta); n > 1 {
		t.Errorf("after a session that flushed: %d level-0 tables, want at most 1", n)
	}
	write(3, 2)
	after := level0Tables(t, meta)
	if after > 2 {
		t.Errorf("after a session of three nodes: %d level-0 tables, want at most 2 (no pile-up)", after)
	}
	d = mustOpen(t, dir, store.Options{ReadOnly: true, NoSandbox: true})
	for i := range big {
		want := value(i, 1)
		if i < 3 {
			want = value(i, 2)
		}
		n, err := d.Metadata.Get(fmt.Sprintf("/n/%05d", i))
		if err != nil || !bytes.Equal(n.Value, want) {
			t.Fatalf("node %d: %v (value %d bytes)", i, err, len(n.Value))
		}
	}
}
