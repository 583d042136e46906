package report

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Severity of a finding. Errors and warnings make a command exit 1; info does not.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// severityRank orders severities most serious first.
var severityRank = map[Severity]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}

// Finding is one thing a check found: what, how bad, where, and what to do.
// check, JSON output and exit codes all derive from these values.
type Finding struct {
	Kind     string   `json:"kind"`
	Severity Severity `json:"severity"`
	Location string   `json:"location"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint,omitempty"`
	// Optional structured location, for machines.
	Topic    string `json:"topic,omitempty"`
	Path     string `json:"path,omitempty"`
	LedgerID *int64 `json:"ledger_id,omitempty"`
	EntryID  *int64 `json:"entry_id,omitempty"`
	Version  *int64 `json:"schema_version,omitempty"`
	// StoreDamage names the damaged store files (Badger tables, MANIFESTs; comma
	// separated) whose lost keys may explain this finding: it may be an artefact
	// of the damage rather than a Pulsar-level loss. A string keeps Finding comparable.
	StoreDamage string `json:"store_damage,omitempty"`
	// Order, in the output of one shard of a sharded check (check --shard), is
	// where the finding stands among its kind in the whole check's output: merge
	// sorts the shards' findings by it. Empty otherwise.
	Order string `json:"order,omitempty"`
}

// Int64 returns a pointer for the optional Finding fields.
func Int64(v int64) *int64 { return &v }

// Actionable reports whether any finding is an error or a warning.
func Actionable(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity.actionable() {
			return true
		}
	}
	return false
}

// actionable: errors and warnings make a command exit 1, info does not.
func (s Severity) actionable() bool { return s != SeverityInfo }

// atLeast reports whether s is as serious as least or more.
func (s Severity) atLeast(least Severity) bool { return severityRank[s] <= severityRank[least] }

// ParseSeverity reads a severity as users type it (--severity).
func ParseSeverity(s string) (Severity, error) {
	sev := Severity(strings.ToLower(s))
	if _, ok := severityRank[sev]; !ok {
		return "", fmt.Errorf("severity %q: want error, warning or info", s)
	}
	return sev, nil
}

// AtLeast returns the findings as serious as least or more, in their order.
func AtLeast(fs []Finding, least Severity) []Finding {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		if f.Severity.atLeast(least) {
			out = append(out, f)
		}
	}
	return out
}

// FirstOfEachKind keeps the first limit findings of each kind, in their order
// (limit 0: all), and says how many of each kind it left out (nil: none).
func FirstOfEachKind(fs []Finding, limit int) ([]Finding, map[string]int) {
	if limit <= 0 {
		return fs, nil
	}
	seen := map[string]int{}
	var left map[string]int
	out := make([]Finding, 0, min(len(fs), limit*8))
	for _, f := range fs {
		if seen[f.Kind]++; seen[f.Kind] <= limit {
			out = append(out, f)
			continue
		}
		if left == nil {
			left = map[string]int{}
		}
		left[f.Kind]++
	}
	return out, left
}

// SortFindings orders findings by severity, kind, then location, so output is stable.
func SortFindings(fs []Finding) {
	// slices, not sort.SliceStable: no reflection, no swapper (a back-fill sorts a
	// finding per open ledger).
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(severityRank[a.Severity], severityRank[b.Severity]),
			strings.Compare(a.Kind, b.Kind),
			strings.Compare(a.Location, b.Location))
	})
}

// FindingsTable is the per-finding view.
func FindingsTable(fs []Finding) *Table {
	t := NewTable("findings", fmt.Sprintf("Findings (%d)", len(fs)),
		"SEVERITY", "severity", "KIND", "kind", "LOCATION", "location", "MESSAGE", "message", "HINT", "hint")
	for _, f := range fs {
		t.Add(string(f.Severity), f.Kind, f.Location, f.Message, f.Hint)
	}
	return t
}

// SummaryTable counts findings by kind and severity.
func SummaryTable(fs []Finding) *Table { return CountFindings(fs).SummaryTable() }

// KindSeverity is a kind of finding at one severity: what the summary counts.
type KindSeverity struct {
	Kind     string
	Severity Severity
}

// Counts is how many findings there are of each kind and severity: what the
// summary, the exit code and the notes of a check say, without the findings
// themselves (a check that keeps its findings on disk counts them as they come).
type Counts map[KindSeverity]int

// CountFindings counts findings by kind and severity.
func CountFindings(fs []Finding) Counts {
	c := Counts{}
	for _, f := range fs {
		c.Add(f)
	}
	return c
}

// Add counts one finding.
func (c Counts) Add(f Finding) { c[KindSeverity{f.Kind, f.Severity}]++ }

// Total is the number of findings counted.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// Actionable reports whether any finding counted is an error or a warning.
func (c Counts) Actionable() bool {
	for k, v := range c {
		if v > 0 && k.Severity.actionable() {
			return true
		}
	}
	return false
}

// AtLeast is the counts of AtLeast's findings: those as serious as least or more.
func (c Counts) AtLeast(least Severity) Counts {
	out := Counts{}
	for k, v := range c {
		if k.Severity.atLeast(least) {
			out[k] = v
		}
	}
	return out
}

// firstOfEachKind is how many findings FirstOfEachKind lists of the counted
// ones, and how many of each kind it leaves out (nil: none).
func (c Counts) firstOfEachKind(limit int) (int, map[string]int) {
	byKind := map[string]int{}
	for k, v := range c {
		byKind[k.Kind] += v
	}
	listed := 0
	var left map[string]int
	for kind, n := range byKind {
		listed += min(n, limit)
		if n > limit {
			if left == nil {
				left = map[string]int{}
			}
			left[kind] = n - limit
		}
	}
	return listed, left
}

// SummaryTable is the summary of the counted findings: one row per kind and
// severity, the most serious first, then by kind.
func (c Counts) SummaryTable() *Table {
	keys := make([]KindSeverity, 0, len(c))
	for k, v := range c {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b KindSeverity) int {
		return cmp.Or(cmp.Compare(severityRank[a.Severity], severityRank[b.Severity]), strings.Compare(a.Kind, b.Kind))
	})
	t := NewTable("summary", "Summary", "KIND", "kind", "SEVERITY", "severity", "COUNT", "count")
	for _, k := range keys {
		t.Add(k.Kind, string(k.Severity), c[k])
	}
	return t
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
