package zkdisk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/adler32"
	"io"
	"reflect"
	"strings"
	"testing"
)

// handSnapshot builds a snapshot byte by byte (not with SnapshotWriter), so the
// decoder is checked against the layout in docs/formats.md §8.3, not against itself.
func handSnapshot(trailer int) []byte {
	be := binary.BigEndian
	var b []byte
	i32 := func(v int32) { b = be.AppendUint32(b, uint32(v)) }
	i64 := func(v int64) { b = be.AppendUint64(b, uint64(v)) }
	str := func(s string) { i32(int32(len(s))); b = append(b, s...) }
	i32(SnapMagic)
	i32(2)
	i64(-1)
	i32(1) // sessions
	i64(0x100)
	i32(30000)
	i32(1) // ACL cache
	i64(1)
	i32(1)
	i32(31)
	str("world")
	str("anyone")
	node := func(path string, data []byte, owner int64) {
		str(path)
		if data == nil {
			i32(-1)
		} else {
			str(string(data))
		}
		i64(1)     // aclRef
		i64(2)     // czxid
		i64(3)     // mzxid
		i64(4)     // ctime
		i64(5)     // mtime
		i32(6)     // version
		i32(7)     // cversion
		i32(8)     // aversion
		i64(owner) // ephemeralOwner
		i64(9)     // pzxid
	}
	node("", []byte{}, 0)
	node("/a", []byte("hello"), 0x100)
	node("/b", nil, ContainerOwner)
	str("/")
	seal := func() { i64(int64(adler32.Checksum(b))); str("/") }
	seal()
	if trailer >= 2 {
		i64(0x9)
		i32(2)
		i64(12345)
		seal()
	}
	if trailer >= 3 {
		i64(0xa)
		seal()
	}
	return b
}

// hugeLen sets the data length of /a (offset 153; its bytes start at 157) to 2 GiB - 1: the decoder
// must fail at EOF, not allocate 2 GiB.
func hugeLen() []byte {
	b := handSnapshot(1)
	binary.BigEndian.PutUint32(b[153:], 0x7fffffff)
	return b
}

func TestSnapshotDecodeTable(t *testing.T) {
	want := []SnapNode{
		{Path: "/", Data: []byte{}, ACLRef: 1, Stat: Stat{2, 3, 4, 5, 6, 7, 8, 0, 9}},
		{Path: "/a", Data: []byte("hello"), ACLRef: 1, Stat: Stat{2, 3, 4, 5, 6, 7, 8, 0x100, 9}},
		{Path: "/b", Data: nil, ACLRef: 1, Stat: Stat{2, 3, 4, 5, 6, 7, 8, ContainerOwner, 9}},
	}
	full := handSnapshot(3)
	flip := func(i int) []byte { b := bytes.Clone(full); b[i] ^= 1; return b }
	cases := []struct {
		name    string
		in      []byte
		seals   int
		wantErr error
		errAt   string
	}{
		{"3.5 (seal 1 only)", handSnapshot(1), 1, nil, ""},
		{"3.6-3.8 (digest, seal 2)", handSnapshot(2), 2, nil, ""},
		{"3.9 (lastProcessedZxid, seal 3)", full, 3, nil, ""},
		{"empty file", nil, 0, ErrTruncated, "offset 0"},
		{"bad magic", []byte("ZKLG\x00\x00\x00\x02"), 0, ErrBadMagic, "offset 0"},
		{"flipped data byte", flip(80), 0, ErrChecksum, "seal 1"},
		{"truncated in a node", handSnapshot(1)[:100], 0, ErrTruncated, ""},
		{"truncated in seal 2", handSnapshot(2)[:len(handSnapshot(2))-3], 0, ErrTruncated, ""},
		{"huge data length", hugeLen(), 0, ErrTruncated, "offset 157: node data of /a"},
		{"trailing garbage after seal 3", append(bytes.Clone(full), 1, 2, 3), 0, ErrMalformed, "after seal 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sr, err := NewSnapshotReader(bytes.NewReader(c.in), "snapshot.9")
			var nodes []SnapNode
			for err == nil {
				var n SnapNode
				if n, err = sr.Next(); err == nil {
					nodes = append(nodes, n)
				}
			}
			if c.wantErr == nil {
				if err != io.EOF {
					t.Fatalf("err %v", err)
				}
				if !reflect.DeepEqual(nodes, want) {
					t.Errorf("nodes\n%+v\nwant\n%+v", nodes, want)
				}
				if tr := sr.Trailer(); tr.Seals != c.seals || (c.seals >= 2 && tr.Digest.Digest != 12345) || (c.seals == 3 && tr.LastProcessedZxid != 0xa) {
					t.Errorf("trailer %+v", tr)
				}
				if sr.Sessions[0] != (Session{0x100, 30000}) || sr.ACLs[1][0] != (ACL{31, "world", "anyone"}) {
					t.Errorf("sessions %v acls %v", sr.Sessions, sr.ACLs)
				}
				return
			}
			var de *DecodeError
			if !errors.Is(err, c.wantErr) || !errors.As(err, &de) || !strings.Contains(err.Error(), "snapshot.9: offset") || !strings.Contains(err.Error(), c.errAt) {
				t.Errorf("err %v, want %v mentioning %q", err, c.wantErr, c.errAt)
			}
		})
	}
}

