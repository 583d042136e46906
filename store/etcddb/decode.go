package etcddb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Decoders of the bytes an etcd member dir holds (docs/formats.md §9): the key bucket's
// revision keys, its mvccpb.KeyValue values, and WAL frames. Hand-rolled because a
// db of millions of revisions is decoded once per open, and proto.Unmarshal
// allocates per value; fuzz tests check them against proto.Unmarshal.

// etcdRev is one bbolt key of the key bucket: main revision, sub revision (the
// op's place in its txn), and whether it is a tombstone (a delete).
type etcdRev struct {
	Main, Sub int64
	Tombstone bool
}

// parseEtcdRev decodes 8-byte main BE, '_', 8-byte sub BE, and an optional 't'.
func parseEtcdRev(k []byte) (etcdRev, error) {
	if len(k) != 17 && len(k) != 18 {
		return etcdRev{}, fmt.Errorf("revision key %x: %d bytes, want 17 or 18", k, len(k))
	}
	if k[8] != '_' {
		return etcdRev{}, fmt.Errorf("revision key %x: byte 8 is %#x, want '_'", k, k[8])
	}
	if len(k) == 18 && k[17] != 't' {
		return etcdRev{}, fmt.Errorf("revision key %x: byte 17 is %#x, want 't' (tombstone)", k, k[17])
	}
	main, sub := binary.BigEndian.Uint64(k[:8]), binary.BigEndian.Uint64(k[9:17])
	if main > math.MaxInt64 || sub > math.MaxInt64 {
		return etcdRev{}, fmt.Errorf("revision key %x: revision out of range", k)
	}
	return etcdRev{Main: int64(main), Sub: int64(sub), Tombstone: len(k) == 18}, nil
}

// etcdKV is the part of an mvccpb.KeyValue we use. Key and Value alias the input.
type etcdKV struct {
	Key, Value               []byte
	CreateRev, ModRev, Lease int64
	Version                  int64
}

var errProtoTruncated = errors.New("protobuf truncated")

// decodeEtcdKV decodes mvccpb.KeyValue{key=1, create_revision=2, mod_revision=3,
// version=4, value=5, lease=6}, skipping unknown fields as protobuf does.
func decodeEtcdKV(b []byte) (etcdKV, error) {
	var kv etcdKV
	for len(b) > 0 {
		tag, n := protoVarint(b)
		if n <= 0 {
			return etcdKV{}, fmt.Errorf("KeyValue field tag: %w", errProtoTruncated)
		}
		b = b[n:]
		field, wire := tag>>3, tag&7
		if field == 0 || field > 1<<29-1 {
			return etcdKV{}, fmt.Errorf("KeyValue: invalid field number %d", field)
		}
		switch wire {
		case 0:
			v, n := protoVarint(b)
			if n <= 0 {
				return etcdKV{}, fmt.Errorf("KeyValue field %d: %w", field, errProtoTruncated)
			}
			b = b[n:]
			switch field {
			case 2:
				kv.CreateRev = int64(v)
			case 3:
				kv.ModRev = int64(v)
			case 4:
				kv.Version = int64(v)
			case 6:
				kv.Lease = int64(v)
			}
		case 2:
			l, n := protoVarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return etcdKV{}, fmt.Errorf("KeyValue field %d: %w", field, errProtoTruncated)
			}
			v := b[n : n+int(l) : n+int(l)]
			b = b[n+int(l):]
			switch field {
			case 1:
				kv.Key = v
			case 5:
				kv.Value = v
			}
		case 1:
			if len(b) < 8 {
				return etcdKV{}, fmt.Errorf("KeyValue field %d: %w", field, errProtoTruncated)
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return etcdKV{}, fmt.Errorf("KeyValue field %d: %w", field, errProtoTruncated)
			}
			b = b[4:]
		default:
			return etcdKV{}, fmt.Errorf("KeyValue field %d: unsupported wire type %d", field, wire)
		}
	}
	return kv, nil
}

