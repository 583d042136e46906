package spill

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/s2"
)

// run is one sorted run on disk.
type run struct {
	f    *os.File
	size int64 // bytes on disk
}

// compressedBlock is the block size of compressed runs. A compressed run being
// read holds a block and its compressed form (some 35 KB, against the 64 KB
// buffer of a plain one), so compressed runs are merged compressedFanIn at a
// time. badgerdir.Loader's sorts of a million-topic fixture: 5.5 GB of records
// in 1.5 GB of runs, some 190 per database; 64 KB blocks took 1.2 GB of disk,
// but their merges held 46 MB.
const compressedBlock = 16 << 10

// runWriter writes a run's records: through a buffer, or S2-compressed in
// blocks of compressedBlock (with a checksum each). A Sorter keeps one for all
// its runs (one run is written at a time: handOff waits for the one before,
// Sorted and its merges run alone).
type runWriter struct {
	f     *os.File
	w     io.Writer
	end   func() error    // flushes w
	reset func(io.Writer) // makes w write to another file
	rb    []byte
}

// runWriter returns the sorter's writer, made to write a new run to f.
func (s *Sorter) runWriter(f *os.File) *runWriter {
	w := s.rw
	if w == nil {
		w = &runWriter{}
		if s.compressed {
			// Concurrency 1: the run is written in the background already,
			// beside the command's own work.
			zw := s2.NewWriter(nil, s2.WriterBlockSize(compressedBlock), s2.WriterConcurrency(1))
			w.w, w.end, w.reset = zw, zw.Close, zw.Reset
		} else {
			bw := bufio.NewWriterSize(nil, 256<<10)
			w.w, w.end, w.reset = bw, bw.Flush, bw.Reset
		}
		s.rw = w
	}
	w.f = f
	w.reset(f)
	return w
}

func (w *runWriter) add(key, value []byte) error {
	w.rb = appendRecord(w.rb[:0], key, value)
	if _, err := w.w.Write(w.rb); err != nil {
		return fmt.Errorf("spill: write %s: %w", w.f.Name(), err)
	}
	return nil
}

// finish flushes the run and returns it; on an error the file is closed.
func (w *runWriter) finish() (run, error) {
	err := w.end()
	var size int64
	if err == nil {
		size, err = w.f.Seek(0, io.SeekCurrent)
	}
	if err != nil {
		w.f.Close()
		return run{}, fmt.Errorf("spill: write %s: %w", w.f.Name(), err)
	}
	return run{f: w.f, size: size}, nil
}

// abort closes the file of a run that will not be finished.
func (w *runWriter) abort() { w.f.Close() }

// runReader reads the runs a merge gives it, one after another (a merge, then
// the next), through the same buffers.
type runReader struct {
	zr *s2.Reader // compressed runs
	rr *recordReader
}

// runReader returns the i-th reader of a merge, made to read r from its first
// record.
func (s *Sorter) runReader(i int, r run) *recordReader {
	for len(s.readers) <= i {
		s.readers = append(s.readers, &runReader{})
	}
	x := s.readers[i]
	var src io.Reader = io.NewSectionReader(r.f, 0, r.size)
	if s.compressed {
		if x.zr == nil {
			x.zr = s2.NewReader(src, s2.ReaderMaxBlockSize(compressedBlock))
		} else {
			x.zr.Reset(src)
		}
		src = x.zr
	}
	if x.rr == nil {
		x.rr = newRecordReader(src, r.f.Name(), 0)
	} else {
		x.rr.name = r.f.Name()
		x.rr.reset(src, 0)
	}
	return x.rr
}
