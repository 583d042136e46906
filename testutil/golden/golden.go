// Package golden compares test output with golden files under testdata/ and
// rewrites them with -update. It is the one golden-file helper of the module;
// it imports only the standard library, so any package's tests can use it
// (testutil itself imports fixtures and store, which some packages'
// tests cannot import without a cycle).
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the tests produce")

// Update reports whether -update was given: golden files are being rewritten.
func Update() bool { return *update }

// Check compares got with the golden file at path (relative to the test's
// package directory, usually testdata/...). Under -update it writes got there
// first, creating directories. It returns the golden bytes.
func Check(t testing.TB, path string, got []byte) []byte {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run '%s' -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it; review the diff):\n--- got\n%s\n--- want\n%s",
			path, got, want)
	}
	return want
}

// CheckString is Check for text.
func CheckString(t testing.TB, path, got string) {
	t.Helper()
	Check(t, path, []byte(got))
}
