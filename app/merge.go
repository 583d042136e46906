package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/report"
)

// A sharded check (check --shard I/N -o jsonl) writes its part as JSON lines:
// a "shard" line first (shardHeader), then check's own -o jsonl lines, its
// findings and coverage rows with their order, and an "end" line last that
// counts the lines before it. merge joins the N parts into the one result a
// single check gives, and refuses parts that do not belong together.

// shardHeader is the first line of a shard's output: which part of which run.
type shardHeader struct {
	Shard           string `json:"shard" table:"shard"` // "I/N"
	Index           int    `json:"index" table:"index"`
	Count           int    `json:"count" table:"count"`
	Run             string `json:"run,omitempty" table:"run"`
	Fingerprint     string `json:"fingerprint" table:"metadata fingerprint"`
	IndexKey        string `json:"index_key" table:"index key"`
	SkipMessageScan bool   `json:"skip_message_scan" table:"skip message scan"`
	ToolVersion     string `json:"tool_version" table:"tool version"`
}

// sameRun is what every shard of one run has in common (the header without
// the shard's own place).
func (h shardHeader) sameRun() shardHeader {
	h.Shard, h.Index = "", 0
	return h
}

// Names of a shard output's own lines.
const (
	shardTable = "shard"
	endTable   = "end"
)

// endLine is a shard output's last line.
type endLine struct {
	Table string `json:"table"`
	Lines int    `json:"lines"` // lines before this one
}

// printShard writes a shard's part of a check (its findings are its own: merge
// decides the exit code, so a shard that wrote its part exits 0).
func (e *env) printShard(c *cli.Context, o checkOptions, r checkResult) error {
	h := shardHeader{Shard: fmt.Sprintf("%d/%d", o.Shard.I, o.Shard.N), Index: o.Shard.I, Count: o.Shard.N, Run: o.Run,
		Fingerprint: r.stats.Fingerprint, IndexKey: cluster.KeyFor(o.IndexKey), SkipMessageScan: o.SkipMessageScan, ToolVersion: Version()}
	all := r.allFindings()
	doc := &report.Document{FindingStream: &all}
	doc.Add(report.Fields(shardTable, "Shard", &h), r.counts.SummaryTable(), r.stats.Table(), r.coverageTable())
	lc := &lineCounter{w: e.Stdout}
	sub := *e
	sub.Stdout = lc
	if err := sub.printFitted(c, doc, 0); err != nil {
		return err
	}
	b, _ := json.Marshal(endLine{Table: endTable, Lines: lc.lines})
	if _, err := fmt.Fprintf(e.Stdout, "%s\n", b); err != nil {
		return report.CannotOpen(fmt.Errorf("write output: %w", err))
	}
	return nil
}

// lineCounter counts the newlines written through it.
type lineCounter struct {
	w     io.Writer
	lines int
}

func (l *lineCounter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	l.lines += bytes.Count(p[:n], []byte("\n"))
	return n, err
}

// toOut runs print with stdout going to the file out ("": stdout itself). The
// file is written beside out and renamed into place only when print succeeded,
// so a file named out is always whole.
func (e *env) toOut(out string, print func(*env) error) error {
	if out == "" {
		return print(e)
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return report.CannotOpen(fmt.Errorf("--%s %s: %w", flagOut, out, err))
	}
	defer os.Remove(f.Name()) // a no-op after the rename
	w := bufio.NewWriter(f)
	sub := *e
	sub.Stdout = w
	perr := print(&sub)
	if perr != nil && !errors.Is(perr, report.ErrFindings) {
		f.Close()
		return perr
	}
	err = w.Flush()
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), out)
	}
	if err != nil {
		return report.CannotOpen(fmt.Errorf("--%s %s: %w", flagOut, out, err))
	}
	return perr
}

// mergeCommand is `merge FILE...`.
func (e *env) mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "join the outputs of check --shard I/N (-o jsonl) into the whole check's result",
		ArgsUsage: "FILE|DIR...",
		Description: "Reads the N outputs of one sharded check (a directory: every *.jsonl file in it) and prints\n" +
			"what one check of the whole cluster prints: the same findings in the same order, the same summary,\n" +
			"counts and coverage, and the same exit code (0 clean, 1 findings). It refuses (exit 2, naming the\n" +
			"file) outputs of different runs, clusters, metadata or shard counts, a missing or repeated shard,\n" +
			"and a file that is cut short. --severity, --limit, --coverage and -o work as for check.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: flagCoverage, Usage: "also print the firstEntryIndex coverage table"},
			&cli.StringFlag{Name: flagSeverity, Usage: "print only findings this serious or more: error, warning or info (the exit code still counts every finding)"},
			limitFlag(),
			&cli.StringFlag{Name: flagOut, Usage: "write the output to this file (written whole, then renamed into place) instead of stdout"},
		},
		Action: e.merge,
	}
}

