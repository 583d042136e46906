package etcddisk

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

func revKey(main, sub uint64, tomb bool) []byte {
	k := binary.BigEndian.AppendUint64(nil, main)
	k = append(k, '_')
	k = binary.BigEndian.AppendUint64(k, sub)
	if tomb {
		k = append(k, 't')
	}
	return k
}

func TestParseEtcdRev(t *testing.T) {
	cases := []struct {
		key     []byte
		want    Rev
		wantErr bool
	}{
		{revKey(7, 1, false), Rev{Main: 7, Sub: 1}, false},
		{revKey(9, 0, true), Rev{Main: 9, Tombstone: true}, false},
		{revKey(1<<63, 0, false), Rev{}, true},
		{append(revKey(1, 0, false), 'x'), Rev{}, true},
		{bytes.Replace(revKey(1, 0, false), []byte{'_'}, []byte{'-'}, 1), Rev{}, true},
		{[]byte("consistent_index"), Rev{}, true},
		{nil, Rev{}, true},
	}
	for _, tc := range cases {
		got, err := ParseRev(tc.key)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseRev(%x) = %+v, %v; want %+v, error %v", tc.key, got, err, tc.want, tc.wantErr)
		}
	}
}

func FuzzParseEtcdRev(f *testing.F) {
	f.Add(revKey(2, 0, false))
	f.Add(revKey(3, 1, true))
	f.Add([]byte("_"))
	f.Fuzz(func(t *testing.T, k []byte) {
		r, err := ParseRev(k)
		if err != nil {
			return
		}
		if again := revKey(uint64(r.Main), uint64(r.Sub), r.Tombstone); !bytes.Equal(again, k) {
			t.Fatalf("%x parsed as %+v, which encodes as %x", k, r, again)
		}
	})
}

func kvBytes(t testing.TB, kv *mvccpb.KeyValue) []byte {
	b, err := proto.Marshal(kv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Whatever our decoder accepts, protobuf accepts with the same fields.
func FuzzDecodeEtcdKV(f *testing.F) {
	f.Add(kvBytes(f, &mvccpb.KeyValue{Key: []byte("/a"), CreateRevision: 2, ModRevision: 5, Version: 3, Value: []byte{0, 1}, Lease: 7}))
	f.Add(kvBytes(f, &mvccpb.KeyValue{Key: []byte("/tomb")}))
	f.Add(append(kvBytes(f, &mvccpb.KeyValue{Key: []byte("/x")}), 0x3d, 1, 2, 3, 4)) // unknown fixed32 field 7
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		ours, err := DecodeKV(b)
		if err != nil {
			return
		}
		var kv mvccpb.KeyValue
		if err := proto.Unmarshal(b, &kv); err != nil {
			t.Fatalf("%x: we decoded %+v, protobuf refuses: %v", b, ours, err)
		}
		if !bytes.Equal(ours.Key, kv.Key) || !bytes.Equal(ours.Value, kv.Value) || ours.CreateRev != kv.CreateRevision ||
			ours.ModRev != kv.ModRevision || ours.Version != kv.Version || ours.Lease != kv.Lease {
			t.Fatalf("%x: ours %+v, protobuf %+v", b, ours, &kv)
		}
	})
}

func walFrameBytes(rec []byte) []byte {
	pad := (8 - len(rec)%8) % 8
	field := uint64(len(rec))
	if pad > 0 {
		field |= uint64(0x80|pad) << 56
	}
	out := binary.LittleEndian.AppendUint64(nil, field)
	out = append(out, rec...)
	return append(out, make([]byte, pad)...)
}

// walEntry is a walpb.Record of type 2 holding raftpb.Entry{type, term, index, data}.
func walEntry(index uint64, data []byte) []byte {
	var e []byte
	e = append(e, 0x08, 0x00, 0x10, 0x02, 0x18)
	e = binary.AppendUvarint(e, index)
	if data != nil {
		e = append(e, 0x22)
		e = binary.AppendUvarint(e, uint64(len(data)))
		e = append(e, data...)
	}
	rec := []byte{0x08, 0x02, 0x10, 0x00, 0x1a}
	rec = binary.AppendUvarint(rec, uint64(len(e)))
	return walFrameBytes(append(rec, e...))
}

func TestWALEntriesAfter(t *testing.T) {
	seg := append(walEntry(5, []byte("put")), walEntry(6, nil)...) // 6: an empty (leader) entry
	seg = append(seg, walEntry(7, []byte("put2"))...)
	seg = append(seg, make([]byte, 64)...) // the preallocated tail
	file := filepath.Join(t.TempDir(), "0.wal")
	if err := os.WriteFile(file, seg, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ after, count, last uint64 }{{0, 2, 7}, {5, 1, 7}, {7, 0, 0}}
	for _, tc := range cases {
		n, last, err := WALEntriesAfter(file, tc.after)
		if err != nil || n != tc.count || last != tc.last {
			t.Errorf("after %d: %d entries up to %d, %v; want %d up to %d", tc.after, n, last, err, tc.count, tc.last)
		}
	}
}

func FuzzWALSegment(f *testing.F) {
	f.Add(append(walEntry(5, []byte("put")), walEntry(6, nil)...))
	f.Add(walFrameBytes([]byte{0x08, 0x01, 0x1a, 0x02, 0x08}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, seg []byte) {
		for b := seg; ; {
			rec, total, ok, err := WALFrame(b)
			if err != nil || !ok {
				break
			}
			if total < 8 || total > len(b) || len(rec) > total-8 {
				t.Fatalf("frame of %d bytes from %d: record %d", total, len(b), len(rec))
			}
			if _, data, err := WALRecord(rec); err == nil {
				_, _, _, _ = RaftEntryIndex(data)
			}
			b = b[total:]
		}
		file := filepath.Join(dir, "seg.wal")
		if err := os.WriteFile(file, seg, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _ = WALEntriesAfter(file, 0)
	})
}
