package zkdisk_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/ledgermedic/ledgermedic/formats/zkdisk"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func loadExpected(t *testing.T) Expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sampleDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e Expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// copySample copies the committed sample's version-2 files into a temp dir so a
// test can damage them.
func copySample(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "version-2")
	testutil.CopyDir(t, filepath.Join(sampleDir, "version-2"), dst)
	return dst
}

// The committed files the real server wrote decode to exactly the tree the live
// server showed before it stopped.
func TestSampleEqualsRecordedLiveTree(t *testing.T) {
	exp := loadExpected(t)
	v, err := Load(filepath.Join(sampleDir, "version-2"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compareView(t, v, exp)
	if len(v.Notes) != 0 {
		t.Errorf("clean sample gave notes %q", v.Notes)
	}
	n, ok := v.Tree.Get("/loadbalance/brokers/live-broker:8080")
	if !ok || n.Kind() != Ephemeral || n.Stat.EphemeralOwner == 0 {
		t.Errorf("live-broker ephemeral: %+v %v", n, ok)
	}
	if n, ok := v.Tree.Get("/managed-ledgers/public"); !ok || n.Kind() != Container {
		t.Errorf("/managed-ledgers/public should be a container: %+v", n)
	}
	if n, ok := v.Tree.Get("/ledgers"); !ok || n.Data != nil {
		t.Errorf("/ledgers was created with nil data: %+v", n)
	}
}

// Every snapshot and every log record of the sample decodes, every seal and
// checksum matches, and the files are consumed to their end.
func TestSampleFilesDecode(t *testing.T) {
	snaps, logs, err := ListDir(filepath.Join(sampleDir, "version-2"))
	if err != nil || len(snaps) < 2 || len(logs) < 2 {
		t.Fatalf("sample has %d snapshots, %d logs (%v)", len(snaps), len(logs), err)
	}
	for _, s := range snaps {
		sr, nodes, err := ReadSnapshotFile(s.Path)
		if err != nil {
			t.Fatalf("%s: %v", s.Path, err)
		}
		if sr.Trailer().Seals != 2 || sr.Trailer().Digest == nil {
			t.Errorf("%s: ZooKeeper 3.8 writes 2 seals and a digest, got %+v", s.Path, sr.Trailer())
		}
		if nodes[0].Path != "/" {
			t.Errorf("%s: first node %q, want the root", s.Path, nodes[0].Path)
		}
	}
	types := map[int32]int{}
	for _, l := range logs {
		lr, err := OpenLog(l.Path)
		if err != nil {
			t.Fatal(err)
		}
		for {
			txn, err := lr.Next()
			if err != nil {
				if !errors.Is(err, errEOF) {
					t.Fatalf("%s: %v", l.Path, err)
				}
				break
			}
			types[txn.Header.Type]++
			if m, ok := txn.Record.(*MultiTxn); ok {
				for _, sub := range m.Txns {
					types[1000+TxnType(sub)]++
				}
			}
		}
		lr.Close()
	}
	for _, typ := range []int32{OpCreate, OpCreateContainer, OpSetData, OpMulti, OpDelete, OpCreateSession, OpCloseSession, 1000 + OpCheck, 1000 + OpError} {
		if types[typ] == 0 {
			t.Errorf("sample logs lack txn type %d (types seen %v)", typ, types)
		}
	}
}

// --at-zxid and --at-time show t1 as it was after its first update, although it
// was updated twice more later.
func TestSamplePointInTime(t *testing.T) {
	exp := loadExpected(t)
	dir := filepath.Join(sampleDir, "version-2")
	for _, p := range exp.Points {
		for name, opts := range map[string]LoadOptions{
			"zxid": {AtZxid: p.Zxid},
			"time": {AtTime: time.UnixMilli(p.TimeMs)},
		} {
			v, err := Load(dir, opts)
			if err != nil {
				t.Fatalf("%s %+v: %v", name, opts, err)
			}
			n, ok := v.Tree.Get(p.Path)
			if !ok || hex.EncodeToString(n.Data) != p.DataHex || n.Stat.Version != p.Version {
				t.Errorf("at %s %+v: %s = %+v, want data %s version %d", name, opts, p.Path, n, p.DataHex, p.Version)
			}
			if v.Zxid != p.Zxid {
				t.Errorf("at %s: view zxid %#x, want %#x", name, v.Zxid, p.Zxid)
			}
			if now := exp.Nodes[p.Path]; now.DataHex == p.DataHex {
				t.Fatalf("point %+v is the final value: the test proves nothing", p)
			}
		}
	}
}

var errEOF = io.EOF

// Damaged inputs: each gives a clear note or error, never a panic.
func TestSampleDamaged(t *testing.T) {
	exp := loadExpected(t)
	t.Run("truncated newest snapshot falls back", func(t *testing.T) {
		dir := copySample(t)
		snaps, _, _ := ListDir(dir)
		newest := snaps[len(snaps)-1].Path
		b, _ := os.ReadFile(newest)
		if err := os.WriteFile(newest, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		compareView(t, v, exp) // the older snapshot plus more replay reaches the same tree
		if v.Snapshot != snaps[len(snaps)-2].Path || len(v.Notes) == 0 || !strings.Contains(v.Notes[0], filepath.Base(newest)) {
			t.Errorf("used %s, notes %q", v.Snapshot, v.Notes)
		}
	})
	t.Run("every snapshot truncated, logs replay from empty", func(t *testing.T) {
		dir := copySample(t)
		snaps, _, _ := ListDir(dir)
		for _, s := range snaps {
			if err := os.WriteFile(s.Path, []byte("ZKSN"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		v, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// snapshot.0 held /zookeeper/*, which no txn creates: everything else is there.
		for p, e := range exp.Nodes {
			if strings.HasPrefix(p, "/zookeeper") {
				continue
			}
			if n, ok := v.Tree.Get(p); !ok || hex.EncodeToString(n.Data) != e.DataHex {
				t.Errorf("%s: %+v %v, want %s", p, n, ok, e.DataHex)
			}
		}
	})
	t.Run("flipped byte in a log stops at the last good txn", func(t *testing.T) {
		dir := copySample(t)
		_, logs, _ := ListDir(dir)
		last := logs[len(logs)-1].Path
		b, _ := os.ReadFile(last)
		// The second record starts after the header and the first record.
		first := 16 + 12 + int(binary.BigEndian.Uint32(b[16+8:])) + 1
		b[first+12+30] ^= 0xff
		if err := os.WriteFile(last, b, 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := last + ": offset " + strconv.Itoa(first)
		if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], want) || !strings.Contains(v.Notes[0], "checksum") {
			t.Errorf("notes %q, want one naming %q", v.Notes, want)
		}
		if v.Zxid != logs[len(logs)-1].Zxid {
			t.Errorf("view zxid %#x, want %#x (the first txn of %s, the last good one)", v.Zxid, logs[len(logs)-1].Zxid, last)
		}
	})
	t.Run("zero-length log", func(t *testing.T) {
		dir := copySample(t)
		if err := os.WriteFile(filepath.Join(dir, "log.999"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		compareView(t, v, exp)
		if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "log.999 is empty") {
			t.Errorf("notes %q", v.Notes)
		}
	})
	t.Run("dir of another program", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("not zk"), 0o644)
		_, err := Load(dir, LoadOptions{})
		if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), dir) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("snapshot named but not a snapshot", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "snapshot.5"), []byte("hello world, no magic here"), 0o644)
		_, err := Load(dir, LoadOptions{})
		// Nothing readable and no log: an empty view would pass for a cluster with
		// no metadata, so it is an error naming the rejected file.
		if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "snapshot.5") || !strings.Contains(err.Error(), "bad magic") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unusable snapshot beside a log", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "snapshot.5"), []byte("hello world, no magic here"), 0o644)
		b, err := os.ReadFile(filepath.Join(sampleDir, "version-2", "log.1"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "log.1"), b, 0o644)
		v, err := Load(dir, LoadOptions{})
		if err != nil || len(v.Notes) == 0 {
			t.Fatalf("a log replays onto an empty tree with a note: %v", err)
		}
	})
}

