package zkdata_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/zkdisk"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
	"github.com/ledgermedic/ledgermedic/store/zkdata"
	"github.com/ledgermedic/ledgermedic/testutil"
)

const zkSample = "../../testdata/zookeeper/sample"

// zkStore is the zk-data backend with its NodeStat.
type zkStore interface {
	store.MetadataBackend
	store.NodeBatcher
	NodeStat(path string) (zkdata.NodeStat, error)
}

func openZK(t *testing.T, raw string, ro store.RemoteOptions) (zkStore, error) {
	t.Helper()
	u, err := store.ParseMetadataURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := zkdata.Open(u, store.Options{ReadOnly: true, Remote: ro})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { mb.Close() })
	return mb.(zkStore), nil
}

// openBoth opens raw in memory and read onto disk.
func openBoth(t *testing.T, raw string, ro store.RemoteOptions) (mem, disk zkStore) {
	t.Helper()
	for _, above := range []int64{1 << 62, -1} {
		restore := zkdata.SetSpillAbove(above)
		s, err := openZK(t, raw, ro)
		restore()
		if err != nil {
			t.Fatalf("%s (spill above %d): %v", raw, above, err)
		}
		if mem == nil {
			mem = s
		} else {
			disk = s
		}
	}
	if zkdata.Spilled(mem) || !zkdata.Spilled(disk) {
		t.Fatalf("spilled: %v and %v, want false and true", zkdata.Spilled(mem), zkdata.Spilled(disk))
	}
	return mem, disk
}

// withStat describes a node with its ZooKeeper stat.
func withStat(s store.MetadataStore, n store.Node) string {
	st, err := s.(zkStore).NodeStat(n.Path)
	return fmt.Sprintf("%q %x nil=%v v%d %+v %v", n.Path, n.Value, n.Value == nil, n.Version, st, err)
}

// Property: a dataDir read onto disk shows what the same dataDir held in memory
// shows: every walk (from any start, under any prefix), every Get and GetNodes,
// every NodeStat (storetest.SameReads), and the same notes but the one that
// says it was read onto disk; at the newest state, at earlier zxids and under a chroot. The
// histories hold fuzzy and damaged snapshots, failed multis, ephemerals of
// closed sessions and changes to nodes that are gone (testutil.WriteZKHistory).
func TestSpilledEqualsInMemory(t *testing.T) {
	dirs := []string{zkSample}
	var points [][]int64
	points = append(points, []int64{0})
	for seed := range uint64(16) {
		h, err := testutil.WriteZKHistory(t.TempDir(), seed)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, h.Dir)
		points = append(points, []int64{0, h.Zxids[len(h.Zxids)/3], h.Snapshot + 2})
	}
	for i, dir := range dirs {
		for _, at := range points[i] {
			for _, chroot := range []string{"", "/a"} {
				raw := "zk-data:" + dir
				if chroot != "" {
					raw += "?chroot=" + chroot
				}
				ro := store.RemoteOptions{AtZxid: at}
				if chroot != "" {
					if _, err := openZK(t, raw, ro); errors.Is(err, store.ErrNotFound) {
						continue // no such node at that point
					}
				}
				mem, disk := openBoth(t, raw, ro)
				what := fmt.Sprintf("%s at %#x", raw, at)
				var paths []string
				_ = mem.Walk(context.Background(), "", func(n store.Node) error { paths = append(paths, n.Path); return nil })
				paths = append(paths, "/zookeeper", "/zookeeper/config", "/", "/nope", "/a/nope")
				t.Run(what, func(t *testing.T) { storetest.SameReads(t, disk, mem, paths, uint64(i), withStat) })
				var notes []string
				for _, n := range disk.Source().Notes {
					if !strings.Contains(n, "read onto a sorted file") {
						notes = append(notes, n)
					}
				}
				if !slices.Equal(notes, mem.Source().Notes) || len(notes) == len(disk.Source().Notes) {
					t.Fatalf("%s: notes onto disk %q, in memory %q", what, disk.Source().Notes, mem.Source().Notes)
				}
				if disk.Source().Zxid != mem.Source().Zxid || !disk.Source().AsOf.Equal(mem.Source().AsOf) {
					t.Fatalf("%s: source onto disk %+v, in memory %+v", what, disk.Source(), mem.Source())
				}
			}
		}
	}
}

// The files read onto disk are removed when the store closes.
func TestSpillRemovedOnClose(t *testing.T) {
	zkdata.ForceSpill(t)
	tmp := t.TempDir()
	u, err := store.ParseMetadataURL("zk-data:" + zkSample)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := zkdata.Open(u, store.Options{ReadOnly: true, SandboxDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := filepath.Glob(filepath.Join(tmp, "*")); len(ents) == 0 {
		t.Fatalf("nothing under the sandbox dir %s while open", tmp)
	}
	if err := mb.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := filepath.Glob(filepath.Join(tmp, "*")); len(ents) != 0 {
		t.Fatalf("left after Close: %q", ents)
	}
}

// What decides between memory and disk counts the newest snapshot and the
// bytes the logs hold, wherever the logs are (beside the snapshots or in a
// dataLogDir), and not a sparse log's preallocated length.
func TestInputBytes(t *testing.T) {
	h, err := testutil.WriteZKHistory(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(h.Dir)
	var logs, newest int64
	var newestZxid int64 = -1
	logDir := t.TempDir()
	for _, e := range ents {
		fi, _ := e.Info()
		if z, _, ok := zkdisk.ParseSnapshotName(e.Name()); ok && z > newestZxid {
			newestZxid, newest = z, fi.Size()
		}
		if _, ok := zkdisk.ParseLogName(e.Name()); ok {
			logs += fi.Size()
			b, _ := os.ReadFile(filepath.Join(h.Dir, e.Name()))
			f, err := os.Create(filepath.Join(logDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			f.Write(b)
			f.Truncate(64 << 20) // preallocated, as ZooKeeper leaves a log
			f.Close()
		}
	}
	if got := zkdata.InputBytes(h.Dir, ""); got != newest+logs {
		t.Errorf("logs beside: %d bytes, want %d + %d", got, newest, logs)
	}
	if got := zkdata.InputBytes(h.Dir, h.Dir); got != newest+logs {
		t.Errorf("logs named beside: %d bytes, want %d + %d", got, newest, logs)
	}
	// Blocks are counted in 4 KB: each sparse log holds at most one more.
	if got := zkdata.InputBytes(h.Dir, logDir); got < newest+logs || got > newest+logs+int64(len(ents))*4096 {
		t.Errorf("logs in a dataLogDir, preallocated: %d bytes, want about %d + %d", got, newest, logs)
	}
}
