package zkdisk

import (
	"io"
	"os"
)

// A snapshot file is read in pieces by one goroutine while the scan follows it on
// another: reading 50 MB and scanning it then overlap instead of taking turns,
// and each piece's Adler-32 is summed right after the read brought it into the
// cache, on the reading goroutine.

// feedPiece is how much the reader reads at a time: small enough to stay in
// the cache until summed and scanned.
const feedPiece = 256 << 10

// fileFeed is the reader's side of a snapshotImage being filled.
type fileFeed struct {
	ready chan int // how many bytes of buf are read, growing; closed when done
	// Set before ready is closed:
	whole bool // exactly len(buf) bytes, then end of file
}

// await makes sure buf holds need bytes, waiting for the reader; false when
// the file ends (or the read fails) first.
func (im *snapshotImage) await(need int) bool {
	if im.feed == nil {
		im.avail = len(im.buf)
		return need <= im.avail
	}
	for im.avail < need {
		n, ok := <-im.feed.ready
		if !ok {
			return false
		}
		im.avail = n
	}
	return true
}

// atEnd reports whether the scan is at the end of the file.
func (im *snapshotImage) atEnd() bool {
	if im.feed == nil {
		return im.off == len(im.buf)
	}
	for n := range im.feed.ready { // the reader has read everything once it closes
		im.avail = n
	}
	return im.feed.whole && im.off == len(im.buf)
}

// feedImage starts reading f, which stat says holds size bytes, into an image
// that scan can start on at once. The image's sum is the file's prefix Adler-32;
// halting it (sum.halt) stops the reader too, and sum.at waits for the reader.
func feedImage(f *os.File, size int) *snapshotImage {
	buf := make([]byte, size)
	pa := &prefixAdler{buf: buf, prefix: make([]uint32, size/adlerBlock+1), done: make(chan struct{})}
	feed := &fileFeed{ready: make(chan int, size/feedPiece+2)} // the reader never blocks
	go func() {
		defer close(pa.done)
		defer close(feed.ready)
		pa.prefix[0] = 1
		sum := uint32(1)
		off := 0
		for off < size && !pa.stop.Load() {
			n, err := io.ReadFull(f, buf[off:min(off+feedPiece, size)])
			sum = adlerUpdate(sum, buf[off:off+n])
			off += n
			if off%adlerBlock == 0 {
				pa.prefix[off/adlerBlock] = sum
			}
			feed.ready <- off
			if err != nil {
				return // short or failed: not whole, and the scan stops where the bytes do
			}
		}
		var extra [1]byte
		n, _ := f.Read(extra[:])
		feed.whole = off == size && n == 0 // a file that grew since stat is read again by the stream reader
	}()
	return &snapshotImage{buf: buf, sum: pa, feed: feed}
}
