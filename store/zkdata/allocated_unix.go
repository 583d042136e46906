//go:build unix

package zkdata

import (
	"io/fs"
	"syscall"
)

// allocated is the bytes a file really holds: a ZooKeeper log is a sparse file
// preallocated far past its last txn.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return min(fi.Size(), int64(st.Blocks)*512)
	}
	return fi.Size()
}
