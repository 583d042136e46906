package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}

func TestCheck(t *testing.T) {
	if Update() {
		t.Skip("-update rewrites instead of comparing")
	}
	p := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(p, []byte("same"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	Check(r, p, []byte("same"))
	if r.failed {
		t.Error("equal bytes reported as a difference")
	}
	Check(r, p, []byte("other"))
	if !r.failed {
		t.Error("different bytes not reported")
	}
	r = &recorder{TB: t}
	Check(r, filepath.Join(t.TempDir(), "missing"), nil)
	if !r.failed {
		t.Error("a missing golden file not reported")
	}
}
