//go:build linux

package badgerdir

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const trimSupported = true

// residentFileBytes is the process's resident file-backed and shared memory
// (RssFile + RssShmem: the third field of /proc/self/statm, in pages).
func residentFileBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// dropRanges drops the resident pages of ranges read by tableMappings from the
// process (MADV_DONTNEED, see trim.go) and returns the bytes advised.
func dropRanges(ranges []mapRange) (int64, error) {
	n, _, err := adviseRanges(ranges, syscall.MADV_DONTNEED)
	return n, err
}

// madvPageout is MADV_PAGEOUT (Linux 5.4), which package syscall does not name.
const madvPageout = 21

// reclaimTableMappings pages out (writes back and frees) the resident pages of
// every shared mapping of a table file (*.sst) in dirs: safe on any range (see
// trim.go), for use while tables are being unmapped.
func reclaimTableMappings(dirs map[string]bool) (int64, error) {
	ranges, err := tableMappings(dirs)
	if err != nil {
		return 0, err
	}
	n, _, err := adviseRanges(ranges, madvPageout)
	return n, err
}

// adviseRanges gives advice on each range and returns the bytes advised and the
// madvise calls made. Ranges that touch (one ends where the next starts; nothing
// else can lie between) take one call: the kernel tends to place each mapping
// right below the last, so a data dir's tables come as a few such runs, and a
// trim costs a few calls rather than one per table. A trim comes every trimAfter
// of pages read, so a call per table made the trims' cost grow with the square
// of the data dir (2,187 tables at 1M topics: 933k calls, 6.7 s of system time
// in one `schema capture`). MADV_PAGEOUT skips ranges no longer mapped; any
// other failure stops it.
func adviseRanges(ranges []mapRange, advice uintptr) (n int64, calls int, err error) {
	for i := 0; i < len(ranges); {
		j := i + 1
		for j < len(ranges) && ranges[j].start == ranges[j-1].end {
			j++
		}
		got, c, err := adviseRun(ranges[i:j], advice)
		n, calls = n+got, calls+c
		if err != nil {
			return n, calls, err
		}
		i = j
	}
	return n, calls, nil
}

// adviseRun advises ranges that touch, with one call. A page-out that meets a
// table unmapped since /proc/self/maps was read (ENOMEM: the kernel advised the
// rest) is repeated a table at a time, to count only what is still mapped.
func adviseRun(run []mapRange, advice uintptr) (n int64, calls int, err error) {
	start, end := run[0].start, run[len(run)-1].end
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, advice)
	switch {
	case errno == 0:
		return int64(end - start), 1, nil
	case errno == syscall.ENOMEM && advice == madvPageout && len(run) > 1:
		calls = 1
		for k := range run {
			got, c, err := adviseRun(run[k:k+1], advice)
			n, calls = n+got, calls+c
			if err != nil {
				return n, calls, err
			}
		}
		return n, calls, nil
	case errno == syscall.ENOMEM && advice == madvPageout:
		// The table was unmapped since /proc/self/maps was read (a compaction
		// deleted it): nothing there to page out.
		return 0, 1, nil
	}
	return 0, 1, errno
}

type mapRange struct{ start, end uintptr }

// tableMappings lists the shared mappings of *.sst files in dirs from
// /proc/self/maps ("start-end perms offset dev inode path").
func tableMappings(dirs map[string]bool) ([]mapRange, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mapRange
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r, ok := parseTableMapping(sc.Text(), dirs)
		if ok {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// parseTableMapping parses one line of /proc/self/maps and accepts it when it is
// a shared mapping of a *.sst file in dirs.
func parseTableMapping(line string, dirs map[string]bool) (mapRange, bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || len(fields[1]) < 4 || fields[1][3] != 's' {
		return mapRange{}, false
	}
	path := strings.Join(fields[5:], " ")
	if !strings.HasSuffix(path, ".sst") || !dirs[filepath.Dir(path)] {
		return mapRange{}, false
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	if !ok {
		return mapRange{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err := errors.Join(err1, err2); err != nil || end <= start {
		return mapRange{}, false
	}
	return mapRange{uintptr(start), uintptr(end)}, true
}