func (e *env) merge(c *cli.Context) error {
	var o checkOptions
	if err := parseOutputOptions(c, &o); err != nil {
		return err
	}
	files, err := mergeInputs(c.Args().Slice())
	if err != nil {
		return err
	}
	// The shards' findings and coverage rows go to disk as they are read, sorted
	// into the whole check's order there: a big cluster's shards hold millions.
	m, err := inspect.NewShardMerge("")
	if err != nil {
		return report.CannotOpen(err)
	}
	defer m.Close()
	parts := make([]*shardPart, 0, len(files))
	for _, f := range files {
		p, err := readShardFile(f, m)
		if err != nil {
			return err
		}
		parts = append(parts, p)
	}
	parts, err = completeRun(parts)
	if err != nil {
		return err
	}
	stats := make([]*inspect.CheckStats, len(parts))
	for i, p := range parts {
		stats[i] = p.stats
		e.storeNotes = appendNew(e.storeNotes, p.storeNotes...)
	}
	st, err := inspect.MergeShardStats(stats)
	if err != nil {
		return report.BadInputf("merge: %v", err)
	}
	st.Fingerprint = ""
	r := checkResult{counts: m.Counts(), stats: st,
		findings: func(yield func(report.Finding) error) error { return m.Findings(c.Context, yield) },
		coverage: func(yield func(inspect.TopicCoverage) error) error { return m.Coverage(c.Context, yield) }}
	return e.toOut(o.Out, func(e *env) error { return e.printCheck(c, o, r) })
}

