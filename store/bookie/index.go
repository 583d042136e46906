package bookie

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/formats/bkdisk"
	"github.com/ledgermedic/ledgermedic/formats/crc32c"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
)

// The bookie index: one Badger database per set of bookie files, built by one scan
// of every entry log and journal and kept in the user's cache dir, so a bookie with
// 10^8 entries costs disk, not memory. Its name is a fingerprint of the files'
// names, sizes and mtimes: any change makes a new one.
//
//	'r' | ledgerId (8, BE) | entryId (8, BE) | bookie (2, BE) -> location (22 bytes)
//	'f' | file (4, BE)                                         -> indexFile (JSON)
//	'd' | seq (8, BE)                                          -> ReplicaFinding (JSON): damage met in the files
const (
	replicaKeyPrefix = 'r'
	fileKeyPrefix    = 'f'
	damageKeyPrefix  = 'd'
	replicaKeyLen    = 19
	locationLen      = 22
	// indexFormat is hashed into every fingerprint: a new layout never reads an old index.
	indexFormat = "ledgermedic bookie index 1"
)

func replicaKey(l, e int64, b uint16) []byte {
	k := append(ledgerEntryPrefix(l, e), 0, 0)
	binary.BigEndian.PutUint16(k[17:], b)
	return k
}

func ledgerPrefix(l int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{replicaKeyPrefix}, uint64(l))
}

func ledgerEntryPrefix(l, e int64) []byte {
	return binary.BigEndian.AppendUint64(ledgerPrefix(l), uint64(e))
}

func ledgerKeyFrom(l, e int64) []byte { return ledgerEntryPrefix(l, e) }

func parseReplicaKey(k []byte) (l, e int64, b uint16) {
	if len(k) != replicaKeyLen {
		return -1, -1, 0
	}
	return int64(binary.BigEndian.Uint64(k[1:])), int64(binary.BigEndian.Uint64(k[9:])), binary.BigEndian.Uint16(k[17:])
}

// location is where one replica's stored bytes are.
type location struct {
	file    uint32
	offset  int64 // of the entry's bytes
	length  uint32
	det     uint8  // digest type that verified at build time (detectCodes), 0: none
	hash    uint32 // CRC32C of the stored bytes, to tell replicas apart
	journal bool
}

var detectCodes = []bkdisk.DigestType{"", bkdisk.DigestCRC32, bkdisk.DigestHMAC, bkdisk.DigestCRC32C}

func (l location) detected() bkdisk.DigestType {
	if int(l.det) < len(detectCodes) {
		return detectCodes[l.det]
	}
	return ""
}

func (l location) encode() []byte {
	b := make([]byte, 0, locationLen)
	b = binary.BigEndian.AppendUint32(b, l.file)
	b = binary.BigEndian.AppendUint64(b, uint64(l.offset))
	b = binary.BigEndian.AppendUint32(b, l.length)
	b = append(b, l.det)
	b = binary.BigEndian.AppendUint32(b, l.hash)
	j := byte(0)
	if l.journal {
		j = 1
	}
	return append(b, j)
}

func (l *location) decode(b []byte) error {
	if len(b) != locationLen {
		return fmt.Errorf("location of %d bytes, want %d: index damaged", len(b), locationLen)
	}
	*l = location{
		file:    binary.BigEndian.Uint32(b),
		offset:  int64(binary.BigEndian.Uint64(b[4:])),
		length:  binary.BigEndian.Uint32(b[12:]),
		det:     b[16],
		hash:    binary.BigEndian.Uint32(b[17:]),
		journal: b[21] == 1,
	}
	return nil
}

// indexFile is one file of the bookie dirs the index points into.
type indexFile struct {
	Bookie int    `json:"bookie"`
	Path   string `json:"path"`
	Kind   string `json:"kind"` // "log" or "journal"
}

type indexDB struct {
	db     *badger.DB
	dir    string
	files  []indexFile
	damage []store.ReplicaFinding
}

// bookieFiles are the files of one bookie dir, in id order.
type bookieFiles struct {
	dir      string // as given
	logs     []string
	journals []string
	lastMark string // "" when absent
}

