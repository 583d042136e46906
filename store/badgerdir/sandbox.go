package badgerdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"

	"github.com/ledgermedic/ledgermedic/internal/scratch"
	"github.com/ledgermedic/ledgermedic/store"
)

// badgerLockFile is Badger's pid file; a copy must not carry the original's.
const badgerLockFile = "LOCK"

// openSandboxed serves a read-only view of a database that Badger refuses to open
// read-only after an unclean shutdown: it copies the database (the tables and logs p
// kept, with p's MANIFEST) into the sandbox, lets Badger recover the copy
// read-write, then reopens the copy read-only. The original is only read; the
// caller holds a shared lock on it so no writer can start meanwhile.
func (d *Dir) openSandboxed(p *dbPlan, opts store.Options) (*badger.DB, error) {
	src := p.src
	if d.SandboxPath == "" {
		sb, release, err := scratch.NewTempDir(opts.SandboxDir, "ledgermedic-sandbox-")
		if err != nil {
			return nil, fmt.Errorf("%s: %w; making a sandbox copy: %w", src, store.ErrUncleanShutdown, err)
		}
		d.SandboxPath, d.releaseSandbox = sb, release
	}
	dst := filepath.Join(d.SandboxPath, p.name)
	if err := checkFreeSpace(src, d.SandboxPath); err != nil {
		return nil, fmt.Errorf("%s: %w; %w", src, store.ErrUncleanShutdown, err)
	}
	d.logf("%s was not shut down cleanly; copying it to %s to inspect it without writing the original\n", src, dst)
	if err := p.buildSandbox(dst, true); err != nil {
		return nil, fmt.Errorf("%s: %w; copying to sandbox: %w", src, store.ErrUncleanShutdown, err)
	}
	rw, err := OpenDB(dst, false)
	if err != nil {
		return nil, cannotRead(src, fmt.Errorf("recover sandbox copy of %s: %w", src, err))
	}
	if err := rw.Close(); err != nil {
		return nil, cannotRead(src, fmt.Errorf("recover sandbox copy of %s: close: %w", src, err))
	}
	db, err := OpenDB(dst, true, verifiedReads)
	if err != nil {
		return nil, cannotRead(src, fmt.Errorf("sandbox copy of %s: %w", src, err))
	}
	d.Notes = append(d.Notes, sandboxNotePrefix+src+sandboxNoteMid+dst+" (Badger truncated its log there); the original was not written")
	return db, nil
}

// The note a read-only open leaves for a database it read from a sandbox copy
// (SandboxNoteDB reads it back).
const (
	sandboxNotePrefix = "unclean shutdown: "
	sandboxNoteMid    = " was not closed cleanly; inspected a sandbox copy at "
)

// SandboxNoteDB says whether a data dir note is a sandbox copy's, and of which
// database: the caller may say those once for all databases. Other unclean-
// shutdown notes (a half-written MANIFEST record, a table not in it) are not.
func SandboxNoteDB(note string) (db string, ok bool) {
	rest, ok := strings.CutPrefix(note, sandboxNotePrefix)
	if !ok {
		return "", false
	}
	db, _, ok = strings.Cut(rest, sandboxNoteMid)
	return db, ok
}

// lockShared takes the same flock Badger takes for a read-only open, so a writer
// cannot open dir while it is being copied. It writes nothing.
func lockShared(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := flockRetry(f, unix.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w: another process (a Pulsar broker tool, another ledgermedic) has it open; stop it and retry", dir, store.ErrLocked)
	}
	return func() { f.Close() }, nil
}

// lockExclusive takes the flock a writable Badger open takes, to read the files
// before Badger opens them; the caller releases it before Badger takes its own.
func lockExclusive(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := flockRetry(f, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w: another process (a Pulsar broker tool, another ledgermedic) has it open; stop it and retry", dir, store.ErrLocked)
	}
	return func() { f.Close() }, nil
}

// flockRetry takes a flock without blocking, retrying for a moment: a process
// killed an instant ago may still be releasing its lock. A holder that stays is
// refused after lockWait.
func flockRetry(f *os.File, how int) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil || !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const lockWait = time.Second

// checkFreeSpace fails early, with numbers, when the sandbox file system cannot hold
// the allocated bytes of src.
func checkFreeSpace(src, sandbox string) error {
	var need int64
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return err
		}
		need += st.Blocks * 512
		return nil
	})
	if err != nil {
		return err
	}
	var fsst unix.Statfs_t
	if err := unix.Statfs(sandbox, &fsst); err != nil {
		return err
	}
	if free := int64(fsst.Bavail) * int64(fsst.Bsize); free < need {
		return fmt.Errorf("sandbox copy needs %d MiB but %s has %d MiB free (set TMPDIR to a larger file system)",
			need>>20, sandbox, free>>20)
	}
	return nil
}

// copyDirSparse copies the regular files of src into a new dir dst, keeping holes.
// Badger preallocates its logs as sparse files (a .mem file is 128 MiB long but mostly
// hole), so a naive copy could need far more space than the original.
func copyDirSparse(src, dst string) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == badgerLockFile {
			continue
		}
		if err := scratch.CopyFileSparse(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
