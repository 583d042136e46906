package zkdata

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

const zkSample = "../../testdata/zookeeper/sample"

func openZKDataTest(t *testing.T, raw string, ro store.RemoteOptions) (*zkDataStore, error) {
	t.Helper()
	u, err := store.ParseMetadataURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := Open(u, store.Options{ReadOnly: true, Remote: ro})
	if err != nil {
		return nil, err
	}
	return mb.(*zkDataStore), nil
}

type zkExpected struct {
	Zxid  string `json:"zxid"`
	Nodes map[string]struct {
		DataHex string `json:"data_hex"`
		Version int32  `json:"version"`
	} `json:"nodes"`
	Points []struct {
		Path    string `json:"path"`
		Zxid    int64  `json:"zxid"`
		DataHex string `json:"data_hex"`
		Version int32  `json:"version"`
	} `json:"points"`
}

func zkSampleExpected(t *testing.T) zkExpected {
	b, err := os.ReadFile(filepath.Join(zkSample, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e zkExpected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// The zk-data backend over the files the real server wrote shows every node the
// live server showed but the root and ZooKeeper's own /zookeeper subtree, with Version = Stat.version + 1, in path order; both the
// dataDir and its version-2/ open.
func TestZKDataBackendSample(t *testing.T) {
	exp := zkSampleExpected(t)
	for _, p := range []string{zkSample, zkSample + "/version-2"} {
		s, err := openZKDataTest(t, "zk-data:"+p, store.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var prev string
		seen := 0
		err = s.Walk(context.Background(), "", func(n store.Node) error {
			e, ok := exp.Nodes[n.Path]
			if !ok || hex.EncodeToString(n.Value) != e.DataHex || n.Version != uint64(e.Version)+1 {
				t.Errorf("%s: %x v%d, live had %+v (%v)", n.Path, n.Value, n.Version, e, ok)
			}
			if n.Path <= prev {
				t.Errorf("walk order: %q after %q", n.Path, prev)
			}
			prev = n.Path
			seen++
			return nil
		})
		want := 0 // ZooKeeper's own /zookeeper subtree and the root are not walked
		for p := range exp.Nodes {
			if p != "/" && p != "/zookeeper" && !strings.HasPrefix(p, "/zookeeper/") {
				want++
			}
		}
		if err != nil || seen != want || want == len(exp.Nodes) {
			t.Errorf("walk: %v, %d of %d nodes (%d with /zookeeper)", err, seen, want, len(exp.Nodes))
		}
		src := s.Source()
		if src.Kind != store.SchemeZKData || !src.ReadOnly || src.Zxid == 0 || src.AsOf.IsZero() || len(src.Notes) == 0 {
			t.Errorf("source %+v", src)
		}
		if !strings.Contains(strings.Join(src.Notes, "\n"), "1 ephemeral nodes") {
			t.Errorf("notes do not mention the ephemeral: %q", src.Notes)
		}
		st, err := s.NodeStat("/loadbalance/brokers/live-broker:8080")
		if err != nil || st.Kind != "ephemeral" || st.EphemeralOwner == 0 {
			t.Errorf("NodeStat: %+v %v", st, err)
		}
	}
}

func TestZKDataBackendChrootAndPointInTime(t *testing.T) {
	exp := zkSampleExpected(t)
	s, err := openZKDataTest(t, "zk-data:"+zkSample+"?chroot=/managed-ledgers/public", store.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Get("/default/persistent/t1")
	want := exp.Nodes["/managed-ledgers/public/default/persistent/t1"]
	if err != nil || hex.EncodeToString(n.Value) != want.DataHex {
		t.Errorf("chroot get: %+v %v", n, err)
	}
	var paths []string
	s.Walk(context.Background(), "/default/persistent/t1", func(n store.Node) error { paths = append(paths, n.Path); return nil })
	if len(paths) != 1 || paths[0] != "/default/persistent/t1" {
		t.Errorf("chroot walk: %q", paths)
	}
	if _, err := s.Get("/ledgers"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("outside the chroot: %v", err)
	}
	if _, err := openZKDataTest(t, "zk-data:"+zkSample+"?chroot=/nope", store.RemoteOptions{}); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "/nope") {
		t.Errorf("missing chroot: %v", err)
	}
	p := exp.Points[0]
	old, err := openZKDataTest(t, "zk-data:"+zkSample, store.RemoteOptions{AtZxid: p.Zxid})
	if err != nil {
		t.Fatal(err)
	}
	n, err = old.Get(p.Path)
	if err != nil || hex.EncodeToString(n.Value) != p.DataHex || n.Version != uint64(p.Version)+1 || old.Source().Zxid != p.Zxid {
		t.Errorf("at zxid %#x: %+v %v, want %s", p.Zxid, n, err, p.DataHex)
	}
}

func TestZKDataBackendRefusesWritesAndBadDirs(t *testing.T) {
	s, err := openZKDataTest(t, "zk-data:"+zkSample, store.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompareAndSet("/x", 0, []byte("v")); !errors.Is(err, store.ErrReadOnly) || !strings.Contains(err.Error(), "/x") {
		t.Errorf("CompareAndSet: %v", err)
	}
	if err := s.CompareAndDelete("/ledgers", 1); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("CompareAndDelete: %v", err)
	}
	if _, err := s.CompareAndSetNodes([]store.NodeWrite{{Path: "/y"}}); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("CompareAndSetNodes: %v", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "CURRENT"), []byte("rocksdb"), 0o644)
	for name, dir := range map[string]string{"another program": other, "missing": filepath.Join(other, "nope"), "empty version-2": mkdirV2(t)} {
		_, err := openZKDataTest(t, "zk-data:"+dir, store.RemoteOptions{})
		if err == nil || !strings.Contains(err.Error(), filepath.Base(dir)) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mkdirV2(t *testing.T) string {
	d := t.TempDir()
	os.Mkdir(filepath.Join(d, "version-2"), 0o755)
	return d
}