// findBookieFiles accepts DIR/{journal,ledgers}/current (as bookies write them) and
// DIR/{journal,ledgers}.
func findBookieFiles(dir string) (bookieFiles, error) {
	bf := bookieFiles{dir: dir}
	st, err := os.Stat(dir)
	if err != nil {
		return bf, fmt.Errorf("bookie dir %s: %w", dir, err)
	}
	if !st.IsDir() {
		return bf, fmt.Errorf("bookie dir %s: not a directory", dir)
	}
	ledgers, okL := subdir(dir, "ledgers")
	journal, okJ := subdir(dir, "journal")
	if !okL && !okJ {
		return bf, fmt.Errorf("bookie dir %s: neither ledgers/ nor journal/ is present", dir)
	}
	if okL {
		if bf.logs, err = idFiles(ledgers, ".log"); err != nil {
			return bf, err
		}
		if _, err := os.Stat(filepath.Join(ledgers, "lastMark")); err == nil {
			bf.lastMark = filepath.Join(ledgers, "lastMark")
		}
	}
	if okJ {
		if bf.journals, err = idFiles(journal, ".txn"); err != nil {
			return bf, err
		}
	}
	return bf, nil
}

func subdir(dir, name string) (string, bool) {
	for _, c := range []string{filepath.Join(dir, name, "current"), filepath.Join(dir, name)} {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c, true
		}
	}
	return "", false
}

