package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestReadmeExamplesRun runs every example command of the README against a
// fixture, so the documentation cannot drift from the tool. Examples that need a
// journal run id run against a journal that holds a back-fill (its first run,
// its last batch's second); a redirect to a file writes the file, printf's pipe
// is stdin. Only the huge fixture and demo (tested on its own) are skipped.
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
	// The journal examples name a run id and a back-fill's second: they run
	// against a data dir whose journal holds a back-fill of several batches.
	jdir, _ := testutil.Fixture(t, fixtures.Options{Seed: 2})
	if _, errOut, code := runApp(t, "-d", jdir, "index", "backfill", "--apply", "--batch", "1"); code > 1 {
		t.Fatalf("back-fill for the journal examples: exit %d: %s", code, errOut)
	}
	runs := listedRuns(t, jdir)
	if len(runs) < 2 {
		t.Fatalf("the back-fill wrote %d runs, want several", len(runs))
	}
	time.Sleep(time.Second) // the README's undo runs must not share the back-fill's second
	journalIDs := strings.NewReplacer("20261129T131511.459774119Z-d691d7fc", runs[0].Run,
		"20261129T131511", runs[len(runs)-1].Run[:len("20261129T131511")])
	comment := regexp.MustCompile(`\s+#.*$`)
	redirect := regexp.MustCompile(`\s+>\s+(\S+)$`)
	piped := regexp.MustCompile(`^printf '([^']*)' \| (ledgermedic .*)$`)
	ran := 0
	inShell := false
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "```") {
			inShell = line == "```sh"
			continue
		}
		line = comment.ReplaceAllString(line, "")
		var stdin []byte
		if m := piped.FindStringSubmatch(line); inShell && m != nil {
			stdin, line = printfBytes(t, m[1]), m[2]
		}
		if !inShell || !strings.HasPrefix(line, "ledgermedic ") {
			continue
		}
		// The /tmp/big (~1M entries) and /tmp/wide (a million topics) fixtures take
		// minutes on CI's cores (fixtures' own tests generate above the old limit);
		// demo has its own tests.
		if strings.Contains(line, "/tmp/big") || strings.Contains(line, "/tmp/wide") || strings.HasSuffix(line, " demo") {
			continue
		}
		var outFile string
		if m := redirect.FindStringSubmatch(line); m != nil {
			outFile, line = filepath.Join(work, m[1]), strings.TrimSuffix(line, m[0])
		}
		text := line + " "
		if strings.Contains(text, " journal ") {
			text = journalIDs.Replace(strings.ReplaceAll(text, " DIR ", " "+jdir+" "))
		}
		args := strings.Fields(replacer.Replace(text))[1:]
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			out, errOut, code := runReadmeLine(t, stdin, args...)
			if code > 1 {
				t.Fatalf("README example %q exited %d\nstdout:\n%s\nstderr:\n%s", line, code, out, errOut)
			}
			if outFile != "" {
				if err := os.WriteFile(outFile, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				if len(out) == 0 {
					t.Errorf("README example %q redirects nothing to %s", line, outFile)
				}
			}
		})
		ran++
	}
	if ran < 35 {
		t.Fatalf("only %d README examples ran; the README lost its examples?", ran)
	}
}

// runReadmeLine runs the app with stdin.
func runReadmeLine(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"ledgermedic"}, args...),
		Env{Stdout: &out, Stderr: &errb, Stdin: bytes.NewReader(stdin)})
	return out.String(), errb.String(), code
}

// printfBytes is what printf(1) writes for a format of \xHH escapes and text.
func printfBytes(t *testing.T, format string) []byte {
	t.Helper()
	var b []byte
	for i := 0; i < len(format); i++ {
		if strings.HasPrefix(format[i:], `\x`) && i+4 <= len(format) {
			v, err := strconv.ParseUint(format[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("printf %q: %v", format, err)
			}
			b = append(b, byte(v))
			i += 3
			continue
		}
		b = append(b, format[i])
	}
	return b
}
