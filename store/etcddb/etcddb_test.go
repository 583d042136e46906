package etcddb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/etcddb"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// dumpNodes is every node of a backend as path -> "hex(value)@version".
func dumpNodes(t testing.TB, m store.MetadataStore) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := m.Walk(context.Background(), "", func(n store.Node) error {
		got[n.Path] = fmt.Sprintf("%x@%d", n.Value, n.Version)
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	return got
}

func openDB(t testing.TB, path string, remote store.RemoteOptions) (store.MetadataBackend, error) {
	t.Helper()
	return testutil.OpenMetadata(t, "etcd-db:"+path, store.Options{Remote: remote})
}

func mustOpenDB(t testing.TB, path string, remote store.RemoteOptions) store.MetadataBackend {
	t.Helper()
	b, err := openDB(t, path, remote)
	if err != nil {
		t.Fatalf("open etcd-db:%s: %v", path, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// The offline reader on the db a real etcd wrote shows what the live server showed,
// at the newest revision and at an older one; compaction names the gone revisions.
func TestEtcdDBMatchesLive(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	ctx := context.Background()
	testutil.EtcdPut(t, c, "/schemas/acme/orders/t", "locator-v1", "/managed-ledgers/acme/orders/persistent/o", "ml-1",
		"/gone", "soon deleted", "/ledgers/00/0000/L0001", "\x00\x01\x02\xff", "other-app/key", "x")
	live0 := dumpNodes(t, testutil.MustOpenMetadata(t, "etcd:"+srv.Endpoint, store.Options{Remote: store.RemoteOptions{}}))
	r0, err := c.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	before := r0.Header.Revision
	testutil.EtcdPut(t, c, "/schemas/acme/orders/t", "locator-v2", "/new", "n")
	if _, err := c.Delete(ctx, "/gone"); err != nil {
		t.Fatal(err)
	}
	testutil.EtcdPut(t, c, "/managed-ledgers/acme/orders/persistent/o", "ml-2", "/managed-ledgers/acme/orders/persistent/o", "ml-3")
	live := testutil.MustOpenMetadata(t, "etcd:"+srv.Endpoint, store.Options{Remote: store.RemoteOptions{}})
	liveNow := dumpNodes(t, live)
	newest := live.Source().Revision

	// While the server runs it holds the flock: the reader works on a copy and says so.
	running := mustOpenDB(t, srv.DataDir, store.RemoteOptions{})
	if notes := strings.Join(running.Source().Notes, "; "); !strings.Contains(notes, "locked by a running etcd") {
		t.Errorf("notes while running = %q; want the copy named", notes)
	}
	running.Close()

	srv.Stop()
	for _, p := range []string{srv.DataDir, filepath.Join(srv.DataDir, "member"), srv.DBFile()} {
		b := mustOpenDB(t, p, store.RemoteOptions{})
		if got := dumpNodes(t, b); fmt.Sprint(got) != fmt.Sprint(liveNow) {
			t.Errorf("etcd-db:%s = %v\nlive = %v", p, got, liveNow)
		}
		src := b.Source()
		if src.Kind != store.SchemeEtcdDB || !src.ReadOnly || src.Revision != newest {
			t.Errorf("Source = %+v; want etcd-db, read-only, revision %d", src, newest)
		}
		if notes := strings.Join(src.Notes, "; "); !strings.Contains(notes, `"other-app/key"`) || strings.Contains(notes, "WAL") {
			t.Errorf("notes = %q; want the non-Pulsar key named and no WAL warning after a clean stop", notes)
		}
		if _, err := b.CompareAndSet("/new", 1, []byte("x")); !errors.Is(err, store.ErrReadOnly) || !strings.Contains(err.Error(), "/new") {
			t.Errorf("write: %v; want ErrReadOnly naming the path", err)
		}
		b.Close() // our shared flock would keep etcd from starting again
	}
	old := mustOpenDB(t, srv.DataDir, store.RemoteOptions{Revision: before})
	if got := dumpNodes(t, old); fmt.Sprint(got) != fmt.Sprint(live0) {
		t.Errorf("--revision %d = %v\nlive then = %v", before, got, live0)
	}
	if n, err := old.Get("/schemas/acme/orders/t"); err != nil || string(n.Value) != "locator-v1" {
		t.Errorf("old locator = %+v, %v", n, err)
	}
	if _, err := openDB(t, srv.DataDir, store.RemoteOptions{Revision: newest + 5}); err == nil || !strings.Contains(err.Error(), fmt.Sprint(newest)) {
		t.Errorf("revision past the newest: %v", err)
	}
	if _, err := openDB(t, srv.DataDir, store.RemoteOptions{AtTime: time.Now()}); !errors.Is(err, etcddb.ErrEtcdNoTime) {
		t.Errorf("--at-time: %v; want ErrEtcdNoTime", err)
	}

	old.Close()
	// Compact at the newest revision, then the old view is gone and says so.
	srv.Restart()
	c2 := testutil.EtcdClient(t, srv.Endpoint)
	if _, err := c2.Compact(ctx, newest, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err = openDB(t, srv.DataDir, store.RemoteOptions{Revision: before})
	if !errors.Is(err, etcddb.ErrEtcdCompacted) || !strings.Contains(err.Error(), fmt.Sprintf("revision %d", before)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("compacted at revision %d", newest)) {
		t.Errorf("revision %d after compaction at %d: %v", before, newest, err)
	}
	if got := dumpNodes(t, mustOpenDB(t, srv.DataDir, store.RemoteOptions{})); fmt.Sprint(got) != fmt.Sprint(liveNow) {
		t.Errorf("after compaction = %v\nwant %v", got, liveNow)
	}
}

// A db older than its WAL (acknowledged writes it does not have yet) is flagged.
func TestEtcdDBWALAhead(t *testing.T) {
	srv := testutil.StartEtcd(t)
	c := testutil.EtcdClient(t, srv.Endpoint)
	testutil.EtcdPut(t, c, "/a", "1")
	time.Sleep(300 * time.Millisecond) // past the 100 ms backend commit
	dir := t.TempDir()
	copyFile(t, srv.DBFile(), filepath.Join(dir, "member", "snap", "db"))
	testutil.EtcdPutMany(t, c, "/later/", 300, func(int) string { return "v" })
	srv.Stop()
	if err := os.Symlink(filepath.Join(srv.DataDir, "member", "wal"), filepath.Join(dir, "member", "wal")); err != nil {
		t.Fatal(err)
	}
	b := mustOpenDB(t, dir, store.RemoteOptions{})
	if notes := strings.Join(b.Source().Notes, "; "); !strings.Contains(notes, "raft entries with data after the db's consistent index") {
		t.Errorf("notes = %q; want the WAL warning", notes)
	}
	if _, err := b.Get("/later/000001"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old db has /later: %v", err)
	}
}

func TestEtcdDBBadInputs(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	text := filepath.Join(dir, "text")
	os.WriteFile(text, []byte(strings.Repeat("not a bolt file\n", 1000)), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	sample := filepath.Join("..", "..", "testdata", "etcd", "deletes.db")
	raw, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.db")
	os.WriteFile(truncated, raw[:len(raw)/2], 0o600)
	emptyDir := t.TempDir()

	cases := []struct {
		name, path string
		want       error
		wantText   string
	}{
		{"another program's bbolt", other, etcddb.ErrNotEtcdDB, `"widgets"`},
		{"text file", text, etcddb.ErrEtcdDBCorrupt, text},
		{"empty file", empty, nil, empty},
		{"truncated", truncated, etcddb.ErrEtcdDBCorrupt, truncated},
		{"dir without db", emptyDir, os.ErrNotExist, "member/snap/db"},
		{"missing", filepath.Join(dir, "nope"), os.ErrNotExist, "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := openDB(t, tc.path, store.RemoteOptions{})
			if err == nil {
				b.Close()
				t.Fatal("opened")
			}
			if (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %v; want %v naming %q", err, tc.want, tc.wantText)
			}
		})
	}
}

// Every single-byte corruption of a real db either opens (bbolt has no checksum on
// data pages) or fails with an error naming the file: never a panic or a fault.
func TestEtcdDBBitFlips(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "etcd", "deletes.db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opened, failed := 0, 0
	for off := 0; off < len(raw); off += 61 {
		bad := append([]byte(nil), raw...)
		bad[off] ^= 0xa5
		p := filepath.Join(dir, fmt.Sprintf("flip-%d.db", off))
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := openDB(t, p, store.RemoteOptions{})
		if err != nil {
			failed++
			if !strings.Contains(err.Error(), p) {
				t.Errorf("offset %d: error does not name the file: %v", off, err)
			}
			continue
		}
		opened++
		_ = b.Walk(context.Background(), "", func(store.Node) error { return nil })
		b.Close()
	}
	t.Logf("%d flipped copies opened, %d refused", opened, failed)
	if failed == 0 {
		t.Error("no flipped copy was refused: the checks do nothing")
	}
}

// The committed samples, written by a real etcd 3.4.23 (testdata/etcd/gen.go),
// decode at every revision to the state the server reported for it.
func TestEtcdDBSamples(t *testing.T) {
	type node struct {
		ValueHex string `json:"value_hex"`
		Version  int64  `json:"version"`
	}
	type expected struct {
		NewestRevision  int64                      `json:"newest_revision"`
		CompactRevision int64                      `json:"compact_revision"`
		NonPulsarKeys   []string                   `json:"non_pulsar_keys"`
		Revisions       map[string]map[string]node `json:"revisions"`
	}
	for _, name := range []string{"deletes", "compacted"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "etcd", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var exp expected
			if err := json.Unmarshal(raw, &exp); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("..", "..", "testdata", "etcd", name+".db")
			for revText, state := range exp.Revisions {
				rev, _ := strconv.ParseInt(revText, 10, 64)
				b := mustOpenDB(t, file, store.RemoteOptions{Revision: rev})
				want := map[string]string{}
				for p, n := range state {
					want[p] = fmt.Sprintf("%s@%d", n.ValueHex, n.Version)
				}
				if got := dumpNodes(t, b); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("revision %d:\n got %v\nwant %v", rev, got, want)
				}
				b.Close()
			}
			newest := mustOpenDB(t, file, store.RemoteOptions{})
			if newest.Source().Revision != exp.NewestRevision {
				t.Errorf("newest revision %d, want %d", newest.Source().Revision, exp.NewestRevision)
			}
			for _, k := range exp.NonPulsarKeys {
				if notes := strings.Join(newest.Source().Notes, "; "); !strings.Contains(notes, strconv.Quote(k)) {
					t.Errorf("notes %q do not name the non-Pulsar key %q", notes, k)
				}
			}
			if exp.CompactRevision > 0 {
				_, err := openDB(t, file, store.RemoteOptions{Revision: exp.CompactRevision - 1})
				if !errors.Is(err, etcddb.ErrEtcdCompacted) || !strings.Contains(err.Error(), fmt.Sprintf("compacted at revision %d", exp.CompactRevision)) {
					t.Errorf("revision below the compaction: %v", err)
				}
			}
		})
	}
	// etcd-io/etcd's tests/integration/snapshot/testdata/corrupted_backup.db: an etcd
	// 3.3 db with the one key foo=bar, which is not a Pulsar path.
	b := mustOpenDB(t, filepath.Join("..", "..", "testdata", "etcd", "upstream-corrupted_backup.db"), store.RemoteOptions{})
	if got := dumpNodes(t, b); len(got) != 0 || b.Source().Revision != 2 || !strings.Contains(strings.Join(b.Source().Notes, ";"), `"foo"`) {
		t.Errorf("3.3 sample: nodes %v, source %+v; want none, revision 2, a note naming \"foo\"", got, b.Source())
	}
}
