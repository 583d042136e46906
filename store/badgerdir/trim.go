package badgerdir

import (
	"path/filepath"
	"slices"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Badger reads and writes its tables (*.sst) through shared file mappings, and
// every table page a run touches stays in the process's resident set until
// Badger unmaps the table, which a session or a read-only open does only at
// close. A back-fill touches nearly every page of both stores, so its resident
// memory grew with the data although those pages are clean page cache
// the kernel can drop. The trimmer bounds them: when the process's resident file
// pages have grown by trimAfter since the last trim, it drops this data dir's
// table mappings from the process (madvise MADV_DONTNEED, trim_linux.go). For a
// shared file mapping that loses nothing: the next access maps the page again
// from the page cache, whose pages stay where they are (a dirty page stays dirty
// there). It bounds resident memory, not the kernel's page cache.
//
// It is only safe while no table of those folders is unmapped: a range unmapped
// after /proc/self/maps was read could be reused by an anonymous mapping, which
// MADV_DONTNEED would zero. So it runs only on databases that compact nothing
// while open (read-only opens, and sessions, see sessionOptions), is stopped
// before DataDir.Close flattens or closes them, and mappingsMu orders every trim
// against every close of a Badger database by this package.
//
// The flatten at close (needsFlatten) compacts, and reads every table of the
// metadata store and writes new ones through mappings. While it runs, a trimmer
// in reclaim mode bounds those pages with MADV_PAGEOUT instead, which loses
// nothing on any mapping, whatever lies there by the time it acts: it writes back
// and frees file pages (they leave the page cache too, so a later read of them
// goes to the disk), and anonymous memory stays, or goes to swap, never zeroed.
// A table the flatten unmapped after /proc/self/maps was read fails with ENOMEM
// and is skipped (trim_linux.go); the page-out goes on with the others.
const (
	// trimAfter: growth of resident file pages (RssFile) that starts a trim.
	// A trim costs a read of /proc/self/maps and a madvise per table; pages
	// touched again after it are mapped again from the page cache (a minor
	// fault each). 4 MB is 1,024 pages.
	trimAfter = 4 << 20
	// trimPoll: how often RssFile is read (/proc/self/statm, one small read).
	// A run that reads 100 MB/s overshoots trimAfter by about 5 MB.
	trimPoll = 50 * time.Millisecond
	// reclaimPoll: the flatten reads and writes tables faster than a run does.
	reclaimPoll = 10 * time.Millisecond
)

// mappingsMu orders trims against closes of Badger databases (which unmap tables).
// mappingsGen counts those closes; a trimmer that kept the ranges of an earlier
// read of /proc/self/maps reads it again when the count moved.
var (
	mappingsMu  sync.Mutex
	mappingsGen uint64
)

// lockMappings takes mappingsMu for a close of Badger databases.
func lockMappings() {
	mappingsMu.Lock()
	mappingsGen++
}

// openBounded runs open, a Badger open of the tables in dirs, while a trimmer in
// reclaim mode bounds their resident pages. An open reads the index of every
// table through its mapping, and the kernel maps the pages around each read
// (fault-around, readahead): about 128 KB a table, which the trimmer started after
// the open dropped only once the peak was reached (at 1,076 tables of a 4.7M-ledger
// data dir, 139 MB of the back-fill's 199 MB peak: docs/benchmarks.md). A failed
// open unmaps the tables it opened, which only reclaim mode is safe against (see
// above); the pages it pages out leave the page cache too, so the run reads each
// table's index from the disk once more.
func openBounded(dirs []string, open func() (*badger.DB, error)) (*badger.DB, error) {
	t := startTrimmer(dirs, true)
	defer t.Stop()
	return open()
}

// mapTrimmer trims the table mappings of some folders until stopped.
type mapTrimmer struct {
	// reclaim: MADV_PAGEOUT, safe while tables are unmapped (a compaction).
	reclaim bool
	stop    chan struct{}
	done    chan struct{}
	// known are the table ranges of the last read of /proc/self/maps, at
	// mappingsGen knownGen (drop mode only; see drop).
	known    []mapRange
	knownGen uint64
	// trims, trimmed and mapsReads count what it did (read after Stop).
	trims     int
	trimmed   int64
	mapsReads int
}

// startTrimmer starts a trimmer for the tables in dirs; nil when the platform has
// none (trim_other.go) or dirs is empty. reclaim picks MADV_PAGEOUT (see above).
func startTrimmer(dirs []string, reclaim bool) *mapTrimmer {
	if !trimSupported || len(dirs) == 0 {
		return nil
	}
	t := &mapTrimmer{reclaim: reclaim, stop: make(chan struct{}), done: make(chan struct{})}
	go t.run(pathSet(dirs))
	return t
}

// pathSet holds each of dirs as an absolute path and with its links resolved,
// as /proc/self/maps names the files mapped from them.
func pathSet(dirs []string) map[string]bool {
	set := map[string]bool{}
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			set[abs] = true
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				set[real] = true
			}
		}
	}
	return set
}

