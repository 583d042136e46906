package zk

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	gozk "github.com/go-zookeeper/zk"
)

// encodeMultiResponse is the test's own encoder of a server's MultiResponse to a
// multiRead: each result after a MultiHeader (type, done=false, err), then the
// done header (-1, true, -1). nil data or children encode as null (-1).
func encodeMultiResponse(ops []zkReadOp, results []zkReadResult) []byte {
	w := &juteWriter{}
	for i, r := range results {
		switch {
		case r.code != 0:
			w.int32(-1)
			w.bool(false)
			w.int32(r.code)
			w.int32(r.code)
		case i < len(ops) && ops[i].list:
			w.int32(zkOpGetChildren)
			w.bool(false)
			w.int32(0)
			if r.children == nil {
				w.int32(-1)
			} else {
				w.int32(int32(len(r.children)))
				for _, c := range r.children {
					w.string(c)
				}
			}
		default:
			w.int32(zkOpGetData)
			w.bool(false)
			w.int32(0)
			if r.data == nil {
				w.int32(-1)
			} else {
				w.buffer(r.data)
			}
			st := r.stat
			for _, v := range []int64{st.Czxid, st.Mzxid, st.Ctime, st.Mtime} {
				w.int64(v)
			}
			for _, v := range []int32{st.Version, st.Cversion, st.Aversion} {
				w.int32(v)
			}
			w.int64(st.EphemeralOwner)
			w.int32(st.DataLength)
			w.int32(st.NumChildren)
			w.int64(st.Pzxid)
		}
	}
	w.int32(-1)
	w.bool(true)
	w.int32(-1)
	return w.b
}

var juteOps = []zkReadOp{{path: "/a"}, {path: "/a", list: true}, {path: "/gone"}, {path: "/e"}, {path: "/n", list: true}}

var juteResults = []zkReadResult{
	{data: []byte("value of a"), stat: gozk.Stat{Czxid: 1, Mzxid: 0x1_0000_0007, Version: 3, DataLength: 10, NumChildren: 2, Pzxid: 9}},
	{children: []string{"x", "y-1"}},
	{code: zkCodeNoNode},
	{data: []byte{}, stat: gozk.Stat{Version: 0}},
	{children: []string{}},
}

