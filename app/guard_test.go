package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestSuppliedSchemaThatCrashesTheAvroParser is the reproducer of a parser crash: a record
// field whose type is an empty union with a default made hamba/avro panic inside
// schema repair. The real binary must name the input file and exit 1 or 2 with no
// stack trace, with and without --allow-hash-mismatch, and write nothing.
func TestSuppliedSchemaThatCrashesTheAvroParser(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 4, LoseSchemaLedgers: 2})
	var key string
	var version int64 = -1
	for _, f := range m.Faults {
		if f.Kind == fixtures.FaultLostSchemaLedger && f.Version != nil && !f.Deleted {
			key, version = f.SchemaKey, *f.Version
			break
		}
	}
	if key == "" {
		t.Fatal("the fixture lost no live schema version")
	}
	const def = `{"type":"record","name":"A","fields":[{"name":"a","type":[],"default":0}]}`
	bad := filepath.Join(t.TempDir(), "bad.json")
	doc := fmt.Sprintf(`{"version":%d,"schemaInfo":{"type":"AVRO","schema":%q,"properties":{}}}`, version, def)
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.HashTree(t, dir)
	for _, extra := range [][]string{nil, {"--allow-hash-mismatch"}} {
		args := append([]string{"-d", dir, "schema", "repair", "--topic", key, "--from", bad}, extra...)
		stdout, stderr, code := runBin(t, args...)
		out := stdout + stderr
		if code != 1 && code != 2 {
			t.Errorf("%v: exit %d, want 1 or 2\n%s", extra, code, out)
		}
		if strings.Contains(out, "goroutine ") || strings.Contains(out, "panic:") {
			t.Errorf("%v: a stack trace reached the user:\n%s", extra, out)
		}
		if !strings.Contains(out, bad+":1") {
			t.Errorf("%v: the output does not name %s:1:\n%s", extra, bad, out)
		}
		// Without the flag the hash refuses it first; with it, the definition is parsed.
		if extra != nil && !strings.Contains(out, "invalid AVRO schema (Avro): Avro parser: the parser failed") {
			t.Errorf("%v: the output does not call the definition invalid:\n%s", extra, out)
		}
	}
	testutil.SameTree(t, before, testutil.HashTree(t, dir))
}
