package badgerdir

import (
	"bytes"
	"fmt"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"
)

// writeSorted writes the keys each calls fn with, in key order, into db, which
// must be empty, through a StreamWriter.
func writeSorted(db *badger.DB, tableSize int64, each func(fn func(key, value []byte) error) error) error {
	sw := db.NewStreamWriter()
	if err := sw.Prepare(); err != nil {
		sw.Cancel()
		return err
	}
	batch := max(int(tableSize/4), 16<<10)
	st := &streamSink{sw: sw, db: db, batch: batch, buf: z.NewBuffer(batch+batch/4, "badgerdir.Loader"), kv: &pb.KV{Version: 1}}
	defer st.buf.Release()
	if err := each(st.add); err != nil {
		sw.Cancel()
		return err
	}
	if err := sw.Write(st.buf); err != nil {
		sw.Cancel()
		return err
	}
	return sw.Flush()
}

// streamSink hands the sorted keys to a StreamWriter in batches of a quarter
// table (the StreamWriter copies them, and queues up to three).
type streamSink struct {
	sw    *badger.StreamWriter
	db    *badger.DB
	batch int
	buf   *z.Buffer
	kv    *pb.KV
	last  []byte
	// sent counts the keys and their bytes (keys and values) handed to the
	// StreamWriter; marks holds sent as it was after each batch, from the
	// last batch known to be in the tables on.
	sent  sentMark
	marks []sentMark
	// What the tables written so far hold (see pace): their number and bytes
	// on disk, and the bytes sent per byte on disk, as last sampled (when
	// there were sampledAt tables).
	tables, disk int64
	perDisk      float64
	sampledAt    int64
}

type sentMark struct{ keys, bytes uint64 }

func (st *streamSink) add(key, value []byte) error {
	if st.sent.keys > 0 && bytes.Compare(key, st.last) <= 0 {
		// The StreamWriter would panic, in its own goroutine.
		return fmt.Errorf("sort out of order at key %q after %q", key, st.last)
	}
	st.kv.Key, st.kv.Value = key, value
	badger.KVToBuffer(st.kv, st.buf)
	st.last = append(st.last[:0], key...)
	st.sent.keys++
	st.sent.bytes += uint64(len(key) + len(value))
	if st.buf.LenNoPadding() < st.batch {
		return nil
	}
	return st.flush()
}

// flush writes the batch and paces the merge.
func (st *streamSink) flush() error {
	if err := st.sw.Write(st.buf); err != nil {
		return err
	}
	st.buf.Reset()
	st.marks = append(st.marks, st.sent)
	st.pace()
	return nil
}

// Pacing. The StreamWriter hands each full table builder to a goroutine that
// writes the table out, up to 16 at a time, and starts the next builder at
// once. When writing tables falls behind the merge (a slow or shared disk),
// the builders in flight pile up, and Badger's pool keeps their buffers for
// reuse: committing a 100,000-topic fixture took 130 MB of builders. So the
// merge waits while the bytes sent but not yet in a table exceed
// loadTablesInFlight tables' worth (the bytes of the tables written so far,
// over their number) and four batches (those queued in the StreamWriter, and
// the one the count of what is in the tables misses).
//
// What the tables hold is known two ways. DB.Levels gives their number and
// bytes on disk, at no cost. DB.Tables gives their keys, whence the bytes sent
// they hold (marks), but reads every table's index: a page fault or more per
// table once the trimmer dropped it, for each of the hundreds of waits of a
// million-topic fixture (2,000 tables), which kept 60 MB of index pages
// resident. So the bytes sent per byte on disk are sampled from Tables when
// the tables have grown by an eighth since the last sample, and Levels
// gives the rest.
const (
	loadTablesInFlight = 2
	loadPacePoll       = 2 * time.Millisecond
	// loadPaceStall: how long the merge waits while no table is written at
	// all before it goes on regardless: a builder being filled with more than
	// the tables' worth above (values that compress much better than those
	// before) would otherwise wait for itself.
	loadPaceStall = time.Second
)

// pace waits until the tables written catch up with what was sent (see
// above). What it knows to be written only grows, so it asks Badger only when
// that is not enough.
func (st *streamSink) pace() {
	var waited time.Duration
	for !st.caughtUp() {
		before := st.tables
		st.refresh()
		if st.tables == 0 || st.caughtUp() {
			return // nothing to go by before the first table
		}
		if st.tables != before {
			waited = 0
		}
		if waited >= loadPaceStall {
			return
		}
		time.Sleep(loadPacePoll)
		waited += loadPacePoll
	}
}

func (st *streamSink) caughtUp() bool {
	if st.tables == 0 || st.perDisk == 0 {
		return false
	}
	written := float64(st.disk) * st.perDisk
	return float64(st.sent.bytes)-written <= loadTablesInFlight*written/float64(st.tables)+4*float64(st.batch)
}

// refresh learns how many tables are written and their bytes on disk, and
// samples the bytes sent per byte on disk when due.
func (st *streamSink) refresh() {
	st.tables, st.disk = levelTables(st.db)
	if st.tables > 0 && (st.perDisk == 0 || st.tables >= st.sampledAt+max(1, st.sampledAt/8)) {
		st.sample()
	}
}

func levelTables(db *badger.DB) (tables, disk int64) {
	for _, l := range db.Levels() {
		tables += int64(l.NumTables)
		disk += l.Size
	}
	return tables, disk
}

// sample counts the keys in the tables, finds the bytes sent that they hold
// (to the last whole batch), and divides by their bytes on disk.
func (st *streamSink) sample() {
	var keys uint64
	for _, t := range st.db.Tables() {
		keys += uint64(t.KeyCount)
	}
	tables, disk := levelTables(st.db) // as Tables saw them, but for a table added since
	i := 0
	for i+1 < len(st.marks) && st.marks[i+1].keys <= keys {
		i++
	}
	st.marks = st.marks[i:]
	if len(st.marks) == 0 || st.marks[0].keys > keys || disk == 0 {
		return
	}
	st.tables, st.disk, st.sampledAt = tables, disk, tables
	st.perDisk = float64(st.marks[0].bytes) / float64(disk)
}
