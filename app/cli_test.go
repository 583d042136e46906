package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// envReportMemDir, in a child of TestReportMemoryFlat, names the data dir to
// report on (and tells TestMain not to build the binary).
const envReportMemDir = "LEDGERMEDIC_REPORT_MEM_DIR"

// binary is the ledgermedic binary built once for tests that check real exit codes.
var binary string

func TestMain(m *testing.M) {
	if os.Getenv(envReportMemDir) != "" { // a child of TestReportMemoryFlat: it runs the app in-process
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "ledgermedic-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "ledgermedic")
	build := exec.Command("go", "build", "-o", binary, "..")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		binary = "" // tests that need it fail with a clear message
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runBin runs the built binary and returns stdout, stderr and the exit code.
func runBin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runBinIn(t, "", args...)
}

// runBinIn is runBin in working directory dir ("": the test's).
func runBinIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	if binary == "" {
		t.Fatal("the ledgermedic binary did not build")
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LEDGERMEDIC_DATA_DIR=")
	return runCmd(t, cmd)
}

// runCmd runs cmd and returns stdout, stderr and the exit code; a process that
// could not start fails the test.
func runCmd(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", cmd.Args[1:], err)
	}
	return out.String(), errb.String(), code
}

// runApp runs the app in-process.
func runApp(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"ledgermedic"}, args...),
		Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")})
	return out.String(), errb.String(), code
}

func TestExitCodesFromTheRealBinary(t *testing.T) {
	clean, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	broken, _ := testutil.Fixture(t, fixtures.Options{Seed: 1, LoseSchemaLedgers: 1})
	empty := t.TempDir()
	cases := []struct {
		name   string
		args   []string
		want   int
		stderr string // substring the error must contain
		stdout string
	}{
		{"help", []string{"--help"}, 0, "", "EXIT CODES"},
		{"no data dir", []string{"check"}, 2, "--data-dir", ""},
		{"unknown flag", []string{"check", "--nope"}, 2, "nope", ""},
		{"missing required flag", []string{"-d", clean, "inspect", "entries"}, 2, "ledger", ""},
		{"unknown subcommand", []string{"-d", clean, "inspect", "nope"}, 2, `unknown command "nope" (commands: topics,`, ""},
		{"group without subcommand", []string{"inspect"}, 0, "", "schema-usage"},
		{"unknown top-level command", []string{"nope"}, 2, "nope", ""},
		{"missing dir", []string{"-d", filepath.Join(empty, "missing"), "check"}, 3, "missing", ""},
		{"not a data dir", []string{"-d", empty, "check"}, 3, "not a ledgermedic data dir", ""},
		{"clean check", []string{"-d", clean, "check"}, 0, "", "Summary"},
		{"broken check", []string{"-d", broken, "check"}, 1, "", "schema-ledger-lost"},
		{"bad topic", []string{"-d", clean, "inspect", "ledgers", "--topic", "a/b"}, 2, "topic", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runBin(t, c.args...)
			if code != c.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.want, out, errOut)
			}
			if c.stderr != "" && !strings.Contains(errOut, c.stderr) {
				t.Errorf("stderr %q does not mention %q", errOut, c.stderr)
			}
			if c.stdout != "" && !strings.Contains(out, c.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", c.stdout, out)
			}
			if strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine ") {
				t.Errorf("the binary panicked:\n%s", errOut)
			}
		})
	}
}

func TestLockedDataDirExits3(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 2})
	dd, err := datadir.Open(dir, store.Options{}) // this process now holds the writer lock
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	_, errOut, code := runBin(t, "-d", dir, "inspect", "topics")
	if code != 3 || !strings.Contains(errOut, "another process") {
		t.Fatalf("exit %d, stderr %q; want 3 and a message naming another process", code, errOut)
	}
}

func TestInspectionNeverChangesAByte(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 3, LoseSchemaLedgers: 1, CorruptCRC: true})
	before := testutil.HashTree(t, dir)
	topic := m.ManagedLedgers[0].Topic
	ledger := int64(-1)
	for _, l := range m.ManagedLedgers[0].Ledgers {
		if !l.Offloaded && l.Lost == "" && ledger < 0 {
			ledger = l.ID
		}
	}
	for _, args := range [][]string{
		{"check"}, {"--json", "check"}, {"inspect", "topics"}, {"inspect", "ledgers", "--topic", topic},
		{"inspect", "schemas"}, {"inspect", "entries", "--ledger", itoa(ledger)}, {"inspect", "schema-usage"},
		{"inspect", "node", m.ManagedLedgers[0].Path}, {"journal", "list"},
		{"schema", "repair"}, {"index", "backfill"}, {"index", "find", "--topic", topic, "--offset", "0"},
	} {
		_, errOut, code := runBin(t, append([]string{"-d", dir}, args...)...)
		if code > 1 {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	testutil.SameTree(t, before, testutil.HashTree(t, dir))
}

func TestJSONOutputIsOneDocument(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 4, LoseSchemaLedgers: 1})
	out, _, code := runApp(t, "-d", dir, "--json", "check")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json output is not one JSON document: %v\n%s", err, out)
	}
	var fs []report.Finding
	if err := json.Unmarshal(doc["findings"], &fs); err != nil || len(fs) == 0 {
		t.Fatalf("findings = %s (%v)", doc["findings"], err)
	}
}

func TestGarbageNodeIsAFindingNotAPanic(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 5})
	dd, err := datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := m.ManagedLedgers[0].Path
	n, err := dd.Metadata.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Metadata.CompareAndSet(path, n.Version, []byte{0x08, 0xff, 0xff, 0x12, 0x99}); err != nil {
		t.Fatal(err)
	}
	dd.Close()
	out, errOut, code := runBin(t, "-d", dir, "check")
	if code != 1 || !strings.Contains(out, path) {
		t.Fatalf("exit %d; want 1 with a finding naming %s\n%s\n%s", code, path, out, errOut)
	}
	out, _, code = runBin(t, "-d", dir, "inspect", "node", path)
	if code == 0 || !strings.Contains(out+errOut, "0899") && !strings.Contains(out+errOut, "08ffff") {
		t.Errorf("inspect node on garbage: exit %d, want non-zero with raw hex\n%s", code, out)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
