package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
)

// --index-key is the one flag for the property key; the names it replaced
// (--key on index and inspect entries, --first-entry-index-key on check,
// inspect topics and report) are aliases that give the same result.
func TestIndexKeyFlagAndItsOldNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dd")
	if _, err := fixtures.Generate(context.Background(), dir, fixtures.Options{Seed: 4, WithFirstEntryIndex: true, IndexKey: "kafka.base.offset"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd []string
		old string
	}{
		{[]string{"inspect", "topics"}, "--first-entry-index-key"},
		{[]string{"check"}, "--first-entry-index-key"},
		{[]string{"index", "backfill"}, "--key"},
	} {
		run := func(flags ...string) string {
			t.Helper()
			args := append(append([]string{"-d", dir, "--json"}, c.cmd...), flags...)
			_, out, stderr := indexRun(t, args...)
			if strings.Contains(stderr, "flag provided but not defined") {
				t.Fatalf("%v: %s", args, stderr)
			}
			return out
		}
		withNew := run("--index-key", "kafka.base.offset")
		withOld := run(c.old, "kafka.base.offset")
		withDefault := run()
		name := strings.Join(c.cmd, " ")
		if withNew != withOld {
			t.Errorf("%s: %s and --index-key differ:\n%s\n---\n%s", name, c.old, withOld, withNew)
		}
		if withNew == withDefault {
			t.Errorf("%s: --index-key kafka.base.offset made no difference to the default key", name)
		}
	}
	for _, cmd := range [][]string{{"check"}, {"inspect", "topics"}, {"inspect", "entries"}, {"index", "backfill"}, {"index", "find"}, {"report"}, {"fixtures", "generate"}} {
		_, out, _ := indexRun(t, append(cmd, "--help")...)
		if !strings.Contains(out, "--index-key") || !strings.Contains(out, "deprecated aliases") {
			t.Errorf("%s --help does not offer --index-key with its deprecated aliases:\n%s", strings.Join(cmd, " "), out)
		}
	}
}
