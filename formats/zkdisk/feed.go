package zkdisk

import (
	"io"
	"os"
)

// A snapshot file is read in pieces by one goroutine while the scan follows it on
// another: reading 50 MB and scanning it then overlap instead of taking turns,
// and each piece's Adler-32 is summed right after the read brought it into the
// cache, on the reading goroutine. The reader keeps at most feedLead pieces
// ahead of the scan, so the scan finds the bytes still in the cache rather
// than in memory (unbounded, it ran the whole file ahead, and the scan's first
// touch of every record missed).

// feedPiece is how much the reader reads at a time: small enough to stay in
// the cache until summed and scanned.
const feedPiece = 256 << 10

// feedLead is how many pieces the reader may be ahead of the scan's.
const feedLead = 2

// fileFeed is the reader's side of a snapshotImage being filled.
type fileFeed struct {
	ready chan int // how many bytes of buf are read, growing; closed when done
	// credit holds a token per piece the reader may read; the scan gives one
	// back as it enters each next piece, and closes it (released) when it
	// stops following, so the reader runs to the end unhindered.
	credit   chan struct{}
	released bool // the scan's side
	read     int  // the scan's side: bytes read so far, as ready last said
	boundary int  // the scan's side: end of the piece the scan is in
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
	fd := im.feed
	for im.avail < need {
		if !fd.released && im.avail == fd.boundary && fd.boundary < fd.read {
			fd.credit <- struct{}{} // into the next piece: the reader may read one more
			fd.boundary += feedPiece
		} else {
			n, ok := <-fd.ready
			if !ok {
				return false
			}
			fd.read = n
		}
		im.avail = fd.read
		if !fd.released {
			im.avail = min(fd.read, fd.boundary)
		}
	}
	return true
}

// release lets the reader run to the end of the file without waiting for the
// scan.
func (fd *fileFeed) release() {
	if !fd.released {
		fd.released = true
		close(fd.credit)
	}
}

// stop ends a scan that gave up: the reader and the sum stop too.
func (im *snapshotImage) stop() {
	if im.feed != nil {
		im.feed.release()
	}
	im.sum.halt()
}

// atEnd reports whether the scan is at the end of the file.
func (im *snapshotImage) atEnd() bool {
	if im.feed == nil {
		return im.off == len(im.buf)
	}
	im.feed.release()
	for n := range im.feed.ready { // the reader has read everything once it closes
		im.feed.read, im.avail = n, n
	}
	return im.feed.whole && im.off == len(im.buf)
}

// feedImage starts reading f, which stat says holds size bytes, into an image
// that scan can start on at once. The image's sum is the file's prefix Adler-32;
// stop ends the reader early, and sum.at waits for it.
func feedImage(f *os.File, size int) *snapshotImage {
	buf := make([]byte, size)
	pa := &prefixAdler{buf: buf, prefix: make([]uint32, size/adlerBlock+1), done: make(chan struct{})}
	feed := &fileFeed{ready: make(chan int, size/feedPiece+2), // the reader never blocks on it
		credit: make(chan struct{}, feedLead), boundary: feedPiece}
	for range feedLead {
		feed.credit <- struct{}{}
	}
	go func() {
		defer close(pa.done)
		defer close(feed.ready)
		pa.prefix[0] = 1
		sum := uint32(1)
		off := 0
		for off < size && !pa.stop.Load() {
			<-feed.credit // closed once the scan stops following
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
