package spill

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestFileScanPrefix: the records under a prefix from a start, and no other,
// whatever the two are (the start before, inside or past the prefix's keys).
func TestFileScanPrefix(t *testing.T) {
	keys := []string{"/a", "/a-b", "/a/b", "/a/b/c", "/a0", "/b", "/b/x"}
	f, err := open(t).NewFile("t")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := f.Append([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ prefix, from string }{
		{"", ""}, {"/a", ""}, {"/a/", ""}, {"/a", "/a/"}, {"/a", "/a0"}, {"/a", "/b"}, {"/b", "/a"}, {"/c", ""}, {"/a/b", "/a/b/c"},
	} {
		var want, got []string
		for _, k := range keys {
			if strings.HasPrefix(k, c.prefix) && k >= c.from {
				want = append(want, k)
			}
		}
		err := f.ScanPrefix(context.Background(), []byte(c.prefix), []byte(c.from), func(k, v []byte) error {
			if string(v) != "v"+string(k) {
				t.Errorf("%s holds %s", k, v)
			}
			got = append(got, string(k))
			return nil
		})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ScanPrefix(%q, %q) = %q, %v; want %q", c.prefix, c.from, got, err, want)
		}
	}
}
