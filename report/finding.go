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
		if f.Severity != SeverityInfo {
			return true
		}
	}
	return false
}

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
		if severityRank[f.Severity] <= severityRank[least] {
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
func SummaryTable(fs []Finding) *Table {
	type key struct {
		kind string
		sev  Severity
	}
	counts := map[key]int{}
	for _, f := range fs {
		counts[key{f.Kind, f.Severity}]++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].sev != keys[j].sev {
			return severityRank[keys[i].sev] < severityRank[keys[j].sev]
		}
		return keys[i].kind < keys[j].kind
	})
	t := NewTable("summary", "Summary", "KIND", "kind", "SEVERITY", "severity", "COUNT", "count")
	for _, k := range keys {
		t.Add(k.kind, string(k.sev), counts[k])
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
