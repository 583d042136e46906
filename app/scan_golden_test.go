package app

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil/golden"
)

// padding matches the runs of blanks and dashes that pad and rule table cells.
var padding = regexp.MustCompile(`( |-)+`)

// TestScanOutputIsTheSameForAnyWorkerCount runs check and inspect schema-usage
// over one faulty cluster with 1, 2 and 4 workers (and a split of the ledger
// store into ranges of whole ledgers for each): every output must equal the
// golden file, which was written by the single-pass-per-consumer code that came
// before the shared scan (check read the store twice then).
func TestScanOutputIsTheSameForAnyWorkerCount(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dd")
	_, err := fixtures.Generate(context.Background(), dir, fixtures.Options{
		Seed: 7, Topics: 12, LedgersPerTopic: 6, EntriesPerLedger: 400,
		LoseSchemaLedgers: 2, LoseSchemaEntries: 1, LoseTopicLedger: true, LoseEntriesOnly: true,
		OrphanLedger: true, CorruptCRC: true, DeleteSchemaHistory: 1, ResetSchemaHistory: 1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		name string
		args []string
	}{
		{"check.txt", []string{"check"}},
		{"check.json", []string{"check", "--json"}},
		{"check-skip.json", []string{"check", "--json", "--skip-message-scan"}},
		{"schema-usage.txt", []string{"inspect", "schema-usage"}},
		{"schema-usage.json", []string{"inspect", "schema-usage", "--json"}},
		{"schema-usage-topic.json", []string{"inspect", "schema-usage", "--json", "--topic", "persistent://acme/orders/orders"}},
	}
	workers := []int{1, 2, 4}
	if golden.Update() {
		workers = []int{0} // the flag did not exist before
	}
	for _, r := range runs {
		path := filepath.Join("testdata", "scan", r.name)
		for _, w := range workers {
			args := append([]string{"-d", dir}, r.args...)
			if w > 0 {
				args = append(args, "--workers", strconv.Itoa(w))
			}
			out, errOut, code := runApp(t, args...)
			if code > 1 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			got := strings.ReplaceAll(out, dir, "DIR")
			if golden.Update() {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if strings.HasSuffix(r.name, ".txt") {
				// Table columns are as wide as their widest cell, which holds the
				// temp dir's path (of varying length) before it became DIR.
				got = padding.ReplaceAllString(got, "$1")
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./app -run %s -update writes it)", err, t.Name())
			}
			if strings.HasSuffix(r.name, ".txt") {
				want = padding.ReplaceAll(want, []byte("$1"))
			}
			if got != string(want) {
				t.Errorf("%s with %d workers differs from %s:\n--- got\n%s\n--- want\n%s", strings.Join(r.args, " "), w, path, got, want)
			}
		}
	}
}
