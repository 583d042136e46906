// Package badgermanifest reads and writes Badger v4's MANIFEST (badger/v4
// manifest.go), the list of a database's tables and their levels, so that
// store/badgerdir can verify and sandbox a Badger database without trusting a
// damaged MANIFEST.
package badgermanifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"slices"

	"github.com/dgraph-io/badger/v4/pb"
	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/crc32c"
)

// Badger's MANIFEST (badger/v4 manifest.go): an 8-byte header, "Bdgr", an external
// magic (u16 BE) and a format version (u16 BE), then records of
// u32 BE length | u32 BE CRC32C of the payload | ManifestChangeSet protobuf.
// ledgermedic replays it itself, so that a damaged or cut MANIFEST is a result with
// an offset instead of a silent partial replay (Badger accepts a cut MANIFEST and
// then deletes every table it does not list).
var magic = []byte("Bdgr")

// FileName is the MANIFEST's name in a Badger directory; HeaderSize the bytes
// before its first record.
const (
	FileName   = "MANIFEST"
	HeaderSize = 8
)

const (
	version          = 8 // badgerMagicVersion of Badger v4
	recordHeaderSize = 8
)

// Table is a live table as the MANIFEST records it.
type Table struct {
	Level       uint32
	KeyID       uint64
	Compression uint32
}

// State is what a replay of a MANIFEST found.
type State struct {
	Header  []byte // the 8 header bytes when they are valid, else nil
	Tables  map[uint64]Table
	Deleted map[uint64]bool // tables a record deleted (compacted away)
	MaxID   uint64          // highest table id any record names
	Records int
	Size    int64 // file size
	// End is the offset after the last record that replayed; End < Size when the
	// replay stopped early.
	End int64
	// Problem says why the replay stopped before the end ("" when it did not);
	// Cut is true when it stopped at a record that runs past the end of the file
	// (a write cut short by a crash, or a truncated file), false for corruption.
	Problem string
	Cut     bool
}

// Read replays the MANIFEST at path. It fails only when the file cannot be
// read; a damaged file is a State with Problem set and the records before
// the damage applied.
func Read(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b), nil
}

func Parse(b []byte) *State {
	st := &State{Tables: map[uint64]Table{}, Deleted: map[uint64]bool{}, Size: int64(len(b))}
	if len(b) < HeaderSize || !bytes.Equal(b[:4], magic) {
		st.Problem = "bad header (no \"Bdgr\" magic at offset 0)"
		st.Cut = len(b) < HeaderSize && bytes.HasPrefix(magic, b[:min(len(b), 4)])
		return st
	}
	if v := binary.BigEndian.Uint16(b[6:8]); v != version {
		st.Problem = fmt.Sprintf("unsupported format version %d at offset 6 (want %d)", v, version)
		return st
	}
	st.Header = slices.Clone(b[:HeaderSize])
	off := int64(HeaderSize)
	st.End = off
	for off < int64(len(b)) {
		if int64(len(b))-off < recordHeaderSize {
			st.Problem, st.Cut = fmt.Sprintf("record at offset %d cut short (%d of %d header bytes)", off, int64(len(b))-off, recordHeaderSize), true
			return st
		}
		n := int64(binary.BigEndian.Uint32(b[off:]))
		sum := binary.BigEndian.Uint32(b[off+4:])
		start := off + recordHeaderSize
		if start+n > int64(len(b)) {
			st.Problem, st.Cut = fmt.Sprintf("record at offset %d cut short (%d of %d bytes)", off, int64(len(b))-start, n), true
			return st
		}
		payload := b[start : start+n]
		if crc32.Checksum(payload, crc32c.Table) != sum {
			st.Problem = fmt.Sprintf("record at offset %d: checksum mismatch", off)
			return st
		}
		var cs pb.ManifestChangeSet
		if err := proto.Unmarshal(payload, &cs); err != nil {
			st.Problem = fmt.Sprintf("record at offset %d does not decode: %v", off, err)
			return st
		}
		if err := st.apply(&cs); err != nil {
			st.Problem = fmt.Sprintf("record at offset %d: %v", off, err)
			return st
		}
		st.Records++
		off = start + n
		st.End = off
	}
	return st
}

// apply applies one change set; a change set is atomic, so a bad one changes nothing.
func (st *State) apply(cs *pb.ManifestChangeSet) error {
	tables := make(map[uint64]Table, len(st.Tables))
	for id, t := range st.Tables {
		tables[id] = t
	}
	deleted := map[uint64]bool{}
	maxID := st.MaxID
	for _, c := range cs.GetChanges() {
		maxID = max(maxID, c.GetId())
		switch c.GetOp() {
		case pb.ManifestChange_CREATE:
			if _, ok := tables[c.GetId()]; ok {
				return fmt.Errorf("table %d created twice", c.GetId())
			}
			if c.GetLevel() > 64 {
				return fmt.Errorf("table %d at level %d", c.GetId(), c.GetLevel())
			}
			tables[c.GetId()] = Table{Level: c.GetLevel(), KeyID: c.GetKeyId(), Compression: c.GetCompression()}
		case pb.ManifestChange_DELETE:
			delete(tables, c.GetId())
			deleted[c.GetId()] = true
		default:
			return fmt.Errorf("unknown operation %d", c.GetOp())
		}
	}
	st.Tables, st.MaxID = tables, maxID
	for id := range deleted {
		st.Deleted[id] = true
	}
	return nil
}

// Write writes a MANIFEST holding exactly tables, in one record, to path.
// header is the original's when it was valid, so the external magic is kept.
func Write(path string, header []byte, tables map[uint64]Table) error {
	if header == nil {
		header = make([]byte, HeaderSize)
		copy(header, magic)
		binary.BigEndian.PutUint16(header[6:], version)
	}
	ids := make([]uint64, 0, len(tables))
	for id := range tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var cs pb.ManifestChangeSet
	for _, id := range ids {
		t := tables[id]
		cs.Changes = append(cs.Changes, &pb.ManifestChange{
			Id: id, Op: pb.ManifestChange_CREATE, Level: t.Level, KeyId: t.KeyID, Compression: t.Compression,
		})
	}
	out := slices.Clone(header)
	if len(cs.Changes) > 0 {
		payload, err := proto.Marshal(&cs)
		if err != nil {
			return err
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(payload)))
		out = binary.BigEndian.AppendUint32(out, crc32.Checksum(payload, crc32c.Table))
		out = append(out, payload...)
	}
	return os.WriteFile(path, out, 0o600)
}
