package scratch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// CopyFileSparse copies src to a new file dst, writing only the data ranges of src.
func CopyFileSparse(src, dst string) (err error) {
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
