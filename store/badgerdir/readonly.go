package badgerdir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"

	"github.com/ledgermedic/ledgermedic/formats/badgermanifest"
	"github.com/ledgermedic/ledgermedic/internal/scratch"
	"github.com/ledgermedic/ledgermedic/store"
)

// How a read-only open cannot change the data dir, whatever Badger does:
//
// Badger never opens the data dir's own folders. Each read-only session opens a
// sandbox folder in a temp dir that holds
//   - a MANIFEST ledgermedic wrote, listing exactly the tables that verified
//     (so Badger has no table to delete, and a damaged MANIFEST is not trusted);
//   - symbolic links to those tables (*.sst) and to the value logs (*.vlog): a
//     read-only Badger opens them O_RDONLY, and removing or renaming a link leaves
//     the original alone. Symlinks, not hard links: link() would change the
//     originals' link count and ctime, and works within one file system only;
//   - copies of the memtable logs (*.mem), the only files a recovery rewrites;
//   - nothing else: LOCK, DISCARD and (for unencrypted stores) KEYREGISTRY are
//     made fresh by Badger in the sandbox.
//
// Creating the links costs a few syscalls per file, whatever the store's size
// (docs/reliability.md). When Badger must recover a log first (an unclean shutdown),
// the session copies every file instead and lets Badger recover the copy (sandbox.go).

// dbPlan is what opening one database found before Badger sees it.
type dbPlan struct {
	name, src string
	manifest  *badgermanifest.State
	tables    map[uint64]badgermanifest.Table // the tables the sandbox lists: present and verified
	vlogs     []string                        // non-empty value logs
	mems      []string                        // non-empty memtable logs
	zeroLogs  []string                        // zero-length .mem/.vlog files: left by a kill, hold nothing
	// unfinished are tables the MANIFEST does not list that an interrupted flush or
	// compaction left (a writable Badger open deletes them).
	unfinished []uint64
	encrypted  bool
	damage     []Damage
	notes      []string
}

