// Package torture damages copies of a data dir and kills writing commands, and
// checks that the real ledgermedic binary never panics, never changes a file on a
// read-only command, never reads a damaged store silently, and recovers from every
// kill. `go test` runs a bounded campaign; -torture.full runs the one whose figures
// are in docs/reliability.md.
package torture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/testutil"
)

var (
	full   = flag.Bool("torture.full", false, "run the full campaign (>= 300 damaged copies, >= 100 kill trials)")
	copies = flag.Int("torture.copies", 0, "damaged copies (0: 24, or 325 with -torture.full)")
	kills  = flag.Int("torture.kills", 0, "kill -9 trials (0: 4, or 120 with -torture.full)")
	seed   = flag.Uint64("torture.seed", 1, "seed of the damage and kill points")
	out    = flag.String("torture.report", "", "write the campaign's figures as JSON to this file")
)

// binary is the ledgermedic binary under test, built once.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "ledgermedic-torture-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "ledgermedic")
	build := exec.Command("go", "build", "-o", binary, "../..")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		binary = ""
	}
	code := m.Run()
	os.RemoveAll(dir)
	if worldDir != "" {
		os.RemoveAll(worldDir)
	}
	os.Exit(code)
}

// result of one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

func run(t testing.TB, dir string, args ...string) result {
	t.Helper()
	if binary == "" {
		t.Fatal("the ledgermedic binary did not build")
	}
	cmd := exec.Command(binary, append([]string{"-d", dir}, args...)...)
	cmd.Env = cleanEnv()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	// Paths and timings differ from run to run; the rest must not.
	stdout := wallTime.ReplaceAllString(strings.ReplaceAll(o.String(), dir, "DIR"), `"elapsed_us": 0`)
	return result{stdout, e.String(), code}
}

// cleanEnv is the test's environment without the variables ledgermedic reads
// for its global flags, so only the arguments given count.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEDGERMEDIC_") {
			env = append(env, kv)
		}
	}
	return env
}

var wallTime = regexp.MustCompile(`"elapsed_us": \d+`) // index find's search time

// world is the prepared data dirs every test copies from.
type world struct {
	caps       string // schema capture of the healthy cluster
	preRepair  string // lost schema ledgers: input of schema repair --apply
	preIndex   string // repaired: input of index backfill --apply
	base       string // repaired and back-filled: several tables per store
	repairRef  testutil.Snapshot
	indexRef   testutil.Snapshot
	repairCode int
	indexCode  int
}

var (
	worldOnce sync.Once
	theWorld  *world
	worldErr  error
	worldDir  string
)

func setup(t *testing.T) *world {
	t.Helper()
	worldOnce.Do(func() {
		worldDir, worldErr = os.MkdirTemp("", "ledgermedic-torture-")
		if worldErr != nil {
			return
		}
		w := &world{
			caps: filepath.Join(worldDir, "caps.jsonl"), preRepair: filepath.Join(worldDir, "pre-repair"),
			preIndex: filepath.Join(worldDir, "pre-index"), base: filepath.Join(worldDir, "base"),
		}
		healthy := filepath.Join(worldDir, "healthy")
		steps := [][]string{
			{"-d", "", "fixtures", "generate", "--out", healthy, "--seed", "7"},
			{"-d", healthy, "schema", "capture", "--out", w.caps},
			{"-d", "", "fixtures", "generate", "--out", w.preRepair, "--seed", "7", "--lose-schema-ledgers", "2"},
		}
		for _, s := range steps {
			if o, err := exec.Command(binary, s...).CombinedOutput(); err != nil {
				worldErr = fmt.Errorf("%v: %v: %s", s, err, o)
				return
			}
		}
		testutil.CopyDir(t, w.preRepair, w.preIndex)
		r := run(t, w.preIndex, repairArgs(w)...)
		w.repairCode = r.code
		w.repairRef = testutil.Dump(t, w.preIndex)
		testutil.CopyDir(t, w.preIndex, w.base)
		r = run(t, w.base, backfillArgs...)
		w.indexCode = r.code
		w.indexRef = testutil.Dump(t, w.base)
		theWorld = w
	})
	if worldErr != nil || theWorld == nil {
		t.Fatalf("prepare data dirs: %v", worldErr)
	}
	return theWorld
}

func repairArgs(w *world) []string {
	return []string{"schema", "repair", "--from", w.caps, "--apply"}
}