// handLog builds a log with the given txn bytes, records framed by hand.
func handLog(txns ...[]byte) []byte {
	be := binary.BigEndian
	b := be.AppendUint32(nil, LogMagic)
	b = be.AppendUint32(b, 2)
	b = be.AppendUint64(b, 0)
	for _, t := range txns {
		b = be.AppendUint64(b, uint64(adler32.Checksum(t)))
		b = be.AppendUint32(b, uint32(len(t)))
		b = append(b, t...)
		b = append(b, 'B')
	}
	return b
}

func hdr(typ int32, zxid int64) TxnHeader {
	return TxnHeader{ClientID: 0x100, Cxid: 1, Zxid: zxid, Time: 1000 + zxid, Type: typ}
}

func TestTxnDecodeTable(t *testing.T) {
	dg := &TxnDigest{Version: 2, TreeDigest: 77}
	cases := []struct {
		name   string
		h      TxnHeader
		rec    Record
		digest *TxnDigest
	}{
		{"create", hdr(OpCreate, 1), &CreateTxn{Type: OpCreate, Path: "/a", Data: []byte("x"), ACL: OpenACL, ParentCVersion: 3}, dg},
		{"create V0 (no parentCVersion)", hdr(OpCreate, 2), &CreateTxn{Type: OpCreate, Path: "/a", Data: []byte("x"), ACL: OpenACL, Ephemeral: true, V0: true}, nil},
		{"create2 null data", hdr(OpCreate2, 3), &CreateTxn{Type: OpCreate2, Path: "/n", ACL: OpenACL, ParentCVersion: -1}, dg},
		{"createContainer", hdr(OpCreateContainer, 4), &CreateTxn{Type: OpCreateContainer, Path: "/c", Data: []byte{}, ACL: OpenACL, ParentCVersion: 1}, dg},
		{"createTTL", hdr(OpCreateTTL, 5), &CreateTxn{Type: OpCreateTTL, Path: "/t", Data: []byte("t"), ACL: OpenACL, ParentCVersion: 1, TTL: 5000}, dg},
		{"delete", hdr(OpDelete, 6), &DeleteTxn{Type: OpDelete, Path: "/a"}, dg},
		{"deleteContainer", hdr(OpDeleteContainer, 7), &DeleteTxn{Type: OpDeleteContainer, Path: "/c"}, nil},
		{"setData", hdr(OpSetData, 8), &SetDataTxn{Type: OpSetData, Path: "/a", Data: []byte("v2"), Version: 2}, dg},
		{"reconfig", hdr(OpReconfig, 9), &SetDataTxn{Type: OpReconfig, Path: "/zookeeper/config", Data: []byte("server.1=x"), Version: 1}, dg},
		{"setACL", hdr(OpSetACL, 10), &SetACLTxn{Path: "/a", ACL: []ACL{{1, "digest", "u:p"}}, Version: 1}, dg},
		{"error", hdr(OpError, 11), &ErrorTxn{Err: -6}, dg},
		{"createSession", hdr(OpCreateSession, 12), &CreateSessionTxn{TimeoutMs: 30000}, dg},
		{"closeSession with paths", hdr(OpCloseSession, 13), &CloseSessionTxn{HasPaths: true, Paths: []string{"/e1", "/e2"}}, dg},
		{"closeSession pre-3.6", hdr(OpCloseSession, 14), &CloseSessionTxn{}, nil},
		{"closeSession pre-3.6 with digest", hdr(OpCloseSession, 15), &CloseSessionTxn{}, dg},
		{"multi", hdr(OpMulti, 16), &MultiTxn{Txns: []Record{
			&CheckVersionTxn{Path: "/a", Version: 1},
			&SetDataTxn{Type: OpSetData, Path: "/a", Data: []byte("m"), Version: 1},
			&CreateTxn{Type: OpCreate, Path: "/m", Data: nil, ACL: OpenACL, ParentCVersion: 2},
			&DeleteTxn{Type: OpDelete, Path: "/d"},
			&ErrorTxn{Err: -103},
		}}, dg},
	}
	var all [][]byte
	for _, c := range cases {
		all = append(all, EncodeTxn(c.h, c.rec, c.digest))
	}
	lr, err := NewLogReader(bytes.NewReader(handLog(all...)), "log.1")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		got, err := lr.Next()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Header != c.h || !reflect.DeepEqual(got.Record, c.rec) || !reflect.DeepEqual(got.Digest, c.digest) {
			t.Errorf("%s:\n got %+v %#v %+v\nwant %+v %#v %+v", c.name, got.Header, got.Record, got.Digest, c.h, c.rec, c.digest)
		}
		_ = i
	}
	if _, err := lr.Next(); err != io.EOF {
		t.Errorf("end: %v, want io.EOF", err)
	}
}