// ZooKeeper's own SnapshotFormatter lists the same node paths and data lengths
// as this reader, for every snapshot of the sample.
func TestSnapshotFormatterOracle(t *testing.T) {
	testutil.SkipWithoutZooKeeper(t)
	snaps, _, _ := ListDir(filepath.Join(sampleDir, "version-2"))
	for _, s := range snaps {
		out, err := exec.Command("java", "-cp", testutil.ZKJar+":"+testutil.ZKConfDir,
			"org.apache.zookeeper.server.SnapshotFormatter", s.Path).Output()
		if err != nil {
			t.Fatalf("SnapshotFormatter %s: %v", s.Path, err)
		}
		oracle := parseFormatter(string(out))
		_, nodes, err := ReadSnapshotFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		if len(oracle) != len(nodes) {
			t.Errorf("%s: SnapshotFormatter lists %d nodes, we read %d", s.Path, len(oracle), len(nodes))
		}
		for _, n := range nodes {
			want, ok := oracle[n.Path]
			if !ok {
				t.Errorf("%s: %s not in SnapshotFormatter output", s.Path, n.Path)
			} else if want != len(n.Data) {
				t.Errorf("%s: %s dataLength %d, SnapshotFormatter says %d", s.Path, n.Path, len(n.Data), want)
			}
		}
	}
}

// parseFormatter maps each path SnapshotFormatter prints to its dataLength.
func parseFormatter(out string) map[string]int {
	res := map[string]int{}
	var path string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "/"):
			path = line
		case strings.HasPrefix(line, "  dataLength = "):
			n, _ := strconv.Atoi(strings.TrimPrefix(line, "  dataLength = "))
			res[path] = n
		}
	}
	return res
}
