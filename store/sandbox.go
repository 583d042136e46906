package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

// badgerLockFile is Badger's pid file; a copy must not carry the original's.
const badgerLockFile = "LOCK"

// openSandboxed serves a read-only view of a database that Badger refuses to open
// read-only after an unclean shutdown: it copies the database (the tables and logs p
// kept, with p's MANIFEST) into the sandbox, lets Badger recover the copy
// read-write, then reopens the copy read-only. The original is only read; the
// caller holds a shared lock on it so no writer can start meanwhile.
func (d *DataDir) openSandboxed(p *dbPlan, opts Options) (*badger.DB, error) {
	src := p.src
	if d.SandboxPath == "" {
		sb, release, err := newTempDir(opts.SandboxDir, "ledgermedic-sandbox-")
		if err != nil {
			return nil, fmt.Errorf("%s: %w; making a sandbox copy: %w", src, ErrUncleanShutdown, err)
		}
		d.SandboxPath, d.releaseSandbox = sb, release
	}
	dst := filepath.Join(d.SandboxPath, p.name)
	if err := checkFreeSpace(src, d.SandboxPath); err != nil {
		return nil, fmt.Errorf("%s: %w; %w", src, ErrUncleanShutdown, err)
	}
	d.logf("%s was not shut down cleanly; copying it to %s to inspect it without writing the original\n", src, dst)
	if err := p.buildSandbox(dst, true); err != nil {
		return nil, fmt.Errorf("%s: %w; copying to sandbox: %w", src, ErrUncleanShutdown, err)
	}
	rw, err := openBadger(dst, false)
	if err != nil {
		return nil, cannotRead(src, fmt.Errorf("recover sandbox copy of %s: %w", src, err))
	}
	if err := rw.Close(); err != nil {
		return nil, cannotRead(src, fmt.Errorf("recover sandbox copy of %s: close: %w", src, err))
	}
	db, err := openBadger(dst, true, verifiedReads)
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
		return nil, fmt.Errorf("%s: %w: another process (a Pulsar broker tool, another ledgermedic) has it open; stop it and retry", dir, ErrLocked)
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
		return nil, fmt.Errorf("%s: %w: another process (a Pulsar broker tool, another ledgermedic) has it open; stop it and retry", dir, ErrLocked)
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
		if err := copyFileSparse(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyFileSparse copies src to a new file dst, writing only the data ranges of src.
func copyFileSparse(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	size := st.Size()
	// Unwritten ranges of out read as zeros: they are the holes.
	if err := out.Truncate(size); err != nil {
		return err
	}
	if err := copyDataRanges(in, out, size); err != nil {
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("copy %s: %w", src, err)
		}
		// The file system cannot report holes: copy everything, skipping zero blocks.
		if err := copySkippingZeros(in, out, size); err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
	}
	return nil
}

// copyDataRanges copies the ranges SEEK_DATA/SEEK_HOLE report as data.
func copyDataRanges(in, out *os.File, size int64) error {
	fd := int(in.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only a hole is left
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.NewOffsetWriter(out, data), io.NewSectionReader(in, data, hole-data)); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

// copySkippingZeros copies in to out block by block, seeking over all-zero blocks.
func copySkippingZeros(in, out *os.File, size int64) error {
	const block = 64 << 10
	buf := make([]byte, block)
	zero := make([]byte, block)
	for off := int64(0); off < size; off += block {
		n, err := in.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if n == 0 {
			return nil
		}
		if bytes.Equal(buf[:n], zero[:n]) {
			continue
		}
		if _, err := out.WriteAt(buf[:n], off); err != nil {
			return err
		}
	}
	return nil
}