func TestLogDamageTable(t *testing.T) {
	good := EncodeTxn(hdr(OpSetData, 1), &SetDataTxn{Type: OpSetData, Path: "/a", Data: []byte("v"), Version: 1}, nil)
	file := handLog(good, good)
	second := 16 + 12 + len(good) + 1
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(file)) }
	cases := []struct {
		name    string
		in      []byte
		goodN   int
		wantErr error // nil: a clean io.EOF
		offset  int
	}{
		{"clean", file, 2, nil, 0},
		{"zero length ends the log (preallocated zeros)", append(bytes.Clone(file), make([]byte, 64)...), 2, nil, 0},
		{"flipped byte in second txn", mut(func(b []byte) []byte { b[second+12+3] ^= 0x40; return b }), 1, ErrChecksum, second},
		{"truncated in second txn", file[:second+20], 1, ErrTruncated, second},
		{"truncated in second header", file[:second+5], 1, ErrTruncated, second},
		{"missing end-of-record byte", mut(func(b []byte) []byte { b[len(b)-1] = 'X'; return b }), 1, ErrMalformed, second},
		{"negative length", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[second+8:], 0xfffffff0); return b }), 1, ErrMalformed, second},
		{"length beyond the file", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[second+8:], 0x7ffffff0); return b }), 1, ErrTruncated, second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lr, err := NewLogReader(bytes.NewReader(c.in), "log.1")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				_, err = lr.Next()
				if err != nil {
					break
				}
				n++
			}
			if n != c.goodN {
				t.Errorf("%d good txns, want %d", n, c.goodN)
			}
			if c.wantErr == nil {
				if err != io.EOF {
					t.Errorf("err %v, want io.EOF", err)
				}
				return
			}
			var de *DecodeError
			if !errors.Is(err, c.wantErr) || !errors.As(err, &de) || de.Offset != int64(c.offset) || de.File != "log.1" {
				t.Errorf("err %v, want %v at offset %d", err, c.wantErr, c.offset)
			}
		})
	}
	if _, err := NewLogReader(bytes.NewReader(nil), "log.5"); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "log.5: offset 0") {
		t.Errorf("empty log: %v", err)
	}
}

