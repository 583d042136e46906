//go:build !unix

package zkdata

import "io/fs"

// allocated is the file's size: without the block count, a sparse log counts
// whole.
func allocated(fi fs.FileInfo) int64 { return fi.Size() }
