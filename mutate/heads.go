package mutate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats/crc32c"
)

// The heads file caches what start-up learns from the records of finished runs.
//
// Every writable start reads the journal for unfinished runs and the highest
// epoch (readRuns). It used to open and read the ends of every record, about 40 µs
// each: after a back-fill of 1M ledgers (10k runs) that is 0.4 s on every start,
// and a benchmark that repeats back-fills pays it in its timed part. A finished
// run never becomes unfinished again: what changes its record after the finish
// (an undo's version refresh) rewrites it and keeps it finished. So the heads
// file lists the finished records a start has read, each with the inode, size
// and modification time its file had, and the next start reads only the records
// that are not listed or whose file changed since.
//
// It is a cache and nothing depends on it being there or current: written in
// place without fsync, by writable starts only (a dry run leaves the journal as
// it is), and read only when its checksum holds. A missing, stale or damaged file
// costs only the reads it would have saved.
const headsFileName = "heads"

// headsMagic is the heads file's first line. Then one line per record,
// "NAME<TAB>INODE<TAB>SIZE<TAB>MTIME-NS<TAB>STATE<TAB>MAX-EPOCH", and last
// "crc32c<TAB>N": the Castagnoli CRC of every byte before that line.
const headsMagic = "ledgermedic journal heads 1\n"

// cachedHead is one finished record as its last read found it.
type cachedHead struct {
	id       uint64 // fileID
	size     int64
	mtime    int64 // the file's modification time, Unix nanoseconds
	state    RunState
	maxEpoch uint64
}

// matches says the record file is as the head was read from it.
func (c cachedHead) matches(fi fs.FileInfo) bool {
	return fi.Mode().IsRegular() && fileID(fi) == c.id && fi.Size() == c.size && fi.ModTime().UnixNano() == c.mtime
}

// headOf is the cache line of a finished run read from a file that was as fi says.
func headOf(fi fs.FileInfo, r journaledRun) cachedHead {
	return cachedHead{id: fileID(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano(), state: r.state, maxEpoch: r.maxEpoch}
}

var errHeads = errors.New("heads file")

// decodeHeads parses a heads file. Any flaw (wrong first line, a line that does not
// parse, a state that is not finished, a checksum that does not hold) rejects the
// whole file.
func decodeHeads(data []byte) (map[string]cachedHead, error) {
	body, ok := bytes.CutPrefix(data, []byte(headsMagic))
	if !ok {
		return nil, fmt.Errorf("%w: not a heads file", errHeads)
	}
	end := bytes.LastIndex(body, []byte("\ncrc32c\t"))
	if end < 0 && bytes.HasPrefix(body, []byte("crc32c\t")) {
		end = -1 // no record lines
	} else if end < 0 {
		return nil, fmt.Errorf("%w: no checksum line", errHeads)
	}
	lines, sum := body[:end+1], body[end+1:]
	crcText, ok := bytes.CutPrefix(sum, []byte("crc32c\t"))
	if !ok || !bytes.HasSuffix(crcText, []byte("\n")) {
		return nil, fmt.Errorf("%w: bad checksum line", errHeads)
	}
	crc, err := strconv.ParseUint(string(crcText[:len(crcText)-1]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: checksum: %v", errHeads, err)
	}
	covered := data[:len(headsMagic)+len(lines)]
	if got := crc32c.Checksum(covered); got != uint32(crc) {
		return nil, fmt.Errorf("%w: checksum %d, its bytes have %d", errHeads, crc, got)
	}
	heads := make(map[string]cachedHead)
	for len(lines) > 0 {
		line, rest, _ := bytes.Cut(lines, []byte("\n"))
		lines = rest
		name, c, err := parseHeadLine(string(line))
		if err != nil {
			return nil, err
		}
		heads[name] = c
	}
	return heads, nil
}

func parseHeadLine(line string) (string, cachedHead, error) {
	f := strings.Split(line, "\t")
	if len(f) != 6 || !cacheableName(f[0]) {
		return "", cachedHead{}, fmt.Errorf("%w: bad line %q", errHeads, line)
	}
	id, err1 := strconv.ParseUint(f[1], 10, 64)
	size, err2 := strconv.ParseInt(f[2], 10, 64)
	mtime, err3 := strconv.ParseInt(f[3], 10, 64)
	epoch, err4 := strconv.ParseUint(f[5], 10, 64)
	state := RunState(f[4])
	if err := errors.Join(err1, err2, err3, err4); err != nil || size < 0 || !state.Finished() {
		return "", cachedHead{}, fmt.Errorf("%w: bad line %q", errHeads, line)
	}
	return f[0], cachedHead{id: id, size: size, mtime: mtime, state: state, maxEpoch: epoch}, nil
}

// cacheableName: a record file name the heads file can hold on one line.
func cacheableName(name string) bool {
	return strings.HasSuffix(name, recordSuffix) && !strings.HasPrefix(name, tempPrefix) &&
		!strings.ContainsAny(name, "\t\n/")
}

// encodeHeads writes the heads of names, in that order.
func encodeHeads(names []string, heads map[string]cachedHead) []byte {
	b := []byte(headsMagic)
	for _, name := range names {
		c := heads[name]
		b = append(b, name...)
		b = append(b, '\t')
		b = strconv.AppendUint(b, c.id, 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, c.size, 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, c.mtime, 10)
		b = append(b, '\t')
		b = append(b, c.state...)
		b = append(b, '\t')
		b = strconv.AppendUint(b, c.maxEpoch, 10)
		b = append(b, '\n')
	}
	crc := crc32c.Checksum(b)
	b = append(b, "crc32c\t"...)
	b = strconv.AppendUint(b, uint64(crc), 10)
	return append(b, '\n')
}

// readHeads reads the journal's heads file; nil when there is none or it does not
// decode.
func readHeads(dir string) map[string]cachedHead {
	data, err := os.ReadFile(filepath.Join(dir, headsFileName))
	if err != nil {
		return nil
	}
	heads, err := decodeHeads(data)
	if err != nil {
		return nil
	}
	return heads
}

// writeHeads replaces the heads file in place. A failure is not an error of the
// run: the next start reads the records instead.
func writeHeads(dir string, names []string, heads map[string]cachedHead) {
	_ = os.WriteFile(filepath.Join(dir, headsFileName), encodeHeads(names, heads), 0o644)
}
