package zkdisk

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// bigSnapshot is a well-formed snapshot of several MB (values of 40 KiB), so a
// read in pieces crosses many piece and Adler-block boundaries.
func bigSnapshot(t *testing.T) []byte {
	var buf bytes.Buffer
	sw, err := NewSnapshotWriter(&buf, []Session{{ID: 7, TimeoutMs: 30000}}, map[int64][]ACL{1: OpenACL})
	if err != nil {
		t.Fatal(err)
	}
	sw.WriteNode(SnapNode{Path: "/", ACLRef: 1})
	sw.WriteNode(SnapNode{Path: "/big", ACLRef: 1})
	for i := range 150 {
		data := bytes.Repeat([]byte{byte(i), byte(i >> 3)}, 20<<10)
		sw.WriteNode(SnapNode{Path: fmt.Sprintf("/big/n%03d", (i*37)%150), Data: data, ACLRef: 1, Stat: Stat{Czxid: int64(i), Mtime: int64(1e12 + i)}})
	}
	if err := sw.Finish(&ZxidDigest{Zxid: 9, Version: 2, Digest: 1}, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The file read in pieces while it is scanned gives the tree the whole bytes
// give; a file shorter or longer than its stat said is refused (the loader then
// streams it, and the stream reader names what is wrong).
func TestFeedImageMatchesWholeImage(t *testing.T) {
	b := bigSnapshot(t)
	if len(b) < 3*adlerBlock {
		t.Fatalf("snapshot of %d bytes: want several Adler blocks", len(b))
	}
	path := filepath.Join(t.TempDir(), "snapshot.9")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want, _, wantNewest, ok := treeFromImage(b)
	if !ok {
		t.Fatal("whole image refused")
	}
	for _, tc := range []struct {
		name string
		size int
		ok   bool
	}{{"stat size", len(b), true}, {"file grew since stat", len(b) - 5, false}, {"file shrank since stat", len(b) + 100, false}} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got, _, newest, ok := treeOfImage(feedImage(f, tc.size))
		f.Close()
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok && (!slices.Equal(treeDump(got), treeDump(want)) || !newest.Equal(wantNewest)) {
			t.Errorf("%s: tree or newest time differs from the whole image's", tc.name)
		}
	}
	// A flipped byte in a value is caught by the seal, read in pieces too.
	bad := bytes.Clone(b)
	bad[2*adlerBlock+123] ^= 1
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, _, ok := treeOfImage(feedImage(f, len(bad))); ok {
		t.Error("a snapshot with a flipped byte passed its seal")
	}
}