// analyzeDB replays the MANIFEST, lists the files and verifies every table (in a
// child process, or from vc when it verified clean before) of the database name of
// the data dir at dataDir.
func analyzeDB(dataDir, name string, vc *verifyCache) (*dbPlan, error) {
	src := filepath.Join(dataDir, name)
	p := &dbPlan{name: name, src: src, tables: map[uint64]badgermanifest.Table{}}
	ents, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	files := map[uint64]string{} // table id -> file name
	memData := false
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(src, n), err)
		}
		switch {
		case strings.HasSuffix(n, ".sst"):
			if id, ok := table.ParseFileID(n); ok {
				files[id] = n
			}
		case strings.HasSuffix(n, ".vlog"), strings.HasSuffix(n, ".mem"):
			switch {
			case info.Size() == 0:
				p.zeroLogs = append(p.zeroLogs, n)
			case strings.HasSuffix(n, ".vlog"):
				p.vlogs = append(p.vlogs, n)
			default:
				p.mems = append(p.mems, n)
				memData = true
			}
		}
	}
	ms, err := badgermanifest.Read(filepath.Join(src, badgermanifest.FileName))
	if errors.Is(err, fs.ErrNotExist) && len(files) > 0 {
		ms, err = badgermanifest.Parse(nil), nil
		ms.Problem = "missing"
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", filepath.Join(src, badgermanifest.FileName), store.ErrNotDataDir, err)
	}
	p.manifest = ms
	rel := func(f string) string { return filepath.Join(name, f) }

	// Which tables to verify: every listed one, and every unlisted one no record deleted.
	usual := uint32(1) // Snappy, what Create writes
	for _, t := range ms.Tables {
		usual = t.Compression
		break
	}
	var checks []tableCheck
	level := map[uint64]badgermanifest.Table{}
	var unlisted []uint64
	for id, t := range ms.Tables {
		f, ok := files[id]
		if !ok {
			p.damage = append(p.damage, Damage{
				DB: name, File: rel(table.IDToFilename(id)), TableID: id,
				Problem: "the MANIFEST lists this table but the file is missing",
				Action:  "left out; the rest of the store was read",
			})
			continue
		}
		checks = append(checks, tableCheck{ID: id, Path: filepath.Join(src, f), Compressions: []uint32{t.Compression}})
		level[id] = t
	}
	for id, f := range files {
		if _, ok := ms.Tables[id]; ok || ms.Deleted[id] {
			continue // listed, or compacted away and not yet removed: Badger removes it
		}
		unlisted = append(unlisted, id)
		comps := []uint32{usual}
		for _, c := range []uint32{1, 0, 2} {
			if c != usual {
				comps = append(comps, c)
			}
		}
		checks = append(checks, tableCheck{ID: id, Path: filepath.Join(src, f), Compressions: comps})
		level[id] = badgermanifest.Table{Level: 0}
	}
	slices.Sort(unlisted)
	slices.SortFunc(checks, func(a, b tableCheck) int { return int(a.ID) - int(b.ID) })

	results, err := verifyWithCache(name, checks, vc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	// A table the MANIFEST does not list yet, newer than every table it does, is the
	// output of a flush or compaction a kill interrupted: its keys are still in the
	// write-ahead log or in the tables it was built from. Unreadable, it is a kill
	// leftover (Badger deletes it), not lost data.
	leftover := func(id uint64) bool {
		_, listed := ms.Tables[id]
		return !listed && id > ms.MaxID && (memData || len(ms.Tables) > 0)
	}
	for _, c := range checks {
		r := results[c.ID]
		if r.Problem != "" && leftover(c.ID) {
			p.notes = append(p.notes, fmt.Sprintf("unclean shutdown: %s is not in the MANIFEST and cannot be read (%s): a flush or compaction was killed while writing it; its keys are still in the log or the tables it was made from; left out",
				filepath.Join(p.src, table.IDToFilename(c.ID)), r.Problem))
			unlisted = slices.DeleteFunc(unlisted, func(id uint64) bool { return id == c.ID })
			continue
		}
		if r.Problem != "" {
			p.damage = append(p.damage, Damage{
				DB: name, File: rel(table.IDToFilename(c.ID)), TableID: c.ID, Problem: r.Problem,
				RangeKnown: r.RangeKnown, Smallest: r.Smallest, Biggest: r.Biggest, Keys: r.Keys,
				Action: "left out; the rest of the store was read",
			})
			continue
		}
		t := level[c.ID]
		t.Compression = r.Compression
		p.tables[c.ID] = t
		if t.KeyID != 0 {
			p.encrypted = true
		}
	}

	p.checkValueLogs()

	// A MANIFEST that does not describe the tables. Tables it does not list are
	// read too (at level 0, where ranges may overlap): a table left by an
	// interrupted flush or compaction holds keys also held elsewhere at the same
	// versions, so reading it changes nothing; a table a damaged MANIFEST lost holds
	// data that is otherwise gone.
	interrupted := len(unlisted) == 0 || (unlisted[0] > ms.MaxID && (memData || len(ms.Tables) > 0))
	cutOnly := ms.Problem == "" || (ms.Cut && ms.Header != nil)
	switch {
	case cutOnly && interrupted:
		if ms.Problem != "" {
			p.notes = append(p.notes, fmt.Sprintf("unclean shutdown: %s has a half-written record (%s), left by an interrupted write; read the records before it",
				filepath.Join(p.src, badgermanifest.FileName), ms.Problem))
		}
		for _, id := range unlisted {
			if _, ok := p.tables[id]; ok {
				p.unfinished = append(p.unfinished, id)
				p.notes = append(p.notes, fmt.Sprintf("unclean shutdown: %s is not in the MANIFEST yet (an interrupted flush or compaction); read it too",
					filepath.Join(p.src, table.IDToFilename(id))))
			}
		}
	default:
		problem := ms.Problem
		if problem == "" {
			problem = fmt.Sprintf("does not list %s", tableNames(unlisted))
		} else if len(unlisted) > 0 {
			problem += fmt.Sprintf("; it does not list %s", tableNames(unlisted))
		}
		p.damage = append(p.damage, Damage{
			DB: name, File: rel(badgermanifest.FileName), Problem: problem,
			Action: "read every table that verified, from the directory; keys deleted before the damage may show again",
		})
	}
	for _, z := range p.zeroLogs {
		p.notes = append(p.notes, fmt.Sprintf("unclean shutdown: %s is empty (a run was killed while Badger opened or closed it); it holds nothing and was left out",
			filepath.Join(p.src, z)))
	}
	return p, nil
}