// appendNew appends the strings of add not yet in to.
func appendNew(to []string, add ...string) []string {
	for _, s := range add {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	return to
}

// mergeInputs expands the arguments: a directory stands for its *.jsonl files.
func mergeInputs(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, report.BadInputf("merge: name the outputs of check --shard (files, or a directory of *.jsonl)")
	}
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, report.CannotOpen(fmt.Errorf("merge: %w", err))
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(filepath.Join(a, "*.jsonl"))
		if err != nil {
			return nil, report.BadInputf("merge: %s: %v", a, err)
		}
		if len(m) == 0 {
			return nil, report.BadInputf("merge: %s holds no *.jsonl file", a)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}

// shardPart is one shard's output, read back: its findings and coverage rows
// went to the merge.
type shardPart struct {
	file       string
	header     shardHeader
	merge      *inspect.ShardMerge
	stats      *inspect.CheckStats
	storeNotes []string
}

// maxShardLine bounds one line of a shard's output: a finding or a row is small.
const maxShardLine = 16 << 20

// readShardFile reads and checks one shard's output, its findings and
// coverage rows into m.
func readShardFile(file string, m *inspect.ShardMerge) (*shardPart, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, report.CannotOpen(fmt.Errorf("merge: %w", err))
	}
	defer f.Close()
	p := &shardPart{file: file, merge: m, stats: &inspect.CheckStats{}}
	bad := func(line int, format string, args ...any) error {
		return report.BadInputf("merge: %s line %d: %s", file, line, fmt.Sprintf(format, args...))
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxShardLine)
	n, ended := 0, false
	for sc.Scan() {
		n++
		if ended {
			return nil, bad(n, "a line after the end line: two outputs in one file?")
		}
		line := sc.Bytes()
		var row struct {
			Table string `json:"table"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, bad(n, "not a JSON object (%v): a cut or damaged file?", err)
		}
		if n == 1 && row.Table != shardTable {
			return nil, bad(n, "not the output of check --shard (it starts with %q, not a %q line)", row.Table, shardTable)
		}
		if err := p.add(row.Table, line, n); err != nil {
			return nil, bad(n, "%v", err)
		}
		if row.Table == endTable {
			var end endLine
			if err := json.Unmarshal(line, &end); err != nil || end.Lines != n-1 {
				return nil, bad(n, "the end line counts %d lines before it, the file has %d", end.Lines, n-1)
			}
			ended = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, report.BadInputf("merge: %s line %d: %v", file, n+1, err)
	}
	switch {
	case n == 0:
		return nil, report.BadInputf("merge: %s is empty", file)
	case !ended:
		return nil, report.BadInputf("merge: %s is cut short after line %d: no end line (the shard did not finish writing)", file, n)
	}
	return p, nil
}

// add takes in one line of a shard's output.
func (p *shardPart) add(table string, line []byte, n int) error {
	switch table {
	case shardTable:
		if n != 1 {
			return fmt.Errorf("a second %q line", shardTable)
		}
		if err := json.Unmarshal(line, &p.header); err != nil {
			return err
		}
		if h := p.header; h.Count < 1 || h.Index < 0 || h.Index >= h.Count || h.Shard != fmt.Sprintf("%d/%d", h.Index, h.Count) {
			return fmt.Errorf("shard %q (index %d of %d) is not a shard", h.Shard, h.Index, h.Count)
		}
	case "findings":
		var f report.Finding
		if err := json.Unmarshal(line, &f); err != nil {
			return err
		}
		if f.Order == "" {
			return fmt.Errorf("finding %s %s has no order", f.Kind, f.Location)
		}
		return p.merge.AddFinding(f)
	case "stats":
		var r struct {
			Item  string `json:"item"`
			Count int64  `json:"count"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if !p.stats.SetStat(r.Item, r.Count) {
			return fmt.Errorf("stats item %q is not one check counts", r.Item)
		}
	case "coverage":
		var r struct {
			Topic       string `json:"topic"`
			Indexed     bool   `json:"indexed"`
			WithEntries int    `json:"ledgers_with_entries"`
			Covered     int    `json:"ledgers_with_property"`
			Order       string `json:"order"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.Order == "" {
			return fmt.Errorf("coverage row of %s has no order", r.Topic)
		}
		return p.merge.AddCoverage(inspect.TopicCoverage{Topic: r.Topic, Indexed: r.Indexed,
			WithEntries: r.WithEntries, Covered: r.Covered, Order: r.Order})
	case "extra":
		var r struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.Key == "store_notes" {
			if err := json.Unmarshal(r.Value, &p.storeNotes); err != nil {
				return err
			}
		}
	case "summary", "notes", endTable:
		// The summary is counted again from the findings; a shard has no notes of its own.
	default:
		return fmt.Errorf("table %q is not one of check's", table)
	}
	return nil
}

// completeRun checks that the parts are every shard of one run, once each, and
// returns them in shard order.
func completeRun(parts []*shardPart) ([]*shardPart, error) {
	first := parts[0]
	byIndex := make([]*shardPart, first.header.Count)
	for _, p := range parts {
		h := p.header
		if h.sameRun() != first.header.sameRun() {
			return nil, report.BadInputf("merge: %s is shard %s of another run than %s (%s): %s",
				p.file, h.Shard, first.file, first.header.Shard, runDifference(first.header, h))
		}
		if prev := byIndex[h.Index]; prev != nil {
			return nil, report.BadInputf("merge: %s is shard %s again (%s is too)", p.file, h.Shard, prev.file)
		}
		byIndex[h.Index] = p
	}
	var missing []string
	for i, p := range byIndex {
		if p == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.header.Count))
		}
	}
	if len(missing) > 0 {
		return nil, report.BadInputf("merge: shard %s of the run of %s missing: give the output of every shard",
			strings.Join(missing, ", "), first.file)
	}
	return byIndex, nil
}

// runDifference says how two shard headers differ.
func runDifference(a, b shardHeader) string {
	switch {
	case a.Count != b.Count:
		return fmt.Sprintf("%d shards, not %d", b.Count, a.Count)
	case a.Run != b.Run:
		return fmt.Sprintf("run %q, not %q", b.Run, a.Run)
	case a.Fingerprint != b.Fingerprint:
		return fmt.Sprintf("metadata fingerprint %s, not %s: another cluster, or the cluster changed between the shards' reads", b.Fingerprint, a.Fingerprint)
	case a.ToolVersion != b.ToolVersion:
		return fmt.Sprintf("ledgermedic %s, not %s", b.ToolVersion, a.ToolVersion)
	}
	return fmt.Sprintf("options --index-key %s --skip-message-scan=%v, not --index-key %s --skip-message-scan=%v",
		b.IndexKey, b.SkipMessageScan, a.IndexKey, a.SkipMessageScan)
}
