package repair

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/ledgermedic/ledgermedic/internal/spill"
)

// skippedList keeps the versions a capture could not read in a spill file, in
// the order met: a capture of a cluster whose schema ledgers are lost skips a
// version or more per topic, a million of them at a million topics.
type skippedList struct {
	dir  *spill.Dir
	file *spill.File
	seq  uint64
	key  [8]byte
	buf  []byte
}

func (l *skippedList) add(s Skipped) error {
	if l.file == nil {
		dir, err := spill.Open("")
		if err != nil {
			return err
		}
		f, err := dir.NewFile("skipped")
		if err != nil {
			dir.Close()
			return err
		}
		l.dir, l.file = dir, f
	}
	binary.BigEndian.PutUint64(l.key[:], l.seq) // keys in the order met
	l.seq++
	l.buf = appendSkipped(l.buf[:0], s)
	return l.file.Append(l.key[:], l.buf)
}

// appendSkipped encodes s: its version (a varint), its schema key's length and
// the key, then the reason.
func appendSkipped(b []byte, s Skipped) []byte {
	b = binary.AppendVarint(b, s.Version)
	b = binary.AppendUvarint(b, uint64(len(s.SchemaKey)))
	return append(append(b, s.SchemaKey...), s.Reason...)
}

// each calls fn with every version added, in order.
func (l *skippedList) each(ctx context.Context, fn func(Skipped) error) error {
	if l == nil || l.file == nil {
		return nil
	}
	if err := l.file.Finish(); err != nil {
		return err
	}
	return l.file.Scan(ctx, nil, func(_, v []byte) error {
		s, err := decodeSkipped(v)
		if err != nil {
			return err
		}
		return fn(s)
	})
}

func decodeSkipped(v []byte) (Skipped, error) {
	version, n := binary.Varint(v)
	if n <= 0 {
		return Skipped{}, fmt.Errorf("skipped version record: bad version")
	}
	v = v[n:]
	kl, n := binary.Uvarint(v)
	if n <= 0 || kl > uint64(len(v)-n) {
		return Skipped{}, fmt.Errorf("skipped version record: bad key length")
	}
	v = v[n:]
	return Skipped{SchemaKey: string(v[:kl]), Version: version, Reason: string(v[kl:])}, nil
}

func (l *skippedList) close() error {
	if l == nil || l.dir == nil {
		return nil
	}
	return l.dir.Close()
}