// verifyWithCache verifies the tables of checks that vc does not know as clean and
// unchanged, and records in vc what verified clean.
func verifyWithCache(db string, checks []tableCheck, vc *verifyCache) (map[uint64]tableResult, error) {
	started := time.Now()
	results := map[uint64]tableResult{}
	before := map[uint64]tableIdentity{}
	keep := map[string]bool{}
	var todo []tableCheck
	for _, c := range checks {
		rel := filepath.Join(db, filepath.Base(c.Path))
		keep[rel] = true
		id, err := identify(c.Path)
		if err != nil {
			todo = append(todo, c) // the child says what is wrong with it
			continue
		}
		before[c.ID] = id
		if r, ok := vc.lookup(rel, c, id); ok {
			results[c.ID] = r
			continue
		}
		todo = append(todo, c)
	}
	if len(todo) > 0 {
		verified, err := verifyTables(todo)
		if err != nil {
			return nil, err
		}
		for _, c := range todo {
			r := verified[c.ID]
			results[c.ID] = r
			id, ok := before[c.ID]
			after, err := identify(c.Path)
			if !ok || err != nil {
				after = tableIdentity{Size: -1} // not cacheable
			}
			vc.record(filepath.Join(db, filepath.Base(c.Path)), r, id, after, started)
		}
	}
	vc.forget(db, keep)
	vc.save()
	return results, nil
}

// vlogHeaderSize is a value log's header: the data key id (u64 BE) and a 12-byte IV.
const vlogHeaderSize = 20

// checkValueLogs leaves out value logs whose header is damaged: Badger fails the
// whole open on them ("Invalid datakey id"). A store ledgermedic reads is never
// encrypted, so a header naming a data key is damage. A log holding only its header
// holds no values, and leaving it out loses nothing.
func (p *dbPlan) checkValueLogs() {
	kept := p.vlogs[:0]
	for _, n := range p.vlogs {
		problem := ""
		path := filepath.Join(p.src, n)
		b := make([]byte, vlogHeaderSize)
		f, err := os.Open(path)
		if err == nil {
			var got int
			got, err = io.ReadFull(f, b)
			f.Close()
			switch {
			case err != nil && got < vlogHeaderSize:
				problem = fmt.Sprintf("%d bytes long: shorter than a value log header (%d bytes)", got, vlogHeaderSize)
			case binary.BigEndian.Uint64(b) != 0 && !p.encrypted:
				problem = fmt.Sprintf("header names data key %d but the store is not encrypted", binary.BigEndian.Uint64(b))
			}
		} else {
			problem = err.Error()
		}
		if problem == "" {
			kept = append(kept, n)
			continue
		}
		action := "left out; values stored in it read as lost"
		if fi, err := os.Stat(path); err == nil && fi.Size() <= vlogHeaderSize {
			action = "left out (it held no values)"
		}
		p.damage = append(p.damage, Damage{DB: p.name, File: filepath.Join(p.name, n), Problem: problem, Action: action})
	}
	p.vlogs = kept
}

func tableNames(ids []uint64) string {
	var s []string
	for _, id := range ids {
		s = append(s, table.IDToFilename(id))
	}
	return strings.Join(s, ", ")
}

