// Package etcddisk decodes the bytes an etcd member dir holds (docs/formats.md §9):
// the bbolt key bucket's revision keys and mvccpb.KeyValue values, and the WAL's
// frames, records and raft entries. Hand-rolled because a db of millions of
// revisions is decoded once per open, and proto.Unmarshal allocates per value;
// fuzz tests check them against proto.Unmarshal. Standard library only.
package etcddisk

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Rev is one bbolt key of the key bucket: main revision, sub revision (the
// op's place in its txn), and whether it is a tombstone (a delete).
type Rev struct {
	Main, Sub int64
	Tombstone bool
}

// ParseRev decodes 8-byte main BE, '_', 8-byte sub BE, and an optional 't'.
func ParseRev(k []byte) (Rev, error) {
	if len(k) != 17 && len(k) != 18 {
		return Rev{}, fmt.Errorf("revision key %x: %d bytes, want 17 or 18", k, len(k))
	}
	if k[8] != '_' {
		return Rev{}, fmt.Errorf("revision key %x: byte 8 is %#x, want '_'", k, k[8])
	}
	if len(k) == 18 && k[17] != 't' {
		return Rev{}, fmt.Errorf("revision key %x: byte 17 is %#x, want 't' (tombstone)", k, k[17])
	}
	main, sub := binary.BigEndian.Uint64(k[:8]), binary.BigEndian.Uint64(k[9:17])
	if main > math.MaxInt64 || sub > math.MaxInt64 {
		return Rev{}, fmt.Errorf("revision key %x: revision out of range", k)
	}
	return Rev{Main: int64(main), Sub: int64(sub), Tombstone: len(k) == 18}, nil
}

// KV is the part of an mvccpb.KeyValue we use. Key and Value alias the input.
type KV struct {
	Key, Value               []byte
	CreateRev, ModRev, Lease int64
	Version                  int64
}

var ErrProtoTruncated = errors.New("protobuf truncated")

// DecodeKV decodes mvccpb.KeyValue{key=1, create_revision=2, mod_revision=3,
// version=4, value=5, lease=6}, skipping unknown fields as protobuf does.
func DecodeKV(b []byte) (KV, error) {
	var kv KV
	for len(b) > 0 {
		tag, n := protoVarint(b)
		if n <= 0 {
			return KV{}, fmt.Errorf("KeyValue field tag: %w", ErrProtoTruncated)
		}
		b = b[n:]
		field, wire := tag>>3, tag&7
		if field == 0 || field > 1<<29-1 {
			return KV{}, fmt.Errorf("KeyValue: invalid field number %d", field)
		}
		switch wire {
		case 0:
			v, n := protoVarint(b)
			if n <= 0 {
				return KV{}, fmt.Errorf("KeyValue field %d: %w", field, ErrProtoTruncated)
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
				return KV{}, fmt.Errorf("KeyValue field %d: %w", field, ErrProtoTruncated)
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
				return KV{}, fmt.Errorf("KeyValue field %d: %w", field, ErrProtoTruncated)
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return KV{}, fmt.Errorf("KeyValue field %d: %w", field, ErrProtoTruncated)
			}
			b = b[4:]
		default:
			return KV{}, fmt.Errorf("KeyValue field %d: unsupported wire type %d", field, wire)
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
	WALEntryType = 2 // walpb.Record.type of a raft entry
	// WALMaxRecord bounds one record, so a damaged length does not allocate wildly
	// (etcd itself refuses records over 10 MB past the file end).
	WALMaxRecord = 64 << 20
)

// WALFrame splits the first frame off buf: the record bytes and the frame's total
// length. ok is false at the end of the used part (zero length) or when buf does
// not hold the whole frame (a torn tail).
func WALFrame(buf []byte) (rec []byte, total int, ok bool, err error) {
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
	if n > WALMaxRecord {
		return nil, 0, false, fmt.Errorf("WAL frame of %d bytes (more than %d): damaged length %#x", n, WALMaxRecord, field)
	}
	if uint64(len(buf)-8) < n+pad {
		return nil, 0, false, nil
	}
	return buf[8 : 8+n], 8 + int(n+pad), true, nil
}

// WALRecord decodes walpb.Record{type=1, crc=2, data=3}.
func WALRecord(b []byte) (typ int64, data []byte, err error) {
	for len(b) > 0 {
		tag, n := protoVarint(b)
		if n <= 0 {
			return 0, nil, fmt.Errorf("WAL record tag: %w", ErrProtoTruncated)
		}
		b = b[n:]
		switch tag & 7 {
		case 0:
			v, n := protoVarint(b)
			if n <= 0 {
				return 0, nil, fmt.Errorf("WAL record field %d: %w", tag>>3, ErrProtoTruncated)
			}
			b = b[n:]
			if tag>>3 == 1 {
				typ = int64(v)
			}
		case 2:
			l, n := protoVarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return 0, nil, fmt.Errorf("WAL record field %d: %w", tag>>3, ErrProtoTruncated)
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

// RaftEntryIndex decodes the parts of raftpb.Entry{type=1, term=2, index=3,
// data=4} that tell whether it can hold a write: its index, its type (0 normal)
// and whether it carries data.
func RaftEntryIndex(b []byte) (index uint64, typ uint64, hasData bool, err error) {
	for len(b) > 0 {
		tag, n := protoVarint(b)
		if n <= 0 {
			return 0, 0, false, fmt.Errorf("raft entry tag: %w", ErrProtoTruncated)
		}
		b = b[n:]
		switch tag & 7 {
		case 0:
			v, n := protoVarint(b)
			if n <= 0 {
				return 0, 0, false, fmt.Errorf("raft entry field %d: %w", tag>>3, ErrProtoTruncated)
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
				return 0, 0, false, fmt.Errorf("raft entry field %d: %w", tag>>3, ErrProtoTruncated)
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

// WALEntriesAfter counts the normal raft entries with data whose index is above
// after, in one WAL segment, reading only its used part.
func WALEntriesAfter(file string, after uint64) (count, last uint64, err error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var head [8]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return count, last, nil // end of file, or a torn tail
		}
		field := binary.LittleEndian.Uint64(head[:])
		n := field &^ (0xff << 56)
		pad := uint64(0)
		if field>>63 == 1 {
			pad = (field >> 56) & 0x7
		}
		if field == 0 {
			return count, last, nil
		}
		if n > WALMaxRecord {
			return count, last, fmt.Errorf("offset %d: %d-byte frame (damaged length %#x)", off, n, field)
		}
		frame := make([]byte, 8+n+pad)
		copy(frame, head[:])
		if _, err := io.ReadFull(r, frame[8:]); err != nil {
			return count, last, nil // torn tail
		}
		rec, total, ok, err := WALFrame(frame)
		if err != nil || !ok {
			return count, last, err
		}
		off += int64(total)
		typ, data, err := WALRecord(rec)
		if err != nil {
			return count, last, fmt.Errorf("offset %d: %w", off-int64(total), err)
		}
		if typ != WALEntryType {
			continue
		}
		idx, etype, hasData, err := RaftEntryIndex(data)
		if err != nil {
			return count, last, fmt.Errorf("offset %d: %w", off-int64(total), err)
		}
		if etype == 0 && hasData && idx > after {
			count++
			last = max(last, idx)
		}
	}
}