// Property: what SnapshotWriter writes, SnapshotReader reads back unchanged,
// for every trailer form.
func TestSnapshotRoundTrip(t *testing.T) {
	nodes := []SnapNode{{Path: "/", Data: []byte{}, ACLRef: -1}}
	for i := range 300 {
		data := bytes.Repeat([]byte{byte(i)}, i*37) // up to 11 KB: crosses the slab size
		if i%7 == 0 {
			data = nil
		}
		nodes = append(nodes, SnapNode{Path: "/n" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + itoa(i), Data: data, ACLRef: 2, Stat: Stat{Czxid: int64(i), Version: int32(i)}})
	}
	lp := int64(99)
	for seals, tr := range []struct {
		d  *ZxidDigest
		lp *int64
	}{{nil, nil}, {&ZxidDigest{Zxid: 5, Version: 2, Digest: 1}, nil}, {&ZxidDigest{Zxid: 5, Version: 2, Digest: 1}, &lp}} {
		var buf bytes.Buffer
		sw, _ := NewSnapshotWriter(&buf, nil, map[int64][]ACL{2: OpenACL})
		for _, n := range nodes {
			sw.WriteNode(n)
		}
		if err := sw.Finish(tr.d, tr.lp); err != nil {
			t.Fatal(err)
		}
		sr, err := NewSnapshotReader(bytes.NewReader(buf.Bytes()), "rt")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			n, err := sr.Next()
			if err == io.EOF {
				if i != len(nodes) || sr.Trailer().Seals != seals+1 {
					t.Fatalf("read %d nodes, seals %d", i, sr.Trailer().Seals)
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(n, nodes[i]) {
				t.Fatalf("node %d: %+v want %+v", i, n.Path, nodes[i].Path)
			}
		}
	}
}

func itoa(i int) string { return string(binary.AppendUvarint(nil, uint64(i))) }

func FuzzSnapshot(f *testing.F) {
	f.Add(handSnapshot(1))
	f.Add(handSnapshot(2))
	f.Add(handSnapshot(3))
	f.Add(handSnapshot(3)[:90])
	f.Fuzz(func(t *testing.T, b []byte) {
		sr, err := NewSnapshotReader(bytes.NewReader(b), "fuzz")
		for i := 0; err == nil && i < 1<<16; i++ {
			_, err = sr.Next()
		}
		var de *DecodeError
		if err != nil && err != io.EOF && !errors.As(err, &de) {
			t.Fatalf("error without file and offset: %v", err)
		}
	})
}

func FuzzTxnLog(f *testing.F) {
	f.Add(handLog(EncodeTxn(hdr(OpCreate, 1), &CreateTxn{Type: OpCreate, Path: "/a", Data: []byte("x"), ACL: OpenACL}, &TxnDigest{2, 3})))
	f.Add(handLog(EncodeTxn(hdr(OpMulti, 2), &MultiTxn{Txns: []Record{&CheckVersionTxn{"/a", 1}, &ErrorTxn{-103}}}, nil)))
	f.Add(handLog(EncodeTxn(hdr(OpCloseSession, 3), &CloseSessionTxn{HasPaths: true, Paths: []string{"/e"}}, nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		lr, err := NewLogReader(bytes.NewReader(b), "fuzz")
		for i := 0; err == nil && i < 1<<16; i++ {
			_, err = lr.Next()
		}
		var de *DecodeError
		if err != nil && err != io.EOF && !errors.As(err, &de) {
			t.Fatalf("error without file and offset: %v", err)
		}
	})
}

// FuzzTxnBytes feeds arbitrary txn bytes past the checksum, straight to the
// record decoders (a fuzzer rarely forges a matching Adler-32).
func FuzzTxnBytes(f *testing.F) {
	f.Add(EncodeTxn(hdr(OpMulti, 2), &MultiTxn{Txns: []Record{&SetDataTxn{OpSetData, "/a", []byte("v"), 1}, &ErrorTxn{-103}}}, nil))
	f.Add(EncodeTxn(hdr(OpSetACL, 2), &SetACLTxn{"/a", OpenACL, 1}, &TxnDigest{2, 3}))
	f.Add(EncodeTxn(hdr(OpCreateTTL, 2), &CreateTxn{Type: OpCreateTTL, Path: "/t", ACL: OpenACL, TTL: 9}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		txn, err := DecodeTxnBytes(b, "fuzz", 12)
		var de *DecodeError
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("error without file and offset: %v", err)
		}
		if err == nil { // what decodes re-encodes to bytes that decode the same
			enc := EncodeTxn(txn.Header, txn.Record, txn.Digest)
			again, err := DecodeTxnBytes(enc, "fuzz", 12)
			// Compared as bytes: a null buffer and an empty one (jute -1 and 0)
			// decode alike, as nil and empty slices.
			if err != nil || !bytes.Equal(EncodeTxn(again.Header, again.Record, again.Digest), enc) || again.Header != txn.Header {
				t.Fatalf("re-encode round trip: %v\n%#v\n%#v", err, again, txn)
			}
		}
	})
}

// NextAfter skips the txns at or below a zxid without decoding them (one that
// would not decode is passed over), still stops at a skipped record whose
// checksum is wrong, and returns the first txn above the zxid decoded.
func TestLogNextAfter(t *testing.T) {
	set := func(z int64) []byte {
		return EncodeTxn(hdr(OpSetData, z), &SetDataTxn{Type: OpSetData, Path: "/a", Data: []byte{byte(z)}, Version: int32(z)}, nil)
	}
	undecodable := append(set(2), 0xff) // a byte after the txn: Next refuses it
	file := handLog(set(1), undecodable, set(3), set(4))
	if _, err := mustLog(t, file).NextAfter(0); err != nil {
		t.Fatalf("NextAfter(0): %v", err)
	}
	lr := mustLog(t, file)
	for _, want := range []int64{3, 4} {
		txn, err := lr.NextAfter(2)
		if err != nil || txn.Header.Zxid != want || txn.Record.(*SetDataTxn).Data[0] != byte(want) {
			t.Fatalf("NextAfter(2): %+v, %v; want zxid %d", txn, err, want)
		}
	}
	if _, err := lr.NextAfter(2); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	lr = mustLog(t, file)
	if _, err := lr.NextAfter(1); !errors.Is(err, ErrMalformed) {
		t.Fatalf("NextAfter(1) decodes zxid 2: %v, want it refused", err)
	}
	flipped := bytes.Clone(file)
	flipped[16+12+20] ^= 1 // in the first txn's record, after its zxid
	if _, err := mustLog(t, flipped).NextAfter(2); !errors.Is(err, ErrChecksum) {
		t.Fatalf("a skipped record with a bad checksum: %v", err)
	}
}

func mustLog(t *testing.T, b []byte) *LogReader {
	t.Helper()
	lr, err := NewLogReader(bytes.NewReader(b), "log.1")
	if err != nil {
		t.Fatal(err)
	}
	return lr
}