var backfillArgs = []string{"index", "backfill", "--apply"}

// readOnly are the read-only commands run on every copy (with --json).
var readOnly = [][]string{
	{"check"},
	{"check", "--skip-message-scan"},
	{"inspect", "topics"},
	{"inspect", "ledgers", "--topic", "persistent://public/default/events"},
	{"inspect", "schemas"},
	{"inspect", "schema-usage"},
	{"inspect", "entries", "--ledger", "13"},
	{"inspect", "node", "/managed-ledgers/public/default/persistent/events"},
	{"index", "find", "--topic", "persistent://public/default/events", "--offset", "75"},
}

func jsonArgs(args []string) []string { return append([]string{"--json"}, args...) }

// Damage kinds.
var kinds = []string{"bitflip", "rand512", "truncate", "zero4k", "delete"}

// damage applies kind to path, choosing where with rng.
func damage(path, kind string, rng *rand.Rand) (string, error) {
	if kind == "delete" {
		return "deleted", os.Remove(path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if len(b) == 0 {
		return "empty file, unchanged", nil
	}
	var what string
	switch kind {
	case "bitflip":
		off, bit := rng.IntN(len(b)), rng.IntN(8)
		b[off] ^= 1 << bit
		what = fmt.Sprintf("bit %d of byte %d flipped", bit, off)
	case "rand512":
		off := rng.IntN(len(b))
		n := min(512, len(b)-off)
		for i := range n {
			b[off+i] = byte(rng.Uint32())
		}
		what = fmt.Sprintf("%d random bytes at %d", n, off)
	case "truncate":
		n := rng.IntN(len(b))
		what = fmt.Sprintf("cut to %d of %d bytes", n, len(b))
		b = b[:n]
	case "zero4k":
		off := rng.IntN((len(b)+4095)/4096) * 4096
		clear(b[off:min(off+4096, len(b))])
		what = fmt.Sprintf("4 KiB zeroed at %d", off)
	}
	return what, os.WriteFile(path, b, 0o600)
}

// storeFiles lists the files of both databases of dir, relative to it.
func storeFiles(t testing.TB, dir string) []string {
	var out []string
	for _, db := range []string{"metadata", "ledgers"} {
		ents, err := os.ReadDir(filepath.Join(dir, db))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Type().IsRegular() && e.Name() != "LOCK" {
				out = append(out, filepath.Join(db, e.Name()))
			}
		}
	}
	return out
}

// Figures of a campaign, for docs/reliability.md.
type Figures struct {
	Copies          int            `json:"copies"`
	ByKind          map[string]int `json:"by_kind"`
	Files           int            `json:"files"`
	Runs            int            `json:"runs"`
	Panics          int            `json:"panics"`
	BadExitCodes    int            `json:"bad_exit_codes"`
	FilesChanged    int            `json:"copies_with_files_changed"`
	SilentMisreads  int            `json:"silent_misreads"`
	SameAsBase      int            `json:"copies_same_as_base"`
	DamageReported  int            `json:"copies_with_store_damaged"`
	CouldNotOpen    int            `json:"copies_exit_3"`
	KillTrials      int            `json:"kill_trials"`
	KilledUnclean   int            `json:"kills_leaving_unclean_state"`
	KillROFailures  int            `json:"kills_read_only_failures"`
	KillRerunFailed int            `json:"kills_rerun_failed"`
	KillStateDiffer int            `json:"kills_end_state_differs"`
	Seconds         float64        `json:"seconds"`
}

var (
	figMu sync.Mutex
	figs  = Figures{ByKind: map[string]int{}}
)

func TestDamagedCopies(t *testing.T) {
	w := setup(t)
	n := *copies
	if n == 0 {
		n = 24
		if *full {
			n = 325
		}
	}
	start := time.Now()
	base := map[string]result{}
	for _, args := range readOnly {
		r := run(t, w.base, jsonArgs(args)...)
		if r.code != 0 && r.code != 1 {
			t.Fatalf("base %v: exit %d: %s", args, r.code, r.stderr)
		}
		base[strings.Join(args, " ")] = r
	}
	files := storeFiles(t, w.base)
	figMu.Lock()
	figs.Files = len(files)
	figMu.Unlock()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				// Every file meets every kind within the first files*kinds copies.
				file := files[i%len(files)]
				kind := kinds[(i+i/len(files))%len(kinds)]
				damagedCopy(t, w, base, i, file, kind)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	figMu.Lock()
	figs.Seconds += time.Since(start).Seconds()
	t.Logf("damage figures: %+v", figs)
	figMu.Unlock()
	writeFigures(t)
}

func damagedCopy(t *testing.T, w *world, base map[string]result, i int, file, kind string) {
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("copy-%03d", i))
	testutil.CopyDir(t, w.base, dir)
	rng := rand.New(rand.NewPCG(*seed, uint64(i)))
	what, err := damage(filepath.Join(dir, file), kind, rng)
	if err != nil {
		t.Fatalf("damage %s: %v", file, err)
	}
	label := fmt.Sprintf("copy %d (%s %s: %s)", i, kind, file, what)
	before := hashTree(t, dir)
	var f Figures
	f.Copies = 1
	same, reported, exit3 := true, false, false
	for _, args := range readOnly {
		key := strings.Join(args, " ")
		r := run(t, dir, jsonArgs(args)...)
		f.Runs++
		if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
			f.Panics++
			t.Errorf("%s: %s panicked: %s", label, key, r.stderr)
		}
		if r.code != 0 && r.code != 1 && r.code != 3 {
			f.BadExitCodes++
			t.Errorf("%s: %s: exit %d: %s", label, key, r.code, r.stderr)
		}
		damaged := strings.Contains(r.stderr, "store damaged:")
		if strings.HasPrefix(key, "check") && r.code != 3 {
			damaged = damaged && strings.Contains(r.stdout, `"kind": "store-damaged"`)
		}
		reported = reported || damaged
		exit3 = exit3 || r.code == 3
		b := base[key]
		if r.code == b.code && r.stdout == b.stdout {
			continue
		}
		same = false
		if r.code != 3 && !damaged {
			f.SilentMisreads++
			t.Errorf("%s: %s differs from the undamaged base (exit %d, base %d) without a store-damaged finding or exit 3:\n%s\nstderr: %s",
				label, key, r.code, b.code, firstDiff(b.stdout, r.stdout), r.stderr)
		}
	}
	if d := testutil.TreeDiff(before, hashTree(t, dir)); len(d) > 0 {
		f.FilesChanged++
		t.Errorf("%s: read-only commands changed the copy: %v", label, d)
	}
	if same {
		f.SameAsBase++
	}
	if reported {
		f.DamageReported++
	}
	if exit3 {
		f.CouldNotOpen++
	}
	figMu.Lock()
	defer figMu.Unlock()
	figs.ByKind[kind]++
	addFigures(&figs, f)
}