// buildSandbox makes dst (new) a database Badger can open: links to the
// verified tables and value logs, or copies when copyAll (a session Badger opens
// writable), copies of the memtable logs, and a MANIFEST listing the tables.
func (p *dbPlan) buildSandbox(dst string, copyAll bool) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	abs, err := filepath.Abs(p.src)
	if err != nil {
		return err
	}
	var linked []string
	for id := range p.tables {
		linked = append(linked, table.IDToFilename(id))
	}
	linked = append(linked, p.vlogs...)
	for _, f := range linked {
		if copyAll {
			err = scratch.CopyFileSparse(filepath.Join(abs, f), filepath.Join(dst, f))
		} else {
			err = os.Symlink(filepath.Join(abs, f), filepath.Join(dst, f))
		}
		if err != nil {
			return err
		}
	}
	copied := slices.Clone(p.mems)
	if p.encrypted {
		copied = append(copied, badger.KeyRegistryFileName)
	}
	for _, f := range copied {
		if err := scratch.CopyFileSparse(filepath.Join(abs, f), filepath.Join(dst, f)); err != nil {
			return err
		}
	}
	return badgermanifest.Write(filepath.Join(dst, badgermanifest.FileName), p.manifest.Header, p.tables)
}

// readOnlySession is what a read-only DataDir holds besides its databases.
type readOnlySession struct {
	root    string   // the link sandbox, removed at Close
	unlocks []func() // shared locks on the originals, held for the session
}

func (d *Dir) closeReadOnly() error {
	if d.ro == nil {
		return nil
	}
	var err error
	if d.ro.root != "" {
		err = os.RemoveAll(d.ro.root)
	}
	for _, u := range d.ro.unlocks {
		u()
	}
	d.ro = nil
	return err
}

// openVerified is the Badger open path of Open: analyze (verify) the database,
// then open it through a sandbox (read-only) or after recovering what a kill
// left (writable).
func (d *Dir) openVerified(name string, opts store.Options) (*badger.DB, error) {
	src := filepath.Join(d.Path, name)
	if !opts.ReadOnly {
		return d.openWritableVerified(name)
	}
	if d.ro == nil {
		d.ro = &readOnlySession{}
	}
	// Hold Badger's read-only lock on the original for the whole session: Badger
	// itself only locks the sandbox, and no writer may change the files meanwhile.
	unlock, err := lockShared(src)
	if err != nil {
		return nil, err
	}
	d.ro.unlocks = append(d.ro.unlocks, unlock)
	p, err := analyzeDB(d.Path, name, openVerifyCache(d.Path, opts.FullVerify))
	if err != nil {
		return nil, err
	}
	d.Damage = append(d.Damage, p.damage...)
	for _, dm := range p.damage {
		d.Notes = append(d.Notes, "store damaged: "+dm.String())
	}
	if d.ro.root == "" {
		var release func()
		if d.ro.root, release, err = scratch.NewTempDir(opts.SandboxDir, "ledgermedic-ro-"); err != nil {
			return nil, fmt.Errorf("%s: make a read-only sandbox: %w", src, err)
		}
		d.ro.unlocks = append(d.ro.unlocks, release) // after the removal at close
	}
	dst := filepath.Join(d.ro.root, name)
	if err := p.buildSandbox(dst, false); err != nil {
		return nil, fmt.Errorf("%s: make a read-only sandbox in %s: %w", src, dst, err)
	}
	db, err := openBounded([]string{src, dst}, func() (*badger.DB, error) { return OpenDB(dst, true, verifiedReads) })
	if err == nil {
		d.Notes = append(d.Notes, p.notes...)
		return db, nil
	}
	if !errors.Is(err, store.ErrUncleanShutdown) {
		return nil, cannotRead(src, err)
	}
	if opts.NoSandbox {
		return nil, fmt.Errorf("%s: %w", src, store.ErrUncleanShutdown)
	}
	d.Notes = append(d.Notes, p.notes...)
	return d.openSandboxed(p, opts)
}

