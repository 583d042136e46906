package scratch

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestCopySkippingZeros(t *testing.T) {
	// The fallback for file systems without SEEK_DATA.
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	content := append(append(bytes.Repeat([]byte{0}, 1<<20), "tail"...), make([]byte, 100)...)
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	in, _ := os.Open(src)
	defer in.Close()
	out, _ := os.Create(filepath.Join(dir, "dst"))
	out.Truncate(int64(len(content)))
	if err := copySkippingZeros(in, out, int64(len(content))); err != nil {
		t.Fatal(err)
	}
	out.Close()
	got, _ := os.ReadFile(filepath.Join(dir, "dst"))
	if !bytes.Equal(got, content) {
		t.Error("copy differs")
	}
	if a := allocated(t, filepath.Join(dir, "dst")); a*512 >= 1<<20 {
		t.Errorf("copy allocates %d blocks; the zero MiB should be a hole", a)
	}
}

func allocated(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks
}
