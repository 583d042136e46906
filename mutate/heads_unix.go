//go:build unix

package mutate

import (
	"io/fs"
	"syscall"
)

// fileID is the file's inode number: a record replaced by rename within one tick
// of the file system's clock, at the same size, is still told apart.
func fileID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
