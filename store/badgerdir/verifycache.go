package badgerdir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ledgermedic/ledgermedic/store"
)

// The verification cache remembers, per table file, that it verified clean, so a
// command does not re-read every table of an unchanged store. It lives outside the
// data dir ($LEDGERMEDIC_CACHE_DIR/verified, else os.UserCacheDir()/ledgermedic/
// verified), one small JSON file per data dir named by a hash of the dir's absolute
// path. A table is trusted from the cache only while everything that identifies its
// bytes is unchanged: device and inode, size, mtime and ctime (ns), and a hash of
// its last footerHashSize bytes (Badger's index, its checksum and the footer). Any
// write through the kernel changes ctime, which no user-space call can set back;
// the footer hash also catches an in-place rewrite of the index. What it cannot
// catch is bit rot inside a data block that changes no metadata: `check` and
// LEDGERMEDIC_VERIFY=full verify every table regardless (docs/reliability.md).
// Only clean results are cached: a damaged table is verified again every time.

const (
	// VerifyModeEnv set to "full" makes every open verify every table, ignoring the
	// cache (the cache is still refreshed with what verified clean).
	VerifyModeEnv = "LEDGERMEDIC_VERIFY"

	// verifyCacheVersion changes whenever what "verified" means changes, so a cache
	// written by an older verifier is ignored.
	verifyCacheVersion = 1
	footerHashSize     = 8 << 10
	// maxCacheFiles bounds the cache folder: the oldest files go first.
	maxCacheFiles = 256
)

// racyWindow: a table whose mtime or ctime is this recent when verification
// starts is verified but not cached. File systems keep timestamps in coarse ticks
// (a jiffy, or whole seconds), so a rewrite within the same tick as the verified
// version would leave them unchanged (git's "racily clean" problem).
var racyWindow = 2 * time.Second

// tableIdentity is what must be unchanged for a cached result to stand.
type tableIdentity struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	CtimeNs int64  `json:"ctime_ns"`
	Footer  string `json:"footer_sha256"` // of the last footerHashSize bytes
}

// cachedTable is one table that verified clean.
type cachedTable struct {
	tableIdentity
	Compression uint32 `json:"compression"` // the compression it verified with
}

// verifyCacheFile is the cache file of one data dir.
type verifyCacheFile struct {
	Version int    `json:"version"`
	Dir     string `json:"dir"` // absolute data dir path (a hash collision is ignored)
	// Tables by path relative to the data dir ("ledgers/000012.sst").
	Tables map[string]cachedTable `json:"tables"`
}

// verifyCache is the open cache of one data dir; path "" means no cache (it could
// not be placed, or it would be inside the data dir).
type verifyCache struct {
	path    string
	file    verifyCacheFile
	full    bool // verify everything, whatever the cache says
	changed bool
}

// verifyCacheRoot is where cache files go, or "" when there is none: the
// "verified" folder of the cache root the bookie indexes share (CacheDirEnv).
func verifyCacheRoot() string {
	if d := os.Getenv(store.CacheDirEnv); d != "" {
		return filepath.Join(d, "verified")
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "ledgermedic", "verified")
}

// fullVerifyRequested reports whether the environment asks to bypass the cache.
func fullVerifyRequested() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv(VerifyModeEnv)), "full")
}

// openVerifyCache loads the cache of dataDir. A missing, unreadable, corrupt or
// foreign cache file is an empty cache: everything is verified.
func openVerifyCache(dataDir string, full bool) *verifyCache {
	vc := &verifyCache{full: full || fullVerifyRequested()}
	vc.file = verifyCacheFile{Version: verifyCacheVersion, Tables: map[string]cachedTable{}}
	abs, err := canonicalPath(dataDir)
	root := verifyCacheRoot()
	if err != nil || root == "" {
		return vc
	}
	// Never write the data dir: a cache folder inside it is not used.
	if croot, err := canonicalPath(root); err != nil || within(croot, abs) {
		return vc
	}
	sum := sha256.Sum256([]byte(abs))
	vc.path = filepath.Join(root, hex.EncodeToString(sum[:16])+".json")
	vc.file.Dir = abs
	b, err := os.ReadFile(vc.path)
	if err != nil {
		return vc
	}
	var f verifyCacheFile
	if json.Unmarshal(b, &f) != nil || f.Version != verifyCacheVersion || f.Dir != abs || f.Tables == nil {
		return vc
	}
	vc.file = f
	return vc
}