func addFigures(dst *Figures, f Figures) {
	dst.Copies += f.Copies
	dst.Runs += f.Runs
	dst.Panics += f.Panics
	dst.BadExitCodes += f.BadExitCodes
	dst.FilesChanged += f.FilesChanged
	dst.SilentMisreads += f.SilentMisreads
	dst.SameAsBase += f.SameAsBase
	dst.DamageReported += f.DamageReported
	dst.CouldNotOpen += f.CouldNotOpen
}

// firstDiff shows where two outputs part.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: base %q, copy %q", i+1, x, y)
		}
	}
	return "(same text)"
}

// TestKillWritingCommands kills schema repair --apply and index backfill --apply
// at random points with SIGKILL, then checks every read-only command, the first
// re-run and the end state against an uninterrupted run.
func TestKillWritingCommands(t *testing.T) {
	w := setup(t)
	n := *kills
	if n == 0 {
		n = 4
		if *full {
			n = 120
		}
	}
	start := time.Now()
	type writer struct {
		name string
		from string
		args []string
		ref  testutil.Snapshot
		code int
		dur  time.Duration
	}
	writers := []*writer{
		{name: "schema repair", from: w.preRepair, args: repairArgs(w), ref: w.repairRef, code: w.repairCode},
		{name: "index backfill", from: w.preIndex, args: backfillArgs, ref: w.indexRef, code: w.indexCode},
	}
	for _, wr := range writers {
		dir := filepath.Join(t.TempDir(), "timing")
		testutil.CopyDir(t, wr.from, dir)
		t0 := time.Now()
		run(t, dir, wr.args...)
		wr.dur = time.Since(t0)
	}
	rng := rand.New(rand.NewPCG(*seed, 1<<32))
	work := make(chan int)
	var wg sync.WaitGroup
	delays := make([]time.Duration, n)
	for i := range n {
		delays[i] = time.Duration(rng.Int64N(int64(writers[i%len(writers)].dur) * 6 / 5))
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				wr := writers[i%len(writers)]
				killTrial(t, i, wr.name, wr.from, wr.args, wr.ref, wr.code, delays[i])
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	figMu.Lock()
	figs.Seconds += time.Since(start).Seconds()
	t.Logf("kill figures: %+v", figs)
	figMu.Unlock()
	writeFigures(t)
}

func killTrial(t *testing.T, i int, name, from string, args []string, ref testutil.Snapshot, wantCode int, delay time.Duration) {
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("kill-%03d", i))
	testutil.CopyDir(t, from, dir)
	label := fmt.Sprintf("kill %d (%s after %v)", i, name, delay)
	cmd := exec.Command(binary, append([]string{"-d", dir}, args...)...)
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	var f Figures
	unclean := hasUncleanState(dir)
	before := hashTree(t, dir)
	for _, ro := range readOnly {
		r := run(t, dir, jsonArgs(ro)...)
		if r.code != 0 && r.code != 1 || strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
			f.KillROFailures++
			t.Errorf("%s: read-only %v after the kill: exit %d: %s", label, ro, r.code, r.stderr)
		} else if unclean && !strings.Contains(r.stderr, "unclean shutdown") {
			f.KillROFailures++
			t.Errorf("%s: read-only %v read an unclean dir without saying so: %s", label, ro, r.stderr)
		}
	}
	if d := testutil.TreeDiff(before, hashTree(t, dir)); len(d) > 0 {
		f.FilesChanged++
		t.Errorf("%s: read-only commands changed the dir: %v", label, d)
	}
	r := run(t, dir, args...)
	if r.code != wantCode || strings.Contains(r.stderr, "panic:") {
		f.KillRerunFailed++
		t.Errorf("%s: first re-run: exit %d (uninterrupted run: %d): %s", label, r.code, wantCode, r.stderr)
	} else if d := normalize(t, ref).Diff(normalize(t, testutil.Dump(t, dir))); len(d) > 0 {
		f.KillStateDiffer++
		t.Errorf("%s: end state differs from an uninterrupted run: %v", label, d[:min(len(d), 10)])
	}
	figMu.Lock()
	defer figMu.Unlock()
	figs.KillTrials++
	if unclean {
		figs.KilledUnclean++
	}
	figs.KillROFailures += f.KillROFailures
	figs.KillRerunFailed += f.KillRerunFailed
	figs.KillStateDiffer += f.KillStateDiffer
	figs.FilesChanged += f.FilesChanged
}