func (t *mapTrimmer) run(dirs map[string]bool) {
	defer close(t.done)
	poll := trimPoll
	if t.reclaim {
		poll = reclaimPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	// Opening the databases read every table's index and bloom filter.
	if !t.trim(dirs, false) {
		return
	}
	last, ok := residentFileBytes()
	if !ok {
		return
	}
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		now, ok := residentFileBytes()
		if !ok {
			return
		}
		if now-last < trimAfter {
			last = min(last, now)
			continue
		}
		reads := t.mapsReads
		if !t.trim(dirs, false) {
			return
		}
		after, _ := residentFileBytes()
		if after-last >= trimAfter/2 && t.mapsReads == reads {
			// Most of the growth is still resident: tables mapped since the
			// ranges were read (a session's flush, a load's new table), or
			// other files' pages.
			if !t.trim(dirs, true) {
				return
			}
			after, _ = residentFileBytes()
		}
		last = after
	}
}

// trim drops the mappings once, reading /proc/self/maps again first when reread
// (see drop); false when that failed (the trimmer then stops: nothing was lost,
// the pages just stay resident).
func (t *mapTrimmer) trim(dirs map[string]bool, reread bool) bool {
	var n int64
	var err error
	if t.reclaim {
		n, err = reclaimTableMappings(dirs) // the closer holds mappingsMu
	} else {
		mappingsMu.Lock()
		n, err = t.drop(dirs, reread)
		mappingsMu.Unlock()
	}
	if err != nil {
		return false
	}
	t.trims++
	t.trimmed += n
	return true
}

// drop drops the table ranges read from /proc/self/maps by an earlier trim, and
// reads them again only when asked (reread), when none were read yet, or when a
// close unmapped tables since (mappingsGen). Reading the maps cost a line per
// mapping at every trim: with a trim every trimAfter of pages read, the reads'
// cost grew with the square of the data dir (2,187 tables at 1M topics: 2.8 s of
// a 47 s `schema capture`). Keeping the ranges is as safe as the one read was: no
// table of dirs is unmapped while a trimmer in drop mode runs (above), and every
// other close is counted. A reread that finds the same tables advises nothing:
// what grew lies elsewhere. The caller holds mappingsMu.
func (t *mapTrimmer) drop(dirs map[string]bool, reread bool) (int64, error) {
	if reread || t.known == nil || t.knownGen != mappingsGen {
		ranges, err := tableMappings(dirs)
		if err != nil {
			return 0, err
		}
		t.mapsReads++
		same := reread && slices.Equal(ranges, t.known)
		t.known, t.knownGen = ranges, mappingsGen
		if same {
			return 0, nil
		}
	}
	return dropRanges(t.known)
}

// Stop stops the trimmer and waits for it; a nil trimmer does nothing.
func (t *mapTrimmer) Stop() {
	if t == nil {
		return
	}
	close(t.stop)
	<-t.done
}
