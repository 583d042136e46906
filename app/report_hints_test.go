package app

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReportHintsRunAsPrinted: the report's suggested commands carry the data
// dir (and store flags) in use, as check's do.
func TestReportHintsRunAsPrinted(t *testing.T) {
	dir := faultyFixture(t)
	page := filepath.Join(t.TempDir(), "r.html")
	if _, errOut, code := runApp(t, "-d", dir, "report", "--out", page); code > 1 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	hints := regexp.MustCompile(`<td class="muted">([^<]*)</td>`).FindAllStringSubmatch(string(b), -1)
	n := 0
	for _, m := range hints {
		h := html.UnescapeString(m[1])
		if !strings.Contains(h, "ledgermedic ") {
			continue
		}
		n++
		if !strings.Contains(h, "ledgermedic -d "+dir+" ") {
			t.Errorf("report hint %q does not name the data dir %s", h, dir)
		}
	}
	if n == 0 {
		t.Fatal("the report suggests no command")
	}
}
