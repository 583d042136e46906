package etcddb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/ledgermedic/ledgermedic/internal/spill"
)

// A db too large to hold is read onto disk (internal/spill): every revision of a
// Pulsar path up to the one asked for goes to a Sorter keyed by path, in revision
// order, so that its stable sort leaves each path's revisions side by side, the
// newest last; the newest that is not a delete goes to a spill.File in path
// order, which serves Get and the walk. The mmap's pages are dropped as the scan
// passes them, so that the file's size is not held resident either.

// sortBudget is the memory the sorter holds revisions in before it writes a run
// (docs/benchmarks.md, "Measured decisions").
var sortBudget = 32 << 20

// dropEvery is how many bytes of keys and values the scan reads between two
// drops of the mmap's pages (docs/benchmarks.md, "Measured decisions").
var dropEvery = 16 << 20

// spillNodes is the view as a spill.File: key the path, value the version
// (8 bytes) and the value.
type spillNodes struct {
	dir  *spill.Dir
	file *spill.File
}

// spillOpens counts the dbs read onto disk (tests check that they were).
var spillOpens atomic.Int64

// scanSpill reads the revisions up to rev into a spillNodes under parent.
func (s *etcdDB) scanSpill(bucket *bolt.Bucket, rev int64, parent string) error {
	spillOpens.Add(1)
	sortDir, err := spill.Open(parent)
	if err != nil {
		return err
	}
	defer sortDir.Close()
	sorter := sortDir.NewSorter("etcd-revisions", sortBudget)
	var rec []byte
	read := 0
	err = s.eachRevision(bucket, rev, func(key, value []byte, version int64) error {
		rec = binary.BigEndian.AppendUint64(rec[:0], uint64(version))
		rec = append(rec, value...)
		if read += len(key) + len(value); read >= dropEvery {
			dropPages(s.db, s.tx.Size())
			read = 0
		}
		return sorter.Add(key, rec)
	})
	dropPages(s.db, s.tx.Size())
	if err != nil {
		return err
	}
	n := &spillNodes{}
	if n.dir, err = spill.Open(parent); err != nil {
		return err
	}
	s.nodes = n
	if n.file, err = n.dir.NewFile("etcd-nodes"); err != nil {
		return err
	}
	// The newest revision of each path is the last of its run of records.
	var cur, last []byte
	flush := func() error {
		if cur == nil || binary.BigEndian.Uint64(last) == 0 {
			return nil // none yet, or deleted
		}
		return n.file.Append(cur, last)
	}
	err = sorter.Sorted(context.Background(), func(key, value []byte) error {
		if cur == nil || !bytes.Equal(key, cur) {
			if err := flush(); err != nil {
				return err
			}
			cur = append(cur[:0:0], key...)
		}
		last = append(last[:0], value...)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = n.file.Finish()
	}
	return err
}

func (n *spillNodes) close() error { return n.dir.Close() }

func (n *spillNodes) get(path string) (etcdDBNode, bool, error) {
	v, ok, err := n.file.Get([]byte(path))
	if err != nil || !ok {
		return etcdDBNode{}, false, err
	}
	return decodeSpilled(path, v)
}

func (n *spillNodes) walk(ctx context.Context, prefix, start string, fn func(n etcdDBNode) error) error {
	return n.file.ScanPrefix(ctx, []byte(prefix), []byte(start), func(key, value []byte) error {
		node, _, err := decodeSpilled(string(key), value)
		if err != nil {
			return err
		}
		return fn(node)
	})
}

// decodeSpilled reads a spilled node's value; the value aliases v.
func decodeSpilled(path string, v []byte) (etcdDBNode, bool, error) {
	if len(v) < 8 {
		return etcdDBNode{}, false, fmt.Errorf("etcd-db spill: node %q: %d bytes, want at least 8", path, len(v))
	}
	return etcdDBNode{path: path, value: v[8:len(v):len(v)], version: int64(binary.BigEndian.Uint64(v))}, true, nil
}
