package repair

import (
	"encoding/hex"
	"strings"

	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/report"
)

// PlanTable lists every lost version and what the plan does with it. withUsage
// adds how many stored messages need each version.
func PlanTable(rp *RepairPlan, withUsage bool) *report.Table {
	cols := []string{"SCHEMA KEY", "schema_key", "VERSION", "version", "STATE", "state", "ACTION", "action",
		"NEW LEDGER", "new_ledger", "CANDIDATE SOURCE", "source", "HASH MATCH", "hash_match", "HASH", "hash"}
	if withUsage {
		cols = append(cols, "MESSAGES NEEDING", "messages_needing")
	}
	cols = append(cols, "NOTES", "notes")
	t := report.NewTable("schema_repair", "Lost schema versions", cols...)
	for _, v := range rp.Versions {
		var version, newLedger any
		if v.Version >= 0 {
			version = v.Version
		}
		if v.NewLedgerID > 0 {
			newLedger = v.NewLedgerID
		}
		notes := v.Notes
		if v.Action == ActionUnresolved {
			notes = append([]string{v.Reason}, notes...)
		}
		row := []any{v.SchemaKey, version, string(v.State), string(v.Action), newLedger, v.Source, v.HashMatch, hexOrNil(v.Hash)}
		if withUsage {
			var n any
			if v.MessagesKnown {
				n = v.Messages
			}
			row = append(row, n)
		}
		row = append(row, strings.Join(notes, "; "))
		t.Add(row...)
	}
	return t
}

func hexOrNil(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return hex.EncodeToString(b)
}

// RefusalTable lists candidates refused for a version.
func RefusalTable(rs []Refusal) *report.Table {
	t := report.NewTable("refused_candidates", "Refused candidates",
		"SOURCE", "source", "SCHEMA KEY", "schema_key", "VERSION", "version", "REASON", "reason")
	for _, r := range rs {
		t.Add(r.Source, r.SchemaKey, r.Version, r.Reason)
	}
	return t
}

// InputErrorTable lists input records that could not be read.
func InputErrorTable(errs []*InputError) *report.Table {
	t := report.NewTable("input_errors", "Unusable input records", "SOURCE", "source", "ERROR", "error")
	for _, e := range errs {
		t.Add(e.Source, e.Err.Error())
	}
	return t
}

// ResultTable lists what the engine did with each item.
func ResultTable(res *mutate.Result) *report.Table {
	t := report.NewTable("applied", "Applied (run "+res.RunID+")",
		"ITEM", "item", "KIND", "kind", "TARGET", "target", "STATUS", "status", "DESCRIPTION", "description")
	for _, it := range res.Items {
		var target any = it.Path
		if it.Path == "" {
			target = it.LedgerID
		}
		t.Add(it.Index, string(it.Kind), target, string(it.Status), it.Description)
	}
	return t
}

// SkippedTable lists versions a capture could not read.
func SkippedTable(st CaptureStats) *report.Table {
	t := report.NewTable("skipped", "Unreadable versions (not captured)",
		"SCHEMA KEY", "schema_key", "VERSION", "version", "REASON", "reason")
	for _, s := range st.Skipped {
		var v any
		if s.Version >= 0 {
			v = s.Version
		}
		t.Add(s.SchemaKey, v, s.Reason)
	}
	return t
}

// CollisionTable lists the versions two schema histories use for different
// schemas, and which stored messages belong to which history.
func CollisionTable(cs []Collision) *report.Table {
	t := report.NewTable("schema_collisions", "Schema version collisions",
		"SCHEMA KEY", "schema_key", "VERSION", "version", "CURRENT HASH", "current_hash", "CAPTURED HASH", "captured_hash",
		"REGISTERED", "registered", "OLD-HISTORY MESSAGES", "old_messages", "OLD ENTRIES", "old_entries", "OLD RANGE", "old_range",
		"OLD PUBLISHED", "old_published", "NEW-HISTORY MESSAGES", "new_messages", "NEW ENTRIES", "new_entries",
		"NEW RANGE", "new_range", "NEW PUBLISHED", "new_published", "RESOLUTION", "resolution")
	for _, c := range cs {
		res := c.Resolution
		if res == "" {
			res = "none (refused)"
		}
		for _, v := range c.Versions {
			var registered any
			if v.RegisteredMs >= 0 {
				registered = msTime(v.RegisteredMs)
			}
			t.Add(c.SchemaKey, v.Version, hexOrNil(v.CurrentHash), hexOrNil(v.CapturedHash), registered,
				v.Old.Messages, v.Old.Entries, spanRange(v.Old), spanPublished(v.Old),
				v.New.Messages, v.New.Entries, spanRange(v.New), spanPublished(v.New), res)
		}
	}
	return t
}

func spanRange(s MessageSpan) any {
	if s.Entries == 0 {
		return nil
	}
	return s.First + " to " + s.Last
}

func spanPublished(s MessageSpan) any {
	if s.Entries == 0 {
		return nil
	}
	return msTime(s.FirstPublishMs) + " to " + msTime(s.LastPublishMs)
}
