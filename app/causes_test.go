package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestErrorsNameTheCause: a store that cannot be opened says what failed (the
// errno, the path, the store URL), not a cause it did not meet: a data dir that
// cannot be looked into is not "missing", an empty etcd db was not written to,
// and a live store is not a data dir.
func TestErrorsNameTheCause(t *testing.T) {
	base := t.TempDir()
	loop := filepath.Join(base, "loop")
	mkdirs(t, filepath.Join(loop, "ledgers"))
	if err := os.Symlink("metadata", filepath.Join(loop, "metadata")); err != nil {
		t.Fatal(err)
	}
	fileMeta := filepath.Join(base, "filemeta")
	mkdirs(t, filepath.Join(fileMeta, "ledgers"))
	writeFile(t, filepath.Join(fileMeta, "metadata"), "not a database")
	aFile := filepath.Join(base, "a-file")
	writeFile(t, aFile, "x")
	noManifest := filepath.Join(base, "nomanifest")
	mkdirs(t, filepath.Join(noManifest, "ledgers"), filepath.Join(noManifest, "metadata"))
	if err := os.Symlink("MANIFEST", filepath.Join(noManifest, "metadata", "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	emptyDB := filepath.Join(base, "db")
	writeFile(t, emptyDB, "")
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 2})
	cases := []struct {
		name    string
		args    []string
		code    int
		says    []string
		neverIn []string
	}{
		{"symlink loop", []string{"-d", loop, "check"}, 3,
			[]string{filepath.Join(loop, "metadata"), "too many levels of symbolic links"}, []string{"neither", "is missing"}},
		{"metadata is a file", []string{"-d", fileMeta, "check"}, 3,
			[]string{filepath.Join(fileMeta, "metadata") + " is not a directory"}, []string{"is missing"}},
		{"a path through a file", []string{"-d", filepath.Join(aFile, "dd"), "check"}, 3,
			[]string{filepath.Join(aFile, "dd"), "not a directory"}, nil},
		{"MANIFEST that cannot be looked at", []string{"-d", noManifest, "check"}, 3,
			[]string{filepath.Join(noManifest, "metadata", "MANIFEST"), "too many levels of symbolic links"}, []string{"no MANIFEST"}},
		{"empty etcd db", []string{"-d", dir, "--metadata", "etcd-db:" + emptyDB, "check"}, 3,
			[]string{emptyDB, "is empty (0 bytes)"}, []string{"write " + emptyDB, "bad file descriptor"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runBin(t, c.args...)
			assertCause(t, c.args, code, c.code, stdout, stderr, c.says, c.neverIn)
		})
	}
	t.Run("permission denied", func(t *testing.T) { permissionDenied(t) })
}

// permissionDenied: a data dir the user may not look into is permission denied,
// naming the path. Root passes every mode bit, so as root the binary runs as
// nobody (setpriv), from a copy nobody can run.
func permissionDenied(t *testing.T) {
	home, err := os.MkdirTemp("", "ledgermedic-eacces-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(home, "dd"), 0o755); os.RemoveAll(home) })
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	dd := filepath.Join(home, "dd")
	mkdirs(t, filepath.Join(dd, "metadata"), filepath.Join(dd, "ledgers"))
	if err := os.Chmod(dd, 0o600); err != nil { // readable names, no search: stat of dd/metadata is EACCES
		t.Fatal(err)
	}
	argv := []string{binary, "-d", dd, "check"}
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("running as root without setpriv: permission denied cannot be tested (util-linux's setpriv is needed)")
			}
			t.Skip("running as root, which passes every mode bit, and setpriv (util-linux) is not installed to run the binary as nobody")
		}
		bin := filepath.Join(home, "ledgermedic")
		data, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		argv = append([]string{setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", bin}, argv[1:]...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LEDGERMEDIC_DATA_DIR=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	assertCause(t, argv, code, 3, out.String(), errb.String(),
		[]string{filepath.Join(dd, "metadata"), "permission denied"}, []string{"neither", "is missing"})
}

func assertCause(t *testing.T, args []string, code, want int, stdout, stderr string, says, neverIn []string) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	for _, s := range says {
		if !strings.Contains(stderr, s) {
			t.Errorf("%s: stderr does not say %q:\n%s", strings.Join(args, " "), s, stderr)
		}
	}
	for _, s := range neverIn {
		if strings.Contains(stderr, s) {
			t.Errorf("%s: stderr names a cause it did not meet (%q):\n%s", strings.Join(args, " "), s, stderr)
		}
	}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBackupOfALiveStoreNamesIt: --backup on a live store is refused naming the
// store and what it is, never as a "data dir opened read-only".
func TestBackupOfALiveStoreNamesIt(t *testing.T) {
	srv := startZooKeeper(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	mustBin(t, 0, "--metadata", srv.url, "fixtures", "generate", "--out", dir, "--seed", "6")
	args := []string{"-d", dir, "--metadata", srv.url, "index", "backfill", "--apply", "--backup", filepath.Join(t.TempDir(), "b.bak")}
	stdout, stderr, code := runBin(t, args...)
	if code < 2 || !strings.Contains(stderr, srv.url) || strings.Contains(stderr, "data dir opened read-only") {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
}
