package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/internal/testutil"
)

// TestReadmeExamplesRun runs every example command of the README against a
// fixture, so the documentation cannot drift from the tool. Examples that need a
// specific journal run id, a huge fixture, stdin or a shell pipe are skipped.
func TestReadmeExamplesRun(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 1, LoseSchemaLedgers: 1})
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	work := t.TempDir()
	capture := filepath.Join(work, "schemas.jsonl")
	replacer := strings.NewReplacer(
		"/copy/of/cluster", dir, " DIR ", " "+dir+" ", " HEALTHY ", " "+healthy+" ",
		"schemas.jsonl", capture, "meta.bak", filepath.Join(work, "meta.bak"),
		"./pulsar-admin-outputs/", filepath.Join(work, "inputs"),
		"/tmp/drill", filepath.Join(work, "drill"),
	)
	if err := os.MkdirAll(filepath.Join(work, "inputs"), 0o755); err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile(`\s+#.*$`)
	ran := 0
	inShell := false
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "```") {
			inShell = line == "```sh"
			continue
		}
		if !inShell || !strings.HasPrefix(line, "ledgermedic ") {
			continue
		}
		line = comment.ReplaceAllString(line, "")
		if strings.ContainsAny(line, "|>") || strings.Contains(line, "/tmp/big") ||
			regexp.MustCompile(`\d{8}T\d{6}`).MatchString(line) || strings.HasSuffix(line, " demo") {
			continue
		}
		args := strings.Fields(replacer.Replace(line + " "))[1:]
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			out, errOut, code := runApp(t, args...)
			if code > 1 {
				t.Fatalf("README example %q exited %d\nstdout:\n%s\nstderr:\n%s", line, code, out, errOut)
			}
		})
		ran++
	}
	if ran < 20 {
		t.Fatalf("only %d README examples ran; the README lost its examples?", ran)
	}
}
