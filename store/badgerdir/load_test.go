package badgerdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
)

// loaderModel is what a Loader must leave in the data dir: the last write of
// every key, deleted keys absent.
type loaderModel struct {
	nodes   map[string][]byte
	entries map[[2]int64][]byte
}

func newLoaderModel() *loaderModel {
	return &loaderModel{nodes: map[string][]byte{}, entries: map[[2]int64][]byte{}}
}

// newLoader returns a Loader on a new data dir, and the dir.
func newLoader(t *testing.T, opts LoaderOptions) (*Loader, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := CreateLoader(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, dir
}

// closeLoader closes l and checks that its sorts' runs are gone.
func closeLoader(t *testing.T, l *Loader, dir string) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, loadScratchDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run files left: %v", err)
	}
}

// loadRandom makes n random writes through l and into the model: nodes and
// entries in no order, overwrites, deletes of written and unwritten keys, and
// now and then a value past the value-log threshold.
func loadRandom(t *testing.T, l *Loader, m *loaderModel, r *rand.Rand, n int) {
	t.Helper()
	value := func() []byte {
		size := r.IntN(300)
		if r.IntN(500) == 0 {
			size = 200 << 10 // to the value log (loadOptions)
		}
		v := make([]byte, size)
		for i := range v {
			v[i] = byte(r.IntN(256))
		}
		return v
	}
	for range n {
		del := r.IntN(6) == 0
		if r.IntN(2) == 0 {
			path := fmt.Sprintf("/n/%d/%d", r.IntN(40), r.IntN(300))
			if del {
				if err := l.DeleteNode(path); err != nil {
					t.Fatal(err)
				}
				delete(m.nodes, path)
				continue
			}
			v := value()
			if err := l.PutNode(path, v); err != nil {
				t.Fatal(err)
			}
			m.nodes[path] = v
			continue
		}
		k := [2]int64{int64(r.IntN(200)), int64(r.IntN(50))}
		if del {
			if err := l.DeleteEntry(k[0], k[1]); err != nil {
				t.Fatal(err)
			}
			delete(m.entries, k)
			continue
		}
		v := value()
		if err := l.PutEntry(k[0], k[1], v); err != nil {
			t.Fatal(err)
		}
		m.entries[k] = v
	}
}