// normalize clears what differs between any two runs: the creation time a repair
// stamps on the ledger metadata it writes.
func normalize(t *testing.T, s testutil.Snapshot) testutil.Snapshot {
	out := testutil.Snapshot{Nodes: map[string][]byte{}, Entries: s.Entries}
	for p, v := range s.Nodes {
		if formats.ClassifyPath(p) == formats.NodeLedgerMetadata {
			if m, err := formats.DecodeLedgerMetadata(v); err == nil {
				m.Ctime = nil
				if b, err := formats.EncodeLedgerMetadata(m); err == nil {
					v = b
				}
			}
		}
		out.Nodes[p] = v
	}
	return out
}

// hashTree is testutil.HashTree for trees holding sparse files (a killed Badger
// leaves 2 GiB value logs that are nearly all hole): it hashes each file's size
// and its data ranges only.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		h := sha256.New()
		fmt.Fprintf(h, "%d:", fi.Size())
		for off := int64(0); off < fi.Size(); {
			data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
			if err != nil {
				break // only a hole is left
			}
			hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%d:", data)
			if _, err := io.Copy(h, io.NewSectionReader(f, data, hole-data)); err != nil {
				return err
			}
			off = hole
		}
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatalf("hash tree %s: %v", dir, err)
	}
	return sums
}

// hasUncleanState reports whether a kill left a memtable log or an empty value log.
func hasUncleanState(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".mem") {
			found = true
		}
		if fi, err := d.Info(); err == nil && strings.HasSuffix(p, ".vlog") && fi.Size() == 0 {
			found = true
		}
		return nil
	})
	return found
}

func writeFigures(t *testing.T) {
	if *out == "" {
		return
	}
	figMu.Lock()
	defer figMu.Unlock()
	b, _ := json.MarshalIndent(figs, "", "  ")
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		t.Error(err)
	}
}
