package etcddb

import (
	"unsafe"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// dropPages takes the db's mmap pages out of this process's resident memory
// (MADV_DONTNEED: a read-only shared mapping of a file loses nothing, a later
// read faults the page in from the page cache again). size is the db's size,
// within the mapping.
func dropPages(db *bolt.DB, size int64) {
	if db == nil || size <= 0 {
		return
	}
	info := db.Info()
	// Data is the mapping's address as a uintptr; the mapping is not Go memory,
	// so reading the field as a pointer is safe (a plain conversion would be a
	// uintptr-to-pointer conversion vet cannot tell from a dangling one).
	base := *(*unsafe.Pointer)(unsafe.Pointer(&info.Data))
	_ = unix.Madvise(unsafe.Slice((*byte)(base), size), unix.MADV_DONTNEED)
}
