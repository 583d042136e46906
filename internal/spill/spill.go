// Package spill is a command's scratch space on disk for what it must keep per
// topic or per ledger of a cluster of any size, so that its memory stays flat
// however large the cluster is. A command learns facts in one order (a
// metadata walk goes topic by topic) and needs them in another (ledger id
// order, to meet the entries): it adds them to a Sorter under keys that sort
// the way the reader needs, and reads them back merged in key order. What is
// already in order goes to a File, which can be read from any key.
//
// Everything lives in one session temp dir (internal/scratch: under $TMPDIR
// unless told otherwise, swept by the next run when this one was killed) and
// is removed by Close. Records are a key and a value of bytes; their encoding
// is the caller's.
package spill

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ledgermedic/ledgermedic/internal/scratch"
)

// Dir holds the files of one command's spills.
type Dir struct {
	path    string
	release func()
	mu      sync.Mutex
	next    int // the next file's number
	closed  bool
}

// Open makes a spill dir under parent ("": os.TempDir()).
func Open(parent string) (*Dir, error) {
	p, release, err := scratch.NewTempDir(parent, scratch.SpillPrefix)
	if err != nil {
		if parent == "" {
			parent = os.TempDir()
		}
		return nil, fmt.Errorf("spill: temp dir under %s: %w", parent, err)
	}
	return &Dir{path: p, release: release}, nil
}

// Path is where the dir is (for messages).
func (d *Dir) Path() string { return d.path }

// Close removes every file of the dir. Sorters and Files made in it must not
// be used after.
func (d *Dir) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.release()
	if err := os.RemoveAll(d.path); err != nil {
		return fmt.Errorf("spill: remove %s: %w", d.path, err)
	}
	return nil
}

// create makes a new file of the dir, named after what it holds.
func (d *Dir) create(what string) (*os.File, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, fmt.Errorf("spill: %s: dir closed", d.path)
	}
	name := filepath.Join(d.path, fmt.Sprintf("%06d-%s", d.next, what))
	d.next++
	d.mu.Unlock()
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return f, nil
}
