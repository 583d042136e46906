package datadir

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// loadPair opens a read-only data dir holding nodes and a new empty one to load
// them into, through a recordingBatcher over its metadata store.
func loadPair(t *testing.T, nodes map[string]string) (src, dst *DataDir, rec *recordingBatcher) {
	t.Helper()
	src, err := Open(filledDataDir(t, nodes), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if dst, err = Create(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	nb, ok := dst.Metadata.(store.NodeBatcher)
	if !ok {
		t.Fatal("a data dir's metadata store is not a NodeBatcher")
	}
	return src, dst, &recordingBatcher{NodeBatcher: nb}
}

// TestLoadNodesSkip: Skip leaves out its node and the nodes below it, and only
// those (a sibling whose name merely starts with it is loaded).
func TestLoadNodesSkip(t *testing.T) {
	src, dst, nb := loadPair(t, map[string]string{
		"/admin": "a", "/ledgers": "", "/ledgers/00/0000/L0010": "l", "/ledgersx/y": "y",
	})
	n, err := LoadNodes(context.Background(), src.Metadata, nb, LoadOptions{Skip: "/ledgers"})
	if err != nil || n != 2 {
		t.Fatalf("LoadNodes: %d nodes, %v; want 2", n, err)
	}
	for p, want := range map[string]bool{"/admin": true, "/ledgersx/y": true, "/ledgers": false, "/ledgers/00/0000/L0010": false} {
		_, err := dst.Metadata.Get(p)
		if got := err == nil; got != want || err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s loaded: %v (%v), want %v", p, got, err, want)
		}
	}
}

// recordingBatcher writes through to a real store and keeps each batch's paths.
type recordingBatcher struct {
	store.NodeBatcher
	batches [][]string
}

func (r *recordingBatcher) CompareAndSetNodes(writes []store.NodeWrite) ([]uint64, error) {
	paths := make([]string, len(writes))
	for i, w := range writes {
		paths[i] = w.Path
	}
	r.batches = append(r.batches, paths)
	return r.NodeBatcher.CompareAndSetNodes(writes)
}

// TestLoadNodesBatchesTrees: on random trees (names that sort between a node and
// its children, as "a-x" between "a" and "a/b", included) every node is loaded
// with its value, each batch holds at most Batch nodes and no two of one line of
// descent, every node's ancestors were written in an earlier batch, and batches
// are nearly full: no more than the nodes need plus a few per level.
func TestLoadNodesBatchesTrees(t *testing.T) {
	names := []string{"a", "a-x", "b", "c.d", "z"}
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 3))
		nodes := map[string]string{}
		var grow func(parent string, depth int)
		grow = func(parent string, depth int) {
			for _, name := range names {
				if r.IntN(3) == 0 || depth > 4 {
					continue
				}
				p := parent + "/" + name
				nodes[p] = fmt.Sprintf("v%d", r.IntN(1000))
				grow(p, depth+1)
			}
		}
		for len(nodes) < 50 {
			grow("", 0)
		}
		size := 1 + r.IntN(8)
		src, dst, rec := loadPair(t, nodes)
		n, err := LoadNodes(context.Background(), src.Metadata, rec, LoadOptions{Batch: size})
		if err != nil || n != int64(len(nodes)) {
			t.Fatalf("seed %d: LoadNodes: %d nodes, %v; want %d", seed, n, err, len(nodes))
		}
		written := map[string]int{} // path: its batch
		for i, b := range rec.batches {
			if len(b) > size {
				t.Errorf("seed %d: batch %d holds %d nodes, over %d", seed, i, len(b), size)
			}
			for _, p := range b {
				for a := p; strings.LastIndexByte(a, '/') > 0; {
					a = a[:strings.LastIndexByte(a, '/')]
					if j, ok := written[a]; !ok || j >= i {
						t.Errorf("seed %d: %s written in batch %d, its ancestor %s in batch %d (written %v)", seed, p, i, a, j, ok)
					}
				}
			}
			for _, p := range b {
				written[p] = i
			}
		}
		// 5 levels below the root: each full batch written may take a partial
		// one of every level above it along.
		if limit := 6 * (len(nodes)/size + 1); len(rec.batches) > limit {
			t.Errorf("seed %d: %d nodes in %d batches of up to %d, over %d", seed, len(nodes), len(rec.batches), size, limit)
		}
		for p, v := range nodes {
			if got, err := dst.Metadata.Get(p); err != nil || string(got.Value) != v {
				t.Errorf("seed %d: %s holds %q (%v), want %q", seed, p, got.Value, err, v)
			}
		}
	}
}

// TestLoadNodesBatchesFull: a managed ledger's cursors wait for the next batch
// while other managed ledgers fill this one, so a namespace of 640 topics with
// two cursors each loads in full batches, not a batch per topic.
func TestLoadNodesBatchesFull(t *testing.T) {
	nodes := map[string]string{"/managed-ledgers": "", "/managed-ledgers/t": "", "/managed-ledgers/t/ns": "",
		"/managed-ledgers/t/ns/persistent": ""}
	for i := range 640 {
		ml := fmt.Sprintf("/managed-ledgers/t/ns/persistent/topic-%03d", i)
		nodes[ml], nodes[ml+"/c1"], nodes[ml+"/c2"] = "ml", "c", "c"
	}
	src, _, rec := loadPair(t, nodes)
	if n, err := LoadNodes(context.Background(), src.Metadata, rec, LoadOptions{Batch: 64}); err != nil || n != int64(len(nodes)) {
		t.Fatalf("LoadNodes: %d nodes, %v; want %d", n, err, len(nodes))
	}
	// 1,924 nodes: 30 full batches, and the four parents and the tail in a few more.
	if len(rec.batches) > 35 {
		t.Errorf("%d nodes in %d batches of up to 64", len(nodes), len(rec.batches))
	}
}
