package app

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// fleetManifest is the Kubernetes Indexed Job the README and docs/fleet.md give.
const fleetManifest = "../deploy/k8s/check-indexed-job.yaml"

// everyFaultFixture has every fault the generator makes, over enough topics
// that each of four shards gets some.
var everyFaultFixture = fixtures.Options{Seed: 31, Topics: 24, LedgersPerTopic: 3, EntriesPerLedger: 4,
	LoseSchemaLedgers: 3, LoseSchemaEntries: 2, LoseTopicLedger: true, LoseEntriesOnly: true,
	OrphanLedger: true, CorruptCRC: true, DeleteSchemaHistory: 1, ResetSchemaHistory: 1, RustProducers: true}

// jobSpec is what the tests take from the manifest: the shard pods' and the
// merge pod's args and env, and how many pods the Indexed Job runs.
type jobSpec struct {
	completions int
	check       []string
	merge       []string
	env         map[string]string // plain `value:` env of the check container
}

// readFleetManifest reads the manifest's args (one-line flow sequences, which
// are JSON), completions and completionMode, without a YAML library.
func readFleetManifest(t *testing.T) jobSpec {
	t.Helper()
	b, err := os.ReadFile(fleetManifest)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !regexp.MustCompile(`(?m)^\s+completionMode: Indexed\b`).MatchString(text) {
		t.Fatalf("%s: no completionMode: Indexed", fleetManifest)
	}
	spec := jobSpec{env: map[string]string{}}
	m := regexp.MustCompile(`(?m)^\s+completions: (\d+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no completions", fleetManifest)
	}
	spec.completions, _ = strconv.Atoi(m[1])
	if p := regexp.MustCompile(`(?m)^\s+parallelism: (\d+)`).FindStringSubmatch(text); p == nil || p[1] != m[1] {
		t.Errorf("%s: parallelism %v, want %s (every shard at once)", fleetManifest, p, m[1])
	}
	for _, a := range regexp.MustCompile(`(?m)^\s+args: (\[.*\])`).FindAllStringSubmatch(text, -1) {
		var args []string
		if err := json.Unmarshal([]byte(a[1]), &args); err != nil {
			t.Fatalf("%s: args %s: %v", fleetManifest, a[1], err)
		}
		switch args[0] {
		case "check":
			spec.check = args
		case "merge":
			spec.merge = args
		}
	}
	for _, e := range regexp.MustCompile(`(?m)^\s+- name: (\w+)\n\s+value: (\S+)`).FindAllStringSubmatch(text, -1) {
		spec.env[e[1]] = e[2]
	}
	if spec.check == nil || spec.merge == nil {
		t.Fatalf("%s: no check or merge args", fleetManifest)
	}
	if want := fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", spec.completions); !strings.Contains(strings.Join(spec.check, " "), "--shard "+want) {
		t.Fatalf("%s: the check args %q do not say --shard %s", fleetManifest, spec.check, want)
	}
	return spec
}

// kubeExpand expands $(VAR) references as the kubelet does in a container's
// args: a variable the env defines is replaced, $$ is a literal $, anything
// else is left as it is.
func kubeExpand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case s[i+1] == '$':
			b.WriteByte('$')
			i++
		case s[i+1] == '(':
			end := strings.IndexByte(s[i:], ')')
			if v, ok := env[s[i+2:i+max(end, 2)]]; end > 0 && ok {
				b.WriteString(v)
				i += end
				continue
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func TestKubeExpand(t *testing.T) {
	env := map[string]string{"JOB_COMPLETION_INDEX": "3", "RESULTS": "/r"}
	for in, want := range map[string]string{
		"$(JOB_COMPLETION_INDEX)/4":                      "3/4",
		"$(RESULTS)/shard-$(JOB_COMPLETION_INDEX).jsonl": "/r/shard-3.jsonl",
		"$$(RESULTS)": "$(RESULTS)", "$(NOPE)": "$(NOPE)", "a$": "a$", "$(": "$(",
	} {
		if got := kubeExpand(in, env); got != want {
			t.Errorf("kubeExpand(%q) = %q, want %q", in, got, want)
		}
	}
}

// runPod runs the built binary as a pod of the manifest would: the container's
// env (and the process's, without ledgermedic's own variables), args expanded
// from that env.
func runPod(t *testing.T, env map[string]string, args []string, extra ...string) (string, string, int) {
	t.Helper()
	if binary == "" {
		t.Fatal("the ledgermedic binary did not build")
	}
	expanded := make([]string, 0, len(args)+len(extra))
	for _, a := range args {
		expanded = append(expanded, kubeExpand(a, env))
	}
	cmd := exec.Command(binary, append(expanded, extra...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEDGERMEDIC_") && !strings.HasPrefix(kv, "JOB_COMPLETION_INDEX=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return runCmd(t, cmd)
}

// fleetEqualsOneCheck runs the manifest's Indexed Job locally against the
// stores stores (LEDGERMEDIC_* variables): one process per completion index
// with JOB_COMPLETION_INDEX set as the Job controller sets it, then the merge
// pod, and compares the merge, as tables and as JSON, with one check of the
// same stores: the same bytes and the same exit code.
func fleetEqualsOneCheck(t *testing.T, stores map[string]string) {
	spec := readFleetManifest(t)
	results := t.TempDir()
	pod := map[string]string{"RESULTS": results, "RUN": "0f5c2a3e-test-run"}
	for k, v := range stores {
		pod[k] = v
	}
	for i := range spec.completions {
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
		for k, v := range pod {
			env[k] = v
		}
		out, errOut, code := runPod(t, env, spec.check)
		if code != 0 || out != "" {
			t.Fatalf("shard pod %d: exit %d, stdout %q\n%s", i, code, out, errOut)
		}
	}
	files, _ := filepath.Glob(filepath.Join(results, "*.jsonl"))
	if len(files) != spec.completions {
		t.Fatalf("the shard pods wrote %v, want %d parts", files, spec.completions)
	}
	for _, format := range [][]string{nil, {"-o", "json"}, {"-o", "wide", "--limit", "0"}} {
		merged, mergeErr, mergeCode := runPod(t, pod, spec.merge, format...)
		whole, wholeErr, wholeCode := runPod(t, pod, []string{"check"}, format...)
		if mergeCode != wholeCode || merged != whole {
			t.Fatalf("merge %v: exit %d, check: exit %d\nmerge:\n%s\n%s\ncheck:\n%s\n%s", format, mergeCode, wholeCode,
				merged, mergeErr, whole, wholeErr)
		}
		if wholeCode != 1 {
			t.Fatalf("check %v: exit %d, want 1 (the fixture's faults)\n%s", format, wholeCode, wholeErr)
		}
		if format != nil && format[1] == "json" {
			kinds := map[string]bool{}
			var doc findingsDoc
			if err := json.Unmarshal([]byte(whole), &doc); err != nil {
				t.Fatal(err)
			}
			for _, f := range doc.Findings {
				kinds[f.Kind] = true
			}
			if len(kinds) < 10 {
				t.Errorf("the whole check finds only %d kinds (%v): the test does not cover every fault", len(kinds), kinds)
			}
			t.Logf("%d findings of %d kinds, merged from %d shards", len(doc.Findings), len(kinds), spec.completions)
		}
	}
}

// TestFleetOnDataDirEqualsOneCheck: the manifest's shards and merge on a data
// dir with every fault give what one check gives.
func TestFleetOnDataDirEqualsOneCheck(t *testing.T) {
	dir, _ := testutil.Fixture(t, everyFaultFixture)
	fleetEqualsOneCheck(t, map[string]string{"LEDGERMEDIC_DATA_DIR": dir})
}

// TestFleetOnZooKeeperEqualsOneCheck: the same with the metadata on a live
// ZooKeeper (the manifest's LEDGERMEDIC_METADATA), the ledgers in the data dir.
func TestFleetOnZooKeeperEqualsOneCheck(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	fleetOnLiveStore(t, "zk://"+srv.Addr)
}

// TestFleetOnEtcdEqualsOneCheck: the same on a live etcd.
func TestFleetOnEtcdEqualsOneCheck(t *testing.T) {
	srv := testutil.StartEtcd(t)
	fleetOnLiveStore(t, "etcd://"+strings.TrimPrefix(srv.Endpoint, "http://"))
}

// fleetOnLiveStore loads the every-fault fixture into the live metadata store
// at url (its ledgers into a data dir) and runs the fleet against it.
func fleetOnLiveStore(t *testing.T, url string) {
	dir := filepath.Join(t.TempDir(), "cluster")
	o := everyFaultFixture
	mustBin(t, 0, "--metadata", url, "fixtures", "generate", "--out", dir, "--seed", fmt.Sprint(o.Seed),
		"--topics", fmt.Sprint(o.Topics), "--ledgers", fmt.Sprint(o.LedgersPerTopic), "--entries", fmt.Sprint(o.EntriesPerLedger),
		"--lose-schema-ledgers", "3", "--lose-schema-entries", "2", "--lose-topic-ledger", "--lose-entries-only",
		"--orphan-ledger", "--corrupt-crc", "--delete-schema-history", "1", "--reset-schema-history", "1", "--rust-producers")
	fleetEqualsOneCheck(t, map[string]string{"LEDGERMEDIC_DATA_DIR": dir, "LEDGERMEDIC_METADATA": url})
}

// shardParts writes the n parts of a sharded check of dir (in-process) and
// returns their files.
func shardParts(t *testing.T, dir string, n int, extra ...string) []string {
	t.Helper()
	out := t.TempDir()
	var files []string
	for i := range n {
		f := filepath.Join(out, fmt.Sprintf("shard-%d.jsonl", i))
		args := append([]string{"-d", dir, "check", "--shard", fmt.Sprintf("%d/%d", i, n), "-o", "jsonl", "--out", f}, extra...)
		if _, errOut, code := runApp(t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		files = append(files, f)
	}
	return files
}

// cutFile writes the first n bytes of file to a new file.
func cutFile(t *testing.T, file string, n int) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(out, b[:n], 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// lineEnd is the offset just past the n-th line of file.
func lineEnd(t *testing.T, file string, n int) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	off := 0
	sc := bufio.NewScanner(f)
	for i := 0; i < n && sc.Scan(); i++ {
		off += len(sc.Bytes()) + 1
	}
	return off
}

// TestMergeRefusesPartsThatDoNotFit: parts of other runs, clusters or shard
// counts, a missing or repeated shard and a cut file exit 2 naming the file;
// a file that cannot be opened exits 3.
func TestMergeRefusesPartsThatDoNotFit(t *testing.T) {
	dir := faultyFixture(t)
	other, _ := testutil.Fixture(t, fixtures.Options{Seed: 77})
	four := shardParts(t, dir, 4)
	three := shardParts(t, dir, 3)
	otherRun := shardParts(t, dir, 4, "--run", "another")
	otherCluster := shardParts(t, other, 4)
	otherKey := shardParts(t, dir, 4, "--index-key", "kafka.base.offset")
	plain := filepath.Join(t.TempDir(), "plain.jsonl")
	if _, errOut, code := runApp(t, "-d", dir, "check", "-o", "jsonl", "--out", plain); code != 1 {
		t.Fatalf("check --out: exit %d\n%s", code, errOut)
	}
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	midLine := cutFile(t, four[3], lineEnd(t, four[3], 5)+7)
	atLine := cutFile(t, four[3], lineEnd(t, four[3], 5))
	withoutEnd := cutFile(t, four[3], lineEnd(t, four[3], strings.Count(readFile(t, four[3]), "\n")-1))
	cases := []struct {
		name  string
		files []string
		code  int
		want  string // in the error, with the file it names
	}{
		{"missing shard", four[:3], 2, "shard 3/4"},
		{"repeated shard", []string{four[0], four[1], four[2], four[2], four[3]}, 2, four[2] + " is shard 2/4 again"},
		{"other shard count", []string{four[0], four[1], three[2], four[3]}, 2, three[2] + " is shard 2/3 of another run"},
		{"other run", []string{four[0], four[1], otherRun[2], four[3]}, 2, otherRun[2] + " is shard 2/4 of another run"},
		{"other cluster", []string{four[0], four[1], otherCluster[2], four[3]}, 2, otherCluster[2] + " is shard 2/4 of another run"},
		{"other options", []string{four[0], four[1], otherKey[2], four[3]}, 2, "--index-key kafka.base.offset"},
		{"cut in a line", []string{four[0], four[1], four[2], midLine}, 2, midLine + " line 6"},
		{"cut at a line", []string{four[0], four[1], four[2], atLine}, 2, atLine + " is cut short after line 5"},
		{"no end line", []string{four[0], four[1], four[2], withoutEnd}, 2, withoutEnd + " is cut short"},
		{"not a shard's output", []string{plain}, 2, plain + " line 1: not the output of check --shard"},
		{"empty file", []string{empty}, 2, empty + " is empty"},
		{"no such file", []string{four[0], filepath.Join(t.TempDir(), "nope.jsonl")}, 3, "nope.jsonl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runApp(t, append([]string{"merge"}, tc.files...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("merge: exit %d, stderr %q, stdout %d bytes; want exit %d naming %q", code, errOut, len(out), tc.code, tc.want)
			}
		})
	}
	// The same parts, complete, in any order and as a directory, merge.
	for _, files := range [][]string{four, {four[3], four[1], four[0], four[2]}, {filepath.Dir(four[0])}} {
		if _, errOut, code := runApp(t, append([]string{"merge"}, files...)...); code != 1 {
			t.Errorf("merge %v: exit %d, want 1\n%s", files, code, errOut)
		}
	}
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestShardFlagsNeedJSONL: a shard writes its part for merge, whole: other
// formats and the flags merge applies are usage errors.
func TestShardFlagsNeedJSONL(t *testing.T) {
	dir := faultyFixture(t)
	for _, args := range [][]string{
		{"check", "--shard", "0/2"},
		{"check", "--shard", "0/2", "-o", "json"},
		{"check", "--shard", "0/2", "-o", "jsonl", "--severity", "error"},
		{"check", "--shard", "2/2", "-o", "jsonl"},
		{"check", "--run", "x"},
		{"check", "-o", "jsonl", "--limit", "3"},
		{"check", "--limit", "-1"},
		{"merge"},
	} {
		if _, errOut, code := runApp(t, append([]string{"-d", dir}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
}
