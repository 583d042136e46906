package app

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// `report --png DIR` writes the charts next to the page and lists each file it
// wrote; each listed file exists and is a 1380 px wide PNG, and there is one
// timeline per topic of the manifest.
func TestReportPNG(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 1})
	out := filepath.Join(t.TempDir(), "r.html")
	pngDir := filepath.Join(t.TempDir(), "charts", "new") // created by report
	stdout, stderr, code := runApp(t, "--data-dir", dir, "report", "--out", out, "--png", pngDir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("no HTML report: %v", err)
	}
	var listed []string
	for _, line := range strings.Split(stdout, "\n") {
		if p, ok := strings.CutPrefix(line, "wrote "); ok && strings.HasSuffix(p, ".png") {
			listed = append(listed, p)
		}
	}
	timelines := 0
	for _, p := range listed {
		if filepath.Dir(p) != pngDir {
			t.Errorf("%s is not in %s", p, pngDir)
		}
		if w := decodedWidth(t, p); w != 1380 {
			t.Errorf("%s is %d px wide, want 1380", p, w)
		}
		if !strings.HasSuffix(p, ".schema.png") {
			timelines++
		}
	}
	if timelines != len(m.Topics) {
		t.Errorf("%d timelines listed for %d topics:\n%s", timelines, len(m.Topics), stdout)
	}
	entries, err := os.ReadDir(pngDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(listed) {
		t.Errorf("%d files in %s, %d listed", len(entries), pngDir, len(listed))
	}
}

// decodedWidth decodes the whole image (not just its header) and returns its width.
func decodedWidth(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("listed but not there: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img.Bounds().Dx()
}

// A --png that names a file is bad input: exit 2 before any scan, no page written.
func TestReportPNGBadInput(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, png string
	}{
		{"a file", file},
		{"under a file", filepath.Join(file, "charts")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.html")
			stdout, stderr, code := runApp(t, "--data-dir", dir, "report", "--out", out, "--png", tc.png)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, tc.png) {
				t.Errorf("stderr does not name %s: %s", tc.png, stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a report was written on bad input")
			}
		})
	}
}
