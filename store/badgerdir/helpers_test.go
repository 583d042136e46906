package badgerdir

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ledgermedic/ledgermedic/store"
)

// helperEnv makes the test binary act as another process holding or crashing a data dir.
const helperEnv = "LEDGERMEDIC_STORE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

// runHelper is the child process: "hold:<dir>" opens dir writable until stdin closes;
// "crash:<dir>" opens dir writable, writes, and waits to be killed.
func runHelper(mode string) int {
	kind, dir, _ := strings.Cut(mode, ":")
	if kind == "readonly" { // a read-only session (its sandbox in TMPDIR) until killed
		if _, err := Open(dir, store.Options{ReadOnly: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("ready")
		select {}
	}
	if kind == "bigmem" { // opens Badger itself, with its default options
		if err := writeBigMemtable(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		return 2
	}
	d, err := Open(dir, store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch kind {
	case "hold":
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		if err := d.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	case "crash":
		if err := writeCrashData(d); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("ready")
		select {} // killed by the parent with SIGKILL
	case "batches":
		// Rewrites every batch node, one generation per atomic batch, until killed.
		fmt.Println("ready")
		if err := writeBatchesForever(d); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	return 3
}

// writeCrashData is what the crashing child writes after its open; the parent checks
// that the sandbox shows it.
func writeCrashData(d *Dir) error {
	for i := range 50 {
		if _, err := d.Metadata.CompareAndSet(fmt.Sprintf("/crash/node-%02d", i), 0, []byte(fmt.Sprintf("value %d", i))); err != nil {
			return err
		}
		if err := d.Ledgers.PutEntry(77, int64(i), []byte(fmt.Sprintf("entry %d", i))); err != nil {
			return err
		}
	}
	return nil
}

// startHelper runs the test binary as a helper process and waits until it reports ready.
func startHelper(t *testing.T, kind, dir string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+kind+":"+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) != "ready" {
			cmd.Wait()
			t.Fatalf("helper %s: got %q, stderr: %s", kind, line, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("helper %s did not get ready; stderr: %s", kind, stderr.String())
	}
	return cmd, stdin
}

// crashedDataDir returns a data dir whose writer was killed with SIGKILL after writing
// writeCrashData: the state a broker crash or a copy of a live dir leaves.
func crashedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	cmd, _ := startHelper(t, "crash", dir)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	return dir
}

type fileSum struct {
	size int64
	sum  string
}

// snapshot records every file (path, size, sha256) and directory under dir.
// Badger's logs are sparse files of up to 2 GiB, so the sum covers each data range
// (offset, length, bytes) as SEEK_DATA reports it rather than gigabytes of holes:
// equal sums mean equal bytes, and a write into a hole changes the sum too.
func snapshot(t *testing.T, dir string) map[string]fileSum {
	t.Helper()
	out := map[string]fileSum{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if e.IsDir() {
			out[rel+"/"] = fileSum{}
			return nil
		}
		s, err := sumFile(p)
		out[rel] = s
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sumFile(path string) (fileSum, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileSum{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileSum{}, err
	}
	h := sha256.New()
	for off := int64(0); off < fi.Size(); {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break
		}
		if err != nil { // no hole support: hash everything
			h.Reset()
			if _, err := io.Copy(h, io.NewSectionReader(f, 0, fi.Size())); err != nil {
				return fileSum{}, err
			}
			break
		}
		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return fileSum{}, err
		}
		fmt.Fprintf(h, "%d+%d:", data, hole-data)
		if _, err := io.Copy(h, io.NewSectionReader(f, data, hole-data)); err != nil {
			return fileSum{}, err
		}
		off = hole
	}
	return fileSum{size: fi.Size(), sum: hex.EncodeToString(h.Sum(nil))}, nil
}

func assertSameSnapshot(t *testing.T, before, after map[string]fileSum) {
	t.Helper()
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			t.Errorf("%s was removed", p)
		case a != b:
			t.Errorf("%s changed: size %d -> %d, sha256 %s -> %s", p, b.size, a.size, b.sum, a.sum)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
}

// filledDataDir returns a closed data dir holding the nodes and entries below.
func filledDataDir(t testing.TB, nodes map[string]string, entries map[int64]int) string {
	t.Helper()
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := d.NewBulkWriter()
	for p, v := range nodes {
		if err := w.PutNode(p, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	for l, n := range entries {
		for e := range n {
			if err := w.PutEntry(l, int64(e), entryValue(l, int64(e))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func entryValue(ledgerID, entryID int64) []byte {
	return []byte(fmt.Sprintf("ledger %d entry %d", ledgerID, entryID))
}

func mustOpen(t testing.TB, dir string, opts store.Options) *Dir {
	t.Helper()
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
