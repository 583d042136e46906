package badgerdir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ledgermedic/ledgermedic/internal/scratch"
	"github.com/ledgermedic/ledgermedic/store"
)

// A read-only session killed with SIGKILL leaves its sandbox in TMPDIR; the next
// session removes it, but never the sandbox of a session that still runs, nor a
// dir without the owner mark (an older version's, whose owner cannot be told).
func TestKilledSessionsSandboxIsRemovedByTheNext(t *testing.T) {
	dir := filledDataDir(t, map[string]string{"/a": "1"}, map[int64]int{1: 3})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the helpers inherit it
	unmarked := filepath.Join(tmp, "ledgermedic-ro-older-version")
	if err := os.Mkdir(unmarked, 0o755); err != nil {
		t.Fatal(err)
	}

	killed, _ := startHelper(t, "readonly", dir)
	orphan := sessionDirs(t, tmp)
	if len(orphan) != 1 {
		t.Fatalf("one read-only session: temp dirs %v, want one", orphan)
	}
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	if got := sessionDirs(t, tmp); !slices.Equal(got, orphan) {
		t.Fatalf("after SIGKILL: temp dirs %v, want the orphan %v still there", got, orphan)
	}

	startHelper(t, "readonly", dir) // runs until the test ends
	live := sessionDirs(t, tmp)
	if len(live) != 1 || live[0] == orphan[0] {
		t.Fatalf("the next session: temp dirs %v, want only its own (the orphan %s removed)", live, orphan[0])
	}

	d := mustOpen(t, dir, store.Options{ReadOnly: true})
	if got := sessionDirs(t, tmp); len(got) != 2 || !slices.Contains(got, live[0]) {
		t.Fatalf("a third session beside a running one: temp dirs %v, want %s and its own", got, live[0])
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sessionDirs(t, tmp); !slices.Equal(got, live) {
		t.Fatalf("after Close: temp dirs %v, want the running session's %v", got, live)
	}
	if _, err := os.Stat(unmarked); err != nil {
		t.Fatalf("a dir without the owner mark was removed: %v", err)
	}
}

// sessionDirs lists the marked temp dirs under tmp.
func sessionDirs(t *testing.T, tmp string) []string {
	t.Helper()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(tmp, e.Name(), scratch.OwnerFile)); err == nil && scratch.HasTempPrefix(e.Name()) {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}
