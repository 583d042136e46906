package etcddb_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil/rusage"
)

// Benchmarks of the etcd backends, each beside its physical baseline measured in the
// same run (docs/benchmarks.md, "Offline readers of other programs' files" and "Live ZooKeeper and etcd"): compare ns/op of the pairs.

const (
	benchDBKeys = 200_000
)

// benchEtcdDB writes a db in etcd's layout (key bucket: revision -> mvccpb.KeyValue,
// meta bucket) straight with bbolt: 200k Pulsar-like paths in random order, a fifth
// of them written twice and one in fifty deleted, as a real history would be.
func benchEtcdDB(b *testing.B) string {
	b.Helper()
	file := filepath.Join(b.TempDir(), "db")
	if err := writeBenchDB(file); err != nil {
		b.Fatal(err)
	}
	return file
}

func writeBenchDB(file string) error {
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 200)
	var revs []layoutRev
	for i, n := range rng.Perm(benchDBKeys) {
		path := fmt.Sprintf("/managed-ledgers/tenant-%03d/ns/persistent/topic-%06d", n%500, n)
		revs = append(revs, layoutRev{path: path, version: 1, value: value})
		if i%5 == 0 {
			revs = append(revs, layoutRev{path: path, version: 2, value: value})
		}
		if i%50 == 0 {
			revs = append(revs, layoutRev{path: path, tomb: true})
		}
	}
	return writeEtcdLayout(file, revs)
}

// layoutRev is one write to a key: a put of value at version, or a delete.
type layoutRev struct {
	path    string
	version int64
	value   []byte
	tomb    bool
}

// writeEtcdLayout writes revs as revisions 2, 3, ... in etcd's bbolt layout.
func writeEtcdLayout(file string, revs []layoutRev) error {
	db, err := bolt.Open(file, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		keys, err := tx.CreateBucket([]byte("key"))
		if err != nil {
			return err
		}
		keys.FillPercent = 1 // sequential revision keys: pack pages as etcd does
		rev := int64(1)
		for _, r := range revs {
			rev++
			k := binary.BigEndian.AppendUint64(nil, uint64(rev))
			k = append(k, '_')
			k = binary.BigEndian.AppendUint64(k, 0)
			kv := &mvccpb.KeyValue{Key: []byte(r.path), CreateRevision: rev, ModRevision: rev, Version: r.version, Value: r.value}
			if r.tomb {
				k = append(k, 't')
				kv = &mvccpb.KeyValue{Key: []byte(r.path)}
			}
			v, err := proto.Marshal(kv)
			if err != nil {
				return err
			}
			if err := keys.Put(k, v); err != nil {
				return err
			}
		}
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return meta.Put([]byte("consistent_index"), binary.BigEndian.AppendUint64(nil, uint64(rev)))
	})
}

// Property: the offline reader shows, in path byte order, each key's newest
// put at or before the revision asked for, and no deleted key. Keys share long
// prefixes and bytes that sort around '/' ('-' and '.' below it, zero bytes,
// 0xff), and are written, rewritten and deleted in random order.
func TestEtcdDBNewestRevisionInPathOrder(t *testing.T) {
	// Pieces that make long shared prefixes and near-equal keys.
	pieces := []string{"a", "b", "-", ".", "/", "0", "\x00", "\xff", "persistent", "topic-0001"}
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		pool := make([]string, 40+rng.IntN(2000))
		for i := range pool {
			p := "/"
			for range rng.IntN(12) {
				p += pieces[rng.IntN(len(pieces))]
			}
			pool[i] = p
		}
		type state struct {
			value   string
			version int64
		}
		live := map[string]state{}
		var revs []layoutRev
		var history []map[string]state // history[i]: state after revision i+2
		for range 50 + rng.IntN(5000) {
			p := pool[rng.IntN(len(pool))]
			if _, ok := live[p]; ok && rng.IntN(4) == 0 {
				delete(live, p)
				revs = append(revs, layoutRev{path: p, tomb: true})
			} else {
				st := state{value: fmt.Sprintf("v%d", len(revs)), version: live[p].version + 1}
				if rng.IntN(10) == 0 {
					st.value = ""
				}
				live[p] = st
				revs = append(revs, layoutRev{path: p, version: st.version, value: []byte(st.value)})
			}
			history = append(history, maps.Clone(live))
		}
		file := filepath.Join(t.TempDir(), "db")
		if err := writeEtcdLayout(file, revs); err != nil {
			t.Fatal(err)
		}
		at := rng.IntN(len(history))
		for _, c := range []struct {
			rev  int64
			want map[string]state
		}{{0, live}, {int64(at + 2), history[at]}} {
			m := mustOpenDB(t, file, store.RemoteOptions{Revision: c.rev})
			var got []string
			err := m.Walk(context.Background(), "", func(n store.Node) error {
				want, ok := c.want[n.Path]
				if !ok || string(n.Value) != want.value || int64(n.Version) != want.version {
					t.Errorf("seed %d revision %d: node %q = %q@%d, want %q@%d (present %v)", seed, c.rev, n.Path, n.Value, n.Version, want.value, want.version, ok)
				}
				got = append(got, n.Path)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Sorted(maps.Keys(c.want))
			if !slices.Equal(got, want) {
				t.Errorf("seed %d revision %d: walked %q, want %q", seed, c.rev, got, want)
			}
		}
	}
}

// BenchmarkEtcdDBRead: open the db offline and walk every node (ours), against a
// bare read-only bbolt cursor walk of the key bucket that decodes each value with
// proto.Unmarshal (what any reader of the format must do), and a cursor walk that
// decodes nothing (the floor). "ratio" runs the baseline and ours back to back in
// each iteration and reports x-of-bare = baseline time / our time (wall and CPU),
// so load from other jobs on the machine hits both alike.
func BenchmarkEtcdDBRead(b *testing.B) {
	file := benchEtcdDB(b)
	want := benchDBKeys - (benchDBKeys+49)/50
	ours := func(b *testing.B) {
		m, err := openDB(b, file, store.RemoteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := m.Walk(context.Background(), "", func(store.Node) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		m.Close()
		if n != want {
			b.Fatalf("walked %d nodes, want %d", n, want)
		}
	}
	bare := func(b *testing.B, decode bool) {
		db, err := bolt.Open(file, 0o400, &bolt.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		err = db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket([]byte("key")).Cursor()
			var kv mvccpb.KeyValue
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if decode {
					if err := proto.Unmarshal(v, &kv); err != nil {
						return err
					}
				}
			}
			return nil
		})
		db.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("ratio", func(b *testing.B) {
		var base, mine, baseCPU, mineCPU time.Duration
		for b.Loop() {
			c0, t0 := rusage.ProcessCPU(), time.Now()
			bare(b, true)
			c1, t1 := rusage.ProcessCPU(), time.Now()
			ours(b)
			base, mine = base+t1.Sub(t0), mine+time.Since(t1)
			baseCPU, mineCPU = baseCPU+c1-c0, mineCPU+rusage.ProcessCPU()-c1
		}
		b.ReportMetric(float64(base)/float64(mine), "x-of-bare")
		b.ReportMetric(float64(baseCPU)/float64(mineCPU), "x-of-bare-cpu")
	})
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			ours(b)
		}
	})
	b.Run("bare-cursor-unmarshal", func(b *testing.B) {
		for b.Loop() {
			bare(b, true)
		}
	})
	b.Run("bare-cursor-no-decode", func(b *testing.B) {
		for b.Loop() {
			bare(b, false)
		}
	})
}