func TestDecodeMultiRead(t *testing.T) {
	body := encodeMultiResponse(juteOps, juteResults)
	got, err := decodeMultiRead(body, juteOps)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, juteResults) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, juteResults)
	}
	// Every truncation fails, and names what was short.
	for n := range len(body) {
		if _, err := decodeMultiRead(body[:n], juteOps); !errors.Is(err, errZKDecode) {
			t.Fatalf("%d of %d bytes: %v", n, len(body), err)
		}
	}
	dataOp, listOp := juteOps[:1], juteOps[1:2]
	for _, tc := range []struct {
		name string
		ops  []zkReadOp
		body []byte
	}{
		{"trailing bytes", juteOps, append(bytes.Clone(body), 0)},
		{"fewer results", juteOps, encodeMultiResponse(juteOps[:2], juteResults[:2])},
		{"more than asked", dataOp, encodeMultiResponse(dataOp, juteResults[:1:1][:1:1])},
		{"wrong type", listOp, encodeMultiResponse(dataOp, juteResults[:1])},
		{"positive error code", dataOp, encodeMultiResponse(dataOp, []zkReadResult{{code: 5}})},
		{"huge vector", listOp, []byte{0, 0, 0, 8, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff}},
		{"negative string", listOp, []byte{0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf0}},
		{"negative buffer", dataOp, []byte{0, 0, 0, 4, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf0}},
		{"empty", dataOp, nil},
		{"only the done header", dataOp, encodeMultiResponse(nil, nil)},
	} {
		if tc.name == "more than asked" {
			tc.body = encodeMultiResponse(juteOps[:2:2], []zkReadResult{juteResults[0], juteResults[0]})
		}
		if _, err := decodeMultiRead(tc.body, tc.ops); !errors.Is(err, errZKDecode) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestDecodeMultiReadErrorNamesFieldAndOffset: a response cut inside a result's
// Stat says which field was short and at what byte of the body.
func TestDecodeMultiReadErrorNamesFieldAndOffset(t *testing.T) {
	body := encodeMultiResponse(juteOps[:1], juteResults[:1])
	// MultiHeader (9 bytes), data length and "value of a" (14), czxid (8), then
	// 3 of mzxid's 8 bytes.
	_, err := decodeMultiRead(body[:9+14+8+3], juteOps[:1])
	const want = "result 0 (/a): malformed ZooKeeper response: offset 31: stat mzxid: jute record ends early: need 8 bytes, 3 left"
	if !errors.Is(err, errZKDecode) || err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
}

func TestZKMultiReadRequest(t *testing.T) {
	ops := []zkReadOp{{path: "/a"}, {path: "/b", list: true}}
	pkt := zkPacket(7, zkOpMultiRead, zkMultiReadBody(ops))
	want := []byte{
		0, 0, 0, 49, // length after itself
		0, 0, 0, 7, 0, 0, 0, 22, // xid, multiRead
		0, 0, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, '/', 'a', 0, // getData /a
		0, 0, 0, 8, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, '/', 'b', 0, // getChildren /b
		0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff, // done
	}
	if !bytes.Equal(pkt, want) {
		t.Fatalf("packet\n% x\nwant\n% x", pkt, want)
	}
}

func TestZKReadPlan(t *testing.T) {
	op := func(int) zkReadOp { return zkReadOp{path: "/managed-ledgers/t/ns/persistent/topic"} }
	for _, tc := range []struct {
		n, expect int
		want      int // batches
	}{
		{0, 100, 0},
		{1, 100, 1},
		{zkReadMaxOps, 100, 1},
		{zkReadMaxOps + 1, 100, 2},
		{10, zkReadTargetBytes, 10},     // each alone: one node fills a response
		{10, zkReadTargetBytes / 4, 3},  // four a batch, the last of two
		{5, 10 * zkReadTargetBytes, 5},  // bigger than the target: still one each
		{1000, 1, 8},                    // by count
		{zkReadMaxOps * 3, 1, 3},        // exact
		{zkReadMaxOps*3 - 1, 1, 3},      // short last
		{2, zkReadTargetBytes/2 + 1, 2}, // two would pass the target
	} {
		plan := zkReadPlan(tc.n, op, func(int) int { return tc.expect })
		if len(plan) != tc.want {
			t.Errorf("%d ops of %d bytes: %d batches %v, want %d", tc.n, tc.expect, len(plan), plan, tc.want)
		}
		next := 0
		for _, b := range plan {
			if b[0] != next || b[1] <= b[0] || b[1]-b[0] > zkReadMaxOps {
				t.Errorf("%d ops: bad batch %v in %v", tc.n, b, plan)
			}
			next = b[1]
		}
		if next != tc.n {
			t.Errorf("%d ops: plan %v covers %d", tc.n, plan, next)
		}
	}
}

// FuzzZKMultiReadResponse: no bytes make the decoder panic or return results
// that do not match the operations, and what it accepts decodes the same after
// re-encoding.
func FuzzZKMultiReadResponse(f *testing.F) {
	f.Add(uint8(0b10), uint8(5), encodeMultiResponse(juteOps, juteResults))
	f.Add(uint8(0), uint8(1), encodeMultiResponse(juteOps[:1], juteResults[:1]))
	f.Add(uint8(1), uint8(1), encodeMultiResponse([]zkReadOp{{list: true}}, []zkReadResult{{children: []string{"a", "b"}}}))
	f.Add(uint8(0), uint8(2), encodeMultiResponse(juteOps[2:4], juteResults[2:4]))
	f.Add(uint8(0), uint8(0), encodeMultiResponse(nil, nil))
	f.Add(uint8(0), uint8(1), []byte{0, 0, 0, 4, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, lists, n uint8, body []byte) {
		ops := make([]zkReadOp, n%8)
		for i := range ops {
			ops[i] = zkReadOp{path: "/p", list: lists&(1<<i) != 0}
		}
		got, err := decodeMultiRead(body, ops)
		if err != nil {
			if !errors.Is(err, errZKDecode) {
				t.Fatalf("error not marked as malformed: %v", err)
			}
			return
		}
		if len(got) != len(ops) {
			t.Fatalf("%d results for %d ops", len(got), len(ops))
		}
		again, err := decodeMultiRead(encodeMultiResponse(ops, got), ops)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("re-encoded: %v\n%+v\nwant\n%+v", err, again, got)
		}
	})
}