// checkLoaded opens dir read-only and compares it with the model, in key order.
func checkLoaded(t *testing.T, dir string, m *loaderModel) {
	t.Helper()
	d := mustOpen(t, dir, store.Options{ReadOnly: true})
	nodes := 0
	err := d.Metadata.Walk(context.Background(), "", func(n store.Node) error {
		want, ok := m.nodes[n.Path]
		if !ok || !bytes.Equal(n.Value, want) || n.Version != 1 {
			return fmt.Errorf("node %s: %d bytes, version %d; want present %v, %d bytes, version 1", n.Path, len(n.Value), n.Version, ok, len(want))
		}
		nodes++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if nodes != len(m.nodes) {
		t.Errorf("%d nodes stored, want %d", nodes, len(m.nodes))
	}
	entries := 0
	err = d.RawLedgerIteration(context.Background(), func(k, v []byte) error {
		l, e, err := ParseEntryKey(k)
		if err != nil {
			return err
		}
		if want, ok := m.entries[[2]int64{l, e}]; !ok || !bytes.Equal(v, want) {
			return fmt.Errorf("ledger %d entry %d: %d bytes; want present %v, %d bytes", l, e, len(v), ok, len(want))
		}
		entries++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if entries != len(m.entries) {
		t.Errorf("%d entries stored, want %d", entries, len(m.entries))
	}
}

// sortRuns counts the runs the sort of a database has made so far.
func sortRuns(t *testing.T, dir, db string) int {
	t.Helper()
	runs, err := filepath.Glob(filepath.Join(dir, loadScratchDir, "*", "*-"+db))
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// TestLoaderModel: whatever the order of the writes, the data dir holds the
// last write of each key. Small sort budgets spill the writes to many runs,
// then to more than are merged at once, so a key's writes and deletes fall in
// different runs and groups of runs.
func TestLoaderModel(t *testing.T) {
	for _, c := range []struct {
		name    string
		opts    LoaderOptions
		n       int
		minRuns int
	}{
		{"in memory", LoaderOptions{}, 3000, 0},
		{"runs", LoaderOptions{SortBudget: 32 << 10}, 6000, 10},
		// internal/spill merges 256 compressed runs at once.
		{"merge rounds", LoaderOptions{SortBudget: 2 << 10}, 6000, 257},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, dir := newLoader(t, c.opts)
			m := newLoaderModel()
			loadRandom(t, l, m, rand.New(rand.NewPCG(1, uint64(c.n))), c.n)
			if runs := sortRuns(t, dir, MetadataDirName); runs < c.minRuns || c.minRuns == 0 && runs > 0 {
				t.Errorf("%d metadata runs before the commit; the test wants %d at least (0: none)", runs, c.minRuns)
			}
			var merged atomic.Int64
			if err := l.Commit(context.Background(), func(n int64) { merged.Add(n) }); err != nil {
				t.Fatal(err)
			}
			if n := merged.Load(); n != l.Writes() || l.Writes() != int64(c.n) {
				t.Errorf("progress counted %d writes merged; %d written, %d made", n, l.Writes(), c.n)
			}
			if err := l.PutNode("/late", nil); !errors.Is(err, errLoaderDone) {
				t.Errorf("PutNode after Commit: %v, want errLoaderDone", err)
			}
			closeLoader(t, l, dir)
			checkLoaded(t, dir, m)
		})
	}
}

// TestLoaderLastWriteWins: of a key's writes, the last one decides: a put's
// value is stored, a delete leaves the key absent, whatever came before,
// whether the writes are in one sort buffer or each in another run (filler
// writes between them fill the small budget).
func TestLoaderLastWriteWins(t *testing.T) {
	type op struct {
		del   bool
		value string
	}
	put := func(v string) op { return op{value: v} }
	del := op{del: true}
	cases := []struct {
		name string
		ops  []op
	}{
		{"put", []op{put("a")}},
		{"put put", []op{put("a"), put("b")}},
		{"put put put", []op{put("a"), put("b"), put("c")}},
		{"put delete", []op{put("a"), del}},
		{"delete put", []op{del, put("a")}},
		{"put delete put", []op{put("a"), del, put("b")}},
		{"put put delete", []op{put("a"), put("b"), del}},
		{"delete", []op{del}},
		{"delete delete", []op{del, del}},
		{"put empty", []op{put("a"), put("")}},
	}
	for _, budget := range []int{0, 4 << 10} {
		t.Run(fmt.Sprintf("budget %d", budget), func(t *testing.T) {
			l, dir := newLoader(t, LoaderOptions{SortBudget: budget})
			m := newLoaderModel()
			filler := 0
			fill := func() {
				if budget == 0 {
					return
				}
				for range 20 { // some 3 KB: past half the budget, a run
					path := fmt.Sprintf("/filler/%06d", filler)
					v := bytes.Repeat([]byte{'f'}, 100)
					filler++
					if err := l.PutNode(path, v); err != nil {
						t.Fatal(err)
					}
					if err := l.PutEntry(1<<40, int64(filler), v); err != nil {
						t.Fatal(err)
					}
					m.nodes[path], m.entries[[2]int64{1 << 40, int64(filler)}] = v, v
				}
			}
			for step := range 3 {
				for i, c := range cases {
					if step >= len(c.ops) {
						continue
					}
					o, path, key := c.ops[step], "/case/"+c.name, [2]int64{int64(i + 1), 0}
					if o.del {
						if err := l.DeleteNode(path); err != nil {
							t.Fatal(err)
						}
						if err := l.DeleteEntry(key[0], key[1]); err != nil {
							t.Fatal(err)
						}
						delete(m.nodes, path)
						delete(m.entries, key)
						continue
					}
					if err := l.PutNode(path, []byte(o.value)); err != nil {
						t.Fatal(err)
					}
					if err := l.PutEntry(key[0], key[1], []byte(o.value)); err != nil {
						t.Fatal(err)
					}
					m.nodes[path], m.entries[key] = []byte(o.value), []byte(o.value)
				}
				fill()
			}
			if runs := sortRuns(t, dir, MetadataDirName); budget > 0 && runs < 3 {
				t.Fatalf("%d metadata runs: the writes of a key should fall in different runs", runs)
			}
			if err := l.Commit(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			closeLoader(t, l, dir)
			checkLoaded(t, dir, m)
			// The model itself, so that a broken model cannot pass.
			for _, want := range []struct {
				name  string
				value string // "-": absent
			}{{"put put", "b"}, {"put delete", "-"}, {"delete put", "a"}, {"put delete put", "b"}, {"put put delete", "-"}, {"put empty", ""}} {
				v, ok := m.nodes["/case/"+want.name]
				if want.value == "-" && ok || want.value != "-" && (!ok || string(v) != want.value) {
					t.Fatalf("model: %s holds %q (present %v), want %q", want.name, v, ok, want.value)
				}
			}
		})
	}
}

// TestLoaderTables: a database of many tables, each at the last level, in key
// order and not overlapping, written through the paced StreamWriter.
func TestLoaderTables(t *testing.T) {
	l, dir := newLoader(t, LoaderOptions{})
	m := newLoaderModel()
	r := rand.New(rand.NewPCG(2, 2))
	// 12 MB that do not compress: 12 tables or more.
	for i := range 3000 {
		v := make([]byte, 4096)
		for j := range v {
			v[j] = byte(r.IntN(256))
		}
		id := int64(r.IntN(3000))*10 + int64(i%10)
		if err := l.PutEntry(id, int64(i), v); err != nil {
			t.Fatal(err)
		}
		m.entries[[2]int64{id, int64(i)}] = v
	}
	if err := l.Commit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	closeLoader(t, l, dir)
	tables := mustOpen(t, dir, store.Options{ReadOnly: true}).ledgers.Tables()
	if len(tables) < 5 {
		t.Fatalf("%d tables", len(tables))
	}
	// Badger lists a level's tables by id; the StreamWriter builds tables
	// concurrently, so ids need not follow key order.
	slices.SortFunc(tables, func(a, b badger.TableInfo) int { return bytes.Compare(a.Left, b.Left) })
	for i, tb := range tables {
		if tb.Level != tables[0].Level || tb.Level == 0 {
			t.Errorf("table %d at level %d, table %d at %d", tb.ID, tb.Level, tables[0].ID, tables[0].Level)
		}
		if i > 0 && bytes.Compare(tables[i-1].Right, tb.Left) >= 0 {
			t.Errorf("table %d overlaps table %d, the one before it in key order", tb.ID, tables[i-1].ID)
		}
	}
	checkLoaded(t, dir, m)
}

// TestLoaderRefuses: bad keys, values and writes after a failure or a
// commit fail without reaching the data dir; a commit of nothing leaves two
// empty databases.
func TestLoaderRefuses(t *testing.T) {
	l, dir := newLoader(t, LoaderOptions{})
	for name, err := range map[string]error{
		"empty path":   l.PutNode("", []byte("x")),
		"long path":    l.PutNode("/"+strings.Repeat("a", maxKeySize), []byte("x")),
		"delete empty": l.DeleteNode(""),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := l.Commit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(context.Background(), nil); !errors.Is(err, errLoaderDone) {
		t.Errorf("second Commit: %v", err)
	}
	closeLoader(t, l, dir)
	checkLoaded(t, dir, &loaderModel{})
	if _, err := CreateLoader(dir, LoaderOptions{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("CreateLoader on a data dir: %v, want ErrExist", err)
	}
}

// TestLoaderCommitCancelled: a Commit whose context is done stops with its
// error, and the Loader takes nothing more; Close still removes the runs.
func TestLoaderCommitCancelled(t *testing.T) {
	l, dir := newLoader(t, LoaderOptions{SortBudget: 32 << 10})
	loadRandom(t, l, newLoaderModel(), rand.New(rand.NewPCG(3, 3)), 3000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Commit(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit with a cancelled context: %v", err)
	}
	if err := l.PutNode("/late", nil); !errors.Is(err, errLoaderDone) {
		t.Errorf("PutNode after a failed Commit: %v, want errLoaderDone", err)
	}
	closeLoader(t, l, dir)
}
