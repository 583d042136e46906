// Package scratch makes the temp dirs a session works in (swept when their owner is gone) and copies files
// into them without filling their holes.
package scratch

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The prefixes of the temp dirs a session makes (read-only link sandboxes,
// unclean-shutdown copies, copies of a locked etcd db, spill databases).
var tempDirPrefixes = []string{"ledgermedic-ro-", "ledgermedic-sandbox-", "ledgermedic-etcd-db-", SpillPrefix}

// SpillPrefix names the temp dirs of spill databases (internal/spill).
const SpillPrefix = "ledgermedic-spill-"

// OwnerFile marks a temp dir whose owner holds an exclusive flock on the dir
// for as long as it runs. Dirs without it (made by older versions) are never swept:
// nothing says whether their owner is alive.
const OwnerFile = ".ledgermedic-owner"

// NewTempDir makes a session's temp dir under parent ("" is os.TempDir()) and
// holds an exclusive flock on it until release. First it removes the temp dirs
// that killed sessions left there: their owner's lock went with the process, so
// a free lock means nobody uses the dir (a SIGKILLed or OOM-killed command never
// reaches its own clean-up, and these dirs can be as large as a database copy).
func NewTempDir(parent, prefix string) (dir string, release func(), err error) {
	sweepTempDirs(parent)
	if dir, err = os.MkdirTemp(parent, prefix); err != nil {
		return "", nil, err
	}
	f, err := holdTempDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() { f.Close() }, nil
}

// holdTempDir takes the exclusive lock on a new temp dir, then marks it: a sweep
// that finds the mark finds the lock already held.
func holdTempDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, OwnerFile), nil, 0o600); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweepTempDirs removes the marked temp dirs under parent whose lock is free.
// It is best effort: a dir it cannot open, lock or remove is left as it is.
func sweepTempDirs(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && HasTempPrefix(e.Name()) {
			removeIfOrphaned(filepath.Join(parent, e.Name()))
		}
	}
}

func HasTempPrefix(name string) bool {
	for _, p := range tempDirPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// removeIfOrphaned removes dir when it carries the owner mark and its lock can
// be taken: its owner is gone.
func removeIfOrphaned(dir string) {
	if _, err := os.Lstat(filepath.Join(dir, OwnerFile)); err != nil {
		return
	}
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return // its owner is running
	}
	os.RemoveAll(dir)
}