// canonicalPath is p absolute with symbolic links resolved as far as they exist.
func canonicalPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	dir, rest := abs, ""
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		dir, rest = parent, filepath.Join(filepath.Base(dir), rest)
	}
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// identify reads what identifies the bytes of the table at path.
func identify(path string) (tableIdentity, error) {
	f, err := os.Open(path)
	if err != nil {
		return tableIdentity{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tableIdentity{}, err
	}
	// x/sys/unix names the times alike on every Unix (syscall's darwin Stat_t
	// calls them Mtimespec and Ctimespec).
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return tableIdentity{}, fmt.Errorf("%s: no inode information: %w", path, err)
	}
	id := tableIdentity{
		Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: fi.Size(),
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
	}
	off := max(0, id.Size-footerHashSize)
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, off, id.Size-off)); err != nil {
		return tableIdentity{}, err
	}
	id.Footer = hex.EncodeToString(h.Sum(nil))
	return id, nil
}

// lookup returns the cached clean result of check c, when the table at c.Path is
// still the one that verified and verified with a compression c allows.
func (vc *verifyCache) lookup(rel string, c tableCheck, id tableIdentity) (tableResult, bool) {
	if vc.full {
		return tableResult{}, false
	}
	e, ok := vc.file.Tables[rel]
	if !ok || e.tableIdentity != id || !slices.Contains(c.Compressions, e.Compression) {
		return tableResult{}, false
	}
	return tableResult{ID: c.ID, Stage: "done", Compression: e.Compression}, true
}

// record remembers a clean result when the table did not change while it was
// verified (before == after) and is not too recent to trust its timestamps.
// Damage drops the table's entry.
func (vc *verifyCache) record(rel string, r tableResult, before, after tableIdentity, started time.Time) {
	if r.Problem != "" || before != after || racy(before, started) {
		if _, ok := vc.file.Tables[rel]; ok {
			delete(vc.file.Tables, rel)
			vc.changed = true
		}
		return
	}
	e := cachedTable{tableIdentity: before, Compression: r.Compression}
	if vc.file.Tables[rel] != e {
		vc.file.Tables[rel] = e
		vc.changed = true
	}
}

func racy(id tableIdentity, started time.Time) bool {
	limit := started.Add(-racyWindow).UnixNano()
	return id.MtimeNs >= limit || id.CtimeNs >= limit
}

// forget drops the entries of db's tables that are not in keep (tables compacted
// away), so the file does not grow with the store's history.
func (vc *verifyCache) forget(db string, keep map[string]bool) {
	for rel := range vc.file.Tables {
		if strings.HasPrefix(rel, db+string(filepath.Separator)) && !keep[rel] {
			delete(vc.file.Tables, rel)
			vc.changed = true
		}
	}
}

// save writes the cache atomically (a temp file renamed over the old one). It is
// a cache: failing to write it costs time on the next command, nothing else.
func (vc *verifyCache) save() {
	if vc.path == "" || !vc.changed {
		return
	}
	dir := filepath.Dir(vc.path)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	b, err := json.Marshal(vc.file)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), vc.path) != nil {
		_ = os.Remove(tmp.Name())
		return
	}
	vc.changed = false
	pruneVerifyCache(dir, vc.path)
}

// pruneVerifyCache keeps the newest maxCacheFiles cache files (one per data dir
// ever opened) and removes temp files a killed run left.
func pruneVerifyCache(dir, keep string) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) <= maxCacheFiles {
		return
	}
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") && time.Since(info.ModTime()) > time.Hour {
			_ = os.Remove(p)
			continue
		}
		if strings.HasSuffix(e.Name(), ".json") && p != keep {
			files = append(files, file{p, info.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	for _, f := range files[min(len(files), maxCacheFiles-1):] {
		_ = os.Remove(f.path)
	}
}