// verifiedReads makes Badger check the CRC of every value it reads from a value
// log, so a damaged value is an error at its key instead of other bytes.
func verifiedReads(o badger.Options) badger.Options { return o.WithVerifyValueChecksum(true) }

// cannotRead is the error of a database that verified but that Badger still cannot
// open: exit 3, with what is wrong and what to do.
func cannotRead(src string, err error) error {
	return fmt.Errorf("%w; %s cannot be read even around the damaged files ledgermedic found: "+
		"restore it from a backup or copy it again from the cluster, then retry", err, src)
}

// openWritableVerified opens the original writable, after refusing a damaged
// store and recovering the states a kill leaves that Badger cannot recover itself.
func (d *Dir) openWritableVerified(name string) (*badger.DB, error) {
	src := filepath.Join(d.Path, name)
	// Keep writers out while the files are read; Badger takes its own lock after.
	unlock, err := lockExclusive(src)
	if err != nil {
		return nil, err
	}
	// A writing command verifies every table: it must not write on top of a block
	// that rotted since it was cached (it still refreshes the cache for the views).
	p, err := analyzeDB(d.Path, name, openVerifyCache(d.Path, true))
	if err == nil && len(p.damage) > 0 {
		var lines []string
		for _, dm := range p.damage {
			lines = append(lines, dm.String())
		}
		err = fmt.Errorf("%s: %w: %s; nothing was written: run `ledgermedic check` (read-only) to see what is lost, "+
			"and restore the damaged files from a backup before writing", src, ErrStoreDamaged, strings.Join(lines, "; "))
	}
	if err == nil {
		err = d.recoverKilled(p)
	}
	unlock()
	if err != nil {
		return nil, err
	}
	// Badger tries its lock once. The lock just released can still be held for a
	// moment by a child process forked meanwhile (a flock is shared until exec
	// closes the copy), so retry briefly before calling the dir busy.
	deadline := time.Now().Add(lockWait)
	for {
		db, err := openBounded([]string{src}, func() (*badger.DB, error) {
			db, err := OpenDB(src, false, sessionOptions, verifiedReads)
			if err == nil && name == MetadataDirName {
				// MaxVersion reads every table's index: bounded as the open is.
				d.sessions = append(d.sessions, session{db: db, since: db.MaxVersion()})
			}
			return db, err
		})
		if err == nil || !errors.Is(err, store.ErrLocked) || time.Now().After(deadline) {
			return db, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recoverKilled removes the empty logs a kill leaves, which Badger fails to open
// ("Create a new file"), after journaling what it removes in
// <data-dir>/journal/store-recovery-<time>.log.
func (d *Dir) recoverKilled(p *dbPlan) error {
	if len(p.zeroLogs) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s store recovery of %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.src)
	for _, z := range p.zeroLogs {
		fmt.Fprintf(&b, "remove %s: zero-length log left by a killed run; it held no data\n", filepath.Join(p.src, z))
	}
	if err := journalStoreRecovery(d.Path, b.String()); err != nil {
		return err
	}
	for _, z := range p.zeroLogs {
		if err := os.Remove(filepath.Join(p.src, z)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("recover %s: %w", filepath.Join(p.src, z), err)
		}
	}
	d.Notes = append(d.Notes, strings.TrimSpace(b.String()))
	return syncDirPath(p.src)
}

// journalStoreRecovery writes text durably to a new file in the data dir's journal
// folder before the recovery changes anything.
func journalStoreRecovery(dataDir, text string) error {
	dir := filepath.Join(dataDir, "journal")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("journal store recovery: %w", err)
	}
	name := fmt.Sprintf("store-recovery-%s.log", time.Now().UTC().Format("20060102T150405.000000000Z"))
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("journal store recovery: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("journal store recovery: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("journal store recovery: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("journal store recovery: %w", err)
	}
	return syncDirPath(dir)
}

func syncDirPath(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