// protoVarint reads a base-128 varint; n <= 0 when b ends or the varint overflows.
func protoVarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// WAL records (server/storage/wal): each frame is a little-endian u64 whose low 56
// bits are the record's length; when its top bit is set, the low 3 bits of the top
// byte are padding bytes after the record (frames are 8-byte aligned). A zero
// length is the preallocated, unused tail of a segment.
const (
	walEntryType = 2 // walpb.Record.type of a raft entry
	// walMaxRecord bounds one record, so a damaged length does not allocate wildly
	// (etcd itself refuses records over 10 MB past the file end).
	walMaxRecord = 64 << 20
)

// walFrame splits the first frame off buf: the record bytes and the frame's total
// length. ok is false at the end of the used part (zero length) or when buf does
// not hold the whole frame (a torn tail).
func walFrame(buf []byte) (rec []byte, total int, ok bool, err error) {
	if len(buf) < 8 {
		return nil, 0, false, nil
	}
	field := binary.LittleEndian.Uint64(buf)
	if field == 0 {
		return nil, 0, false, nil
	}
	n := field &^ (0xff << 56)
	pad := uint64(0)
	if field>>63 == 1 {
		pad = (field >> 56) & 0x7
	}
	if n > walMaxRecord {
		return nil, 0, false, fmt.Errorf("WAL frame of %d bytes (more than %d): damaged length %#x", n, walMaxRecord, field)
	}
	if uint64(len(buf)-8) < n+pad {
		return nil, 0, false, nil
	}
	return buf[8 : 8+n], 8 + int(n+pad), true, nil
}

// walRecord decodes walpb.Record{type=1, crc=2, data=3}.
func walRecord(b []byte) (typ int64, data []byte, err error) {
	for len(b) > 0 {
		tag, n := protoVarint(b)
		if n <= 0 {
			return 0, nil, fmt.Errorf("WAL record tag: %w", errProtoTruncated)
		}
		b = b[n:]
		switch tag & 7 {
		case 0:
			v, n := protoVarint(b)
			if n <= 0 {
				return 0, nil, fmt.Errorf("WAL record field %d: %w", tag>>3, errProtoTruncated)
			}
			b = b[n:]
			if tag>>3 == 1 {
				typ = int64(v)
			}
		case 2:
			l, n := protoVarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return 0, nil, fmt.Errorf("WAL record field %d: %w", tag>>3, errProtoTruncated)
			}
			if tag>>3 == 3 {
				data = b[n : n+int(l)]
			}
			b = b[n+int(l):]
		default:
			return 0, nil, fmt.Errorf("WAL record field %d: unsupported wire type %d", tag>>3, tag&7)
		}
	}
	return typ, data, nil
}

// raftEntryIndex decodes the parts of raftpb.Entry{type=1, term=2, index=3,
// data=4} that tell whether it can hold a write: its index, its type (0 normal)
// and whether it carries data.
func raftEntryIndex(b []byte) (index uint64, typ uint64, hasData bool, err error) {
	for len(b) > 0 {
		tag, n := protoVarint(b)
		if n <= 0 {
			return 0, 0, false, fmt.Errorf("raft entry tag: %w", errProtoTruncated)
		}
		b = b[n:]
		switch tag & 7 {
		case 0:
			v, n := protoVarint(b)
			if n <= 0 {
				return 0, 0, false, fmt.Errorf("raft entry field %d: %w", tag>>3, errProtoTruncated)
			}
			b = b[n:]
			switch tag >> 3 {
			case 1:
				typ = v
			case 3:
				index = v
			}
		case 2:
			l, n := protoVarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return 0, 0, false, fmt.Errorf("raft entry field %d: %w", tag>>3, errProtoTruncated)
			}
			if tag>>3 == 4 {
				hasData = l > 0
			}
			b = b[n+int(l):]
		default:
			return 0, 0, false, fmt.Errorf("raft entry field %d: unsupported wire type %d", tag>>3, tag&7)
		}
	}
	return index, typ, hasData, nil
}