// idFiles lists <hex><ext> files in id order.
func idFiles(dir, ext string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("bookie dir: %w", err)
	}
	type idf struct {
		id   int64
		path string
	}
	var out []idf
	for _, e := range ents {
		if id, ok := bkdisk.LogID(e.Name(), ext); ok && e.Type().IsRegular() {
			out = append(out, idf{id, filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(out, func(a, b idf) int { return int(min(max(a.id-b.id, -1), 1)) })
	paths := make([]string, len(out))
	for i, f := range out {
		paths[i] = f.path
	}
	return paths, nil
}

// fingerprint hashes the dirs as given and as absolute paths (stored paths are as
// given), and every file's name, size and mtime.
func fingerprint(bks []bookieFiles) (dirsKey, filesKey string, err error) {
	dh, fh := sha256.New(), sha256.New()
	fmt.Fprintln(dh, indexFormat)
	fmt.Fprintln(fh, indexFormat)
	for _, bk := range bks {
		abs, err := filepath.Abs(bk.dir)
		if err != nil {
			return "", "", err
		}
		fmt.Fprintf(dh, "%q %q\n", bk.dir, abs)
		fmt.Fprintf(fh, "bookie %q\n", abs)
		for _, p := range slices.Concat(bk.logs, bk.journals, []string{bk.lastMark}) {
			if p == "" {
				continue
			}
			st, err := os.Stat(p)
			if err != nil {
				return "", "", fmt.Errorf("bookie file: %w", err)
			}
			fmt.Fprintf(fh, "%q %d %d\n", p, st.Size(), st.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(dh.Sum(nil))[:16], hex.EncodeToString(fh.Sum(nil))[:32], nil
}

// cacheRoot is where indexes go; never inside a bookie dir.
func cacheRoot(bks []bookieFiles) (string, error) {
	root := os.Getenv(store.CacheDirEnv)
	if root == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("bookie index: no cache dir (set %s): %w", store.CacheDirEnv, err)
		}
		root = filepath.Join(uc, "ledgermedic")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	for _, bk := range bks {
		abs, _ := filepath.Abs(bk.dir)
		if root == abs || strings.HasPrefix(root, abs+string(filepath.Separator)) {
			return "", fmt.Errorf("bookie index: cache dir %s is inside bookie dir %s, which is never written; set %s elsewhere", root, bk.dir, store.CacheDirEnv)
		}
	}
	return filepath.Join(root, "bookie-index"), nil
}

// openBookieIndex opens the index of the dirs' current files, building it first
// when there is none.
func openBookieIndex(paths []string, opts store.Options) (*indexDB, []string, error) {
	bks := make([]bookieFiles, len(paths))
	for i, p := range paths {
		var err error
		if bks[i], err = findBookieFiles(p); err != nil {
			return nil, nil, err
		}
	}
	dirsKey, filesKey, err := fingerprint(bks)
	if err != nil {
		return nil, nil, err
	}
	root, err := cacheRoot(bks)
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(root, dirsKey, filesKey)
	var notes []string
	if _, err := os.Stat(dir); err == nil {
		idx, err := loadIndex(dir)
		if err == nil {
			return idx, append(notes, "bookie index reused: "+dir), nil
		}
		logf(opts, "bookie index %s unusable (%v); rebuilding\n", dir, err)
		if err := os.RemoveAll(dir); err != nil {
			return nil, nil, fmt.Errorf("bookie index: remove %s: %w", dir, err)
		}
	}
	start := time.Now()
	stats, err := buildIndex(bks, dir, opts)
	if err != nil {
		return nil, nil, err
	}
	idx, err := loadIndex(dir)
	if err != nil {
		return nil, nil, err
	}
	return idx, append(notes, fmt.Sprintf("bookie index built in %s (%d files, %d replicas): %s",
		time.Since(start).Round(time.Millisecond), stats.files, stats.replicas, dir)), nil
}

func logf(opts store.Options, format string, args ...any) {
	if opts.Logger != nil {
		fmt.Fprintf(opts.Logger, format, args...)
	}
}

func loadIndex(dir string) (*indexDB, error) {
	db, err := badgerdir.OpenDB(dir, true)
	if err != nil {
		return nil, fmt.Errorf("bookie index: %w", err)
	}
	idx := &indexDB{db: db, dir: dir}
	err = db.View(func(txn *badger.Txn) error {
		for _, p := range []byte{fileKeyPrefix, damageKeyPrefix} {
			err := badgerdir.Iterate(context.Background(), txn, badgerdir.ScanOptions([]byte{p}), nil, func(item *badger.Item) error {
				err := item.Value(func(v []byte) error {
					if p == fileKeyPrefix {
						var f indexFile
						idx.files = append(idx.files, f)
						return json.Unmarshal(v, &idx.files[len(idx.files)-1])
					}
					var d store.ReplicaFinding
					err := json.Unmarshal(v, &d)
					idx.damage = append(idx.damage, d)
					return err
				})
				if err != nil {
					return fmt.Errorf("key %x: %w", item.Key(), err)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("bookie index %s: %w", dir, err)
	}
	return idx, nil
}

type buildStats struct{ files, replicas int64 }

// indexBuilder writes one index.
type indexBuilder struct {
	db      *badger.DB
	wb      *badger.WriteBatch
	files   []indexFile
	damage  []store.ReplicaFinding
	bookies []bookieFiles
	stats   buildStats
}

// buildIndex scans every file into a new Badger database beside dir and renames
// it into place when complete, so a half-built index is never used.
func buildIndex(bks []bookieFiles, dir string, opts store.Options) (buildStats, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return buildStats{}, fmt.Errorf("bookie index: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".building-")
	if err != nil {
		return buildStats{}, fmt.Errorf("bookie index: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; a failed build leaves nothing
	db, err := badgerdir.OpenDB(tmp, false, func(o badger.Options) badger.Options { return o.WithSyncWrites(false) })
	if err != nil {
		return buildStats{}, fmt.Errorf("bookie index: %w", err)
	}
	b := &indexBuilder{db: db, bookies: bks}
	err = b.build(opts)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return b.stats, fmt.Errorf("bookie index: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return b.stats, nil // another process built the same index meanwhile
		}
		return b.stats, fmt.Errorf("bookie index: %w", err)
	}
	removeStale(filepath.Dir(dir), filepath.Base(dir))
	return b.stats, nil
}

// removeStale removes indexes of earlier versions of the same dirs' files.
func removeStale(parent, keep string) {
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if e.Name() != keep && !strings.Contains(e.Name(), ".building-") {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

func (b *indexBuilder) build(opts store.Options) error {
	for bi, bk := range b.bookies {
		logf(opts, "indexing bookie dir %s: %d entry logs, %d journals\n", bk.dir, len(bk.logs), len(bk.journals))
		b.wb = b.db.NewWriteBatch()
		for _, p := range bk.logs {
			if err := b.scanLog(bi, p); err != nil {
				return err
			}
		}
		if err := b.wb.Flush(); err != nil {
			return err
		}
		mark := b.lastMark(bi, bk)
		b.wb = b.db.NewWriteBatch()
		for _, p := range bk.journals {
			if err := b.scanJournal(bi, p, mark); err != nil {
				return err
			}
		}
		if err := b.wb.Flush(); err != nil {
			return err
		}
	}
	wb := b.db.NewWriteBatch()
	defer wb.Cancel()
	for i, f := range b.files {
		v, _ := json.Marshal(f)
		if err := wb.Set(binary.BigEndian.AppendUint32([]byte{fileKeyPrefix}, uint32(i)), v); err != nil {
			return err
		}
	}
	for i, d := range b.damage {
		v, _ := json.Marshal(d)
		if err := wb.Set(binary.BigEndian.AppendUint64([]byte{damageKeyPrefix}, uint64(i)), v); err != nil {
			return err
		}
	}
	return wb.Flush()
}

func (b *indexBuilder) addFile(bookie int, path, kind string) uint32 {
	b.files = append(b.files, indexFile{Bookie: bookie, Path: path, Kind: kind})
	b.stats.files++
	return uint32(len(b.files) - 1)
}

// problem records damage; a *bkdisk.FormatError names its file and offset.
func (b *indexBuilder) problem(kind string, bookie int, err error) error {
	var fe *bkdisk.FormatError
	if !errors.As(err, &fe) {
		return err // I/O errors end the build
	}
	b.damage = append(b.damage, store.ReplicaFinding{Kind: kind, LedgerID: -1, EntryID: -1, Bookie: b.bookies[bookie].dir,
		File: fe.File, Offset: fe.Offset, Detail: fe.Detail + ": " + fe.Err.Error()})
	return nil
}

func (b *indexBuilder) put(bookie int, lid, eid int64, loc location, data []byte) error {
	if lid < 0 || eid < 0 || len(data) > 1<<31 {
		return nil
	}
	loc.length = uint32(len(data))
	loc.hash = crc32.Checksum(data, crc32c.Table)
	if t := bkdisk.Detect(data, nil); t != "" {
		loc.det = uint8(slices.Index(detectCodes, t))
	}
	b.stats.replicas++
	return b.wb.Set(replicaKey(lid, eid, uint16(bookie)), loc.encode())
}

func (b *indexBuilder) scanLog(bookie int, path string) error {
	f, size, err := openSized(path)
	if err != nil {
		return err
	}
	defer f.Close()
	file := b.addFile(bookie, path, "log")
	res, err := bkdisk.ScanEntryLog(path, f, size, func(e bkdisk.LogEntry) error {
		return b.put(bookie, e.LedgerID, e.EntryID, location{file: file, offset: e.Offset}, e.Data)
	})
	for _, p := range res.Problems {
		_ = b.problem(store.FindingEntryLogDamaged, bookie, p)
	}
	if err != nil {
		return b.problem(store.FindingEntryLogDamaged, bookie, err)
	}
	return nil
}

// lastMark reads the bookie's lastMark; without one, every journal entry counts as
// not yet flushed (it is used when no entry log holds it).
func (b *indexBuilder) lastMark(bookie int, bk bookieFiles) bkdisk.LastMark {
	if bk.lastMark == "" {
		return bkdisk.LastMark{}
	}
	raw, err := os.ReadFile(bk.lastMark)
	if err == nil {
		var m bkdisk.LastMark
		if m, err = bkdisk.ParseLastMark(bk.lastMark, raw); err == nil {
			return m
		}
	}
	if b.problem(store.FindingLastMarkDamaged, bookie, err) != nil {
		b.damage = append(b.damage, store.ReplicaFinding{Kind: store.FindingLastMarkDamaged, LedgerID: -1, EntryID: -1,
			Bookie: bk.dir, File: bk.lastMark, Detail: err.Error()})
	}
	return bkdisk.LastMark{}
}

func (b *indexBuilder) scanJournal(bookie int, path string, mark bkdisk.LastMark) error {
	jid, _ := bkdisk.LogID(filepath.Base(path), ".txn")
	f, size, err := openSized(path)
	if err != nil {
		return err
	}
	defer f.Close()
	file := b.addFile(bookie, path, "journal")
	res, err := bkdisk.ScanJournal(path, f, size, func(r bkdisk.JournalRecord) error {
		if r.Kind != bkdisk.RecordEntry || mark.Before(jid, r.End()) {
			return nil
		}
		// An entry log's copy wins: the journal only fills what was not flushed.
		if b.inEntryLog(r.LedgerID, r.EntryID, bookie) {
			return nil
		}
		return b.put(bookie, r.LedgerID, r.EntryID, location{file: file, offset: r.Offset + 4, journal: true}, r.Data)
	})
	for _, p := range res.Problems {
		_ = b.problem(store.FindingJournalDamaged, bookie, p)
	}
	if err != nil {
		return b.problem(store.FindingJournalDamaged, bookie, err)
	}
	return nil
}

func (b *indexBuilder) inEntryLog(l, e int64, bookie int) bool {
	if l < 0 || e < 0 {
		return false
	}
	found := false
	_ = b.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(replicaKey(l, e, uint16(bookie)))
		found = err == nil
		return nil
	})
	return found
}

func openSized(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w: not a regular file", path, fs.ErrInvalid)
	}
	return f, st.Size(), nil
}
