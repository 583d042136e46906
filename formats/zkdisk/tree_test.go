package zkdisk

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// Property: replaying the same txns over a tree loaded from a snapshot image
// (nodes as recs, held whole once changed) and over the same snapshot streamed
// (every node held) gives the same tree, and both hold exactly the paths and
// data a plain map model of the txns says, with Get agreeing with Walk.
func TestReplayOverImageTreeProperty(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 29))
		b, written := randomSnapshot(rng, false, false)
		img, streamed := scannedAndStreamed(t, seed, b)
		model := map[string][]byte{}
		for _, n := range written {
			model[n.Path] = n.Data
		}
		paths := slices.Sorted(maps.Keys(model))
		for step := range 300 {
			h := TxnHeader{ClientID: 9, Zxid: 1000 + int64(step), Time: 2e12 + int64(step)}
			p := paths[rng.IntN(len(paths))]
			var rec Record
			switch rng.IntN(4) {
			case 0:
				data := fmt.Appendf(nil, "set%d", step)
				rec = &SetDataTxn{Path: p, Data: data, Version: int32(step)}
				if _, ok := model[p]; ok {
					model[p] = data
				}
			case 1:
				rec = &DeleteTxn{Path: p}
				delete(model, p)
			default:
				child := fmt.Sprintf("%s/c%d", p, step%7)
				if p == "/" {
					child = fmt.Sprintf("/c%d", step%7)
				}
				data := fmt.Appendf(nil, "new%d", step)
				rec = &CreateTxn{Type: OpCreate, Path: child, Data: data, ParentCVersion: -1, Ephemeral: step%3 == 0}
				if _, exists := model[child]; !exists {
					if _, parent := model[p]; parent {
						model[child] = data
						paths = append(paths, child)
					}
				}
			}
			apply(img, map[int64]int32{}, h, rec)
			apply(streamed, map[int64]int32{}, h, rec)
			if step%50 == 49 {
				img.Compact() // sometimes compacted between changes, sometimes not
			}
		}
		if g, w := treeDump(img), treeDump(streamed); !slices.Equal(g, w) {
			t.Fatalf("seed %d: image and streamed trees differ after replay\n%q\n%q", seed, g, w)
		}
		var walked []string
		_ = img.Walk("", "", func(n *Node) error {
			walked = append(walked, n.Path)
			if want, ok := model[n.Path]; !ok || !bytes.Equal(n.Data, want) || (n.Data == nil) != (want == nil) {
				t.Errorf("seed %d: %s holds %q, the model %q (present %v)", seed, n.Path, n.Data, want, ok)
			}
			if g, ok := img.Get(n.Path); !ok || !bytes.Equal(g.Data, n.Data) || g.Stat != n.Stat {
				t.Errorf("seed %d: Get(%s) differs from the walk", seed, n.Path)
			}
			return nil
		})
		if want := slices.Sorted(maps.Keys(model)); !slices.Equal(walked, want) {
			t.Fatalf("seed %d: walked %d paths, the model has %d", seed, len(walked), len(want))
		}
	}
}

// A snapshot whose first nodes are large and the rest small outgrows the
// node count reserve guessed from the first ones: the scan sizes up again and
// loads the same tree the stream reader does.
func TestScanOutgrowsItsReserve(t *testing.T) {
	var buf bytes.Buffer
	sw, err := NewSnapshotWriter(&buf, nil, map[int64][]ACL{1: OpenACL})
	if err != nil {
		t.Fatal(err)
	}
	sw.WriteNode(SnapNode{Path: "/", ACLRef: 1})
	sw.WriteNode(SnapNode{Path: "/big", ACLRef: 1})
	for i := range 1100 {
		sw.WriteNode(SnapNode{Path: fmt.Sprintf("/big/n%d", i), Data: bytes.Repeat([]byte{byte(i)}, 2000), ACLRef: 1})
	}
	sw.WriteNode(SnapNode{Path: "/small", ACLRef: 1})
	for i := range 30000 {
		sw.WriteNode(SnapNode{Path: fmt.Sprintf("/small/%d", i), ACLRef: 1, Stat: Stat{Czxid: int64(i)}})
	}
	if err := sw.Finish(nil, nil); err != nil {
		t.Fatal(err)
	}
	img, _, _, ok := treeFromImage(buf.Bytes())
	if !ok {
		t.Fatal("the scan refused a well-formed snapshot")
	}
	sr, err := NewSnapshotReader(bytes.NewReader(buf.Bytes()), "grow")
	if err != nil {
		t.Fatal(err)
	}
	streamed, _, _, err := treeFromReader(sr, 0)
	if err != nil {
		t.Fatal(err)
	}
	if img.Len() != 1100+30000+3 || !slices.Equal(treeDump(img), treeDump(streamed)) {
		t.Fatalf("image tree of %d nodes differs from the streamed one of %d", img.Len(), streamed.Len())
	}
}
