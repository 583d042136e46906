package etcddb_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/etcddb"
	"github.com/ledgermedic/ledgermedic/store/storetest"
)

// openDBBoth opens file in memory and read onto disk.
func openDBBoth(t *testing.T, file string, ro store.RemoteOptions) (mem, disk store.MetadataBackend) {
	t.Helper()
	for _, above := range []int64{1 << 62, -1} {
		restore := etcddb.SetSpillAbove(above)
		s := mustOpenDB(t, file, ro)
		restore()
		if mem == nil {
			mem = s
		} else {
			disk = s
		}
	}
	if etcddb.Spilled(mem) || !etcddb.Spilled(disk) {
		t.Fatalf("spilled: %v and %v, want false and true", etcddb.Spilled(mem), etcddb.Spilled(disk))
	}
	return mem, disk
}

// Property: a db read onto disk shows what the same db held in memory shows:
// every walk (from any start, under any prefix), every Get and GetNodes
// (storetest.SameReads), the revision and the notes but the one that says it was read onto disk, at the
// newest revision and at earlier ones. Keys are written, rewritten and deleted
// in random order, share prefixes and sort around '/'; some are not Pulsar
// paths.
func TestEtcdDBSpilledEqualsInMemory(t *testing.T) {
	pieces := []string{"a", "-", ".", "/", "0", "\x00", "\xff", "topic-"}
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 17))
		pool := make([]string, 20+rng.IntN(300))
		for i := range pool {
			p := "/"
			if i%40 == 39 {
				p = "other" // not a Pulsar path
			}
			for range rng.IntN(8) {
				p += pieces[rng.IntN(len(pieces))]
			}
			pool[i] = p
		}
		var revs []layoutRev
		for range 50 + rng.IntN(2000) {
			p := pool[rng.IntN(len(pool))]
			if rng.IntN(4) == 0 {
				revs = append(revs, layoutRev{path: p, tomb: true})
				continue
			}
			revs = append(revs, layoutRev{path: p, version: int64(1 + rng.IntN(5)), value: fmt.Appendf(nil, "v%d", len(revs))})
		}
		file := filepath.Join(t.TempDir(), "db")
		if err := writeEtcdLayout(file, revs); err != nil {
			t.Fatal(err)
		}
		for _, rev := range []int64{0, int64(2 + rng.IntN(len(revs)))} {
			mem, disk := openDBBoth(t, file, store.RemoteOptions{Revision: rev})
			what := fmt.Sprintf("seed %d revision %d", seed, rev)
			paths := append(slices.Clone(pool), "/", "/nope")
			t.Run(what, func(t *testing.T) { storetest.SameReads(t, disk, mem, paths, seed, nil) })
			var notes []string
			for _, n := range disk.Source().Notes {
				if !strings.Contains(n, "read onto a sorted file") {
					notes = append(notes, n)
				}
			}
			if !slices.Equal(notes, mem.Source().Notes) || len(notes) == len(disk.Source().Notes) || disk.Source().Revision != mem.Source().Revision {
				t.Fatalf("%s: source onto disk %+v, in memory %+v", what, disk.Source(), mem.Source())
			}
		}
	}
}

// A db read onto disk is closed once read: the copy taken of a db a server holds
// locked is removed at once, and what stays until Close is the sorted file.
func TestEtcdDBSpilledReleasesTheDB(t *testing.T) {
	etcddb.ForceSpill(t)
	file := filepath.Join(t.TempDir(), "db")
	if err := writeEtcdLayout(file, []layoutRev{{path: "/a", version: 1, value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	held, err := bolt.Open(file, 0o600, &bolt.Options{Timeout: time.Second}) // holds the flock, as a running etcd does
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	tmp := t.TempDir()
	u, err := store.ParseMetadataURL("etcd-db:" + file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := etcddb.Open(u, store.Options{ReadOnly: true, SandboxDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Get("/a"); err != nil || string(n.Value) != "x" {
		t.Fatalf("Get: %+v, %v", n, err)
	}
	if !strings.Contains(strings.Join(s.Source().Notes, "\n"), "read a copy") {
		t.Fatalf("no note of reading a copy: %q", s.Source().Notes)
	}
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "ledgermedic-spill-") {
		t.Fatalf("under the sandbox dir while open: %v, want the spill dir alone", ents)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("left after Close: %v", ents)
	}
}
