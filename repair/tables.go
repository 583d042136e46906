package repair

import (
	"context"
	"encoding/hex"
	"strings"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/report"
)

// PlannedVersion is one lost schema version and what the plan does with it,
// as schema repair prints it.
type PlannedVersion struct {
	SchemaKey     string   `json:"schema_key" table:"SCHEMA KEY"`
	Version       *int64   `json:"version,omitempty" table:"VERSION"` // absent: the locator does not decode
	State         State    `json:"state" table:"STATE"`
	Action        Action   `json:"action" table:"ACTION"`
	NewLedgerID   *int64   `json:"new_ledger_id,omitempty" table:"NEW LEDGER"`
	Source        string   `json:"source,omitempty" table:"CANDIDATE SOURCE"`
	HashMatchText string   `json:"-" table:"HASH MATCH"`
	HashMatch     *bool    `json:"hash_match,omitempty"` // absent: no candidate, or a tombstone
	Hash          string   `json:"hash,omitempty" table:"HASH"`
	Messages      *int64   `json:"messages_needing,omitempty" table:"MESSAGES NEEDING"`
	NotesText     string   `json:"-" table:"NOTES"`
	Reason        string   `json:"reason,omitempty"`
	Notes         []string `json:"notes,omitempty"`
}

// PlanTable lists every lost version and what the plan does with it. withUsage
// adds how many stored messages need each version.
func PlanTable(rp *RepairPlan, withUsage bool) *report.Table {
	rows := make([]PlannedVersion, len(rp.Versions))
	for i, v := range rp.Versions {
		r := PlannedVersion{SchemaKey: v.SchemaKey, State: v.State, Action: v.Action, Source: v.Source,
			HashMatchText: v.HashMatch, Hash: hex.EncodeToString(v.Hash), Notes: v.Notes}
		if v.Version >= 0 {
			r.Version = report.Ptr(v.Version)
		}
		if v.NewLedgerID > 0 {
			r.NewLedgerID = report.Ptr(v.NewLedgerID)
		}
		switch v.HashMatch {
		case HashMatchYes:
			r.HashMatch = report.Ptr(true)
		case HashMatchNo:
			r.HashMatch = report.Ptr(false)
		}
		if withUsage && v.MessagesKnown {
			r.Messages = report.Ptr(v.Messages)
		}
		notes := v.Notes
		if v.Action == ActionUnresolved {
			r.Reason = v.Reason
			notes = append([]string{v.Reason}, notes...)
		}
		r.NotesText = strings.Join(notes, "; ")
		rows[i] = r
	}
	t := report.Rows("schema_repair", "Lost schema versions", rows)
	if !withUsage {
		t.DropColumn("MESSAGES NEEDING")
	}
	return t
}

// RefusedCandidate is a candidate refused for a version.
type RefusedCandidate struct {
	Source    string `json:"source" table:"SOURCE"`
	SchemaKey string `json:"schema_key" table:"SCHEMA KEY"`
	Version   int64  `json:"version" table:"VERSION"`
	Reason    string `json:"reason" table:"REASON"`
}

// RefusalTable lists candidates refused for a version.
func RefusalTable(rs []Refusal) *report.Table {
	rows := make([]RefusedCandidate, len(rs))
	for i, r := range rs {
		rows[i] = RefusedCandidate(r)
	}
	return report.Rows("refused_candidates", "Refused candidates", rows)
}

// UnusableInput is an input record that could not be read.
type UnusableInput struct {
	Source string `json:"source" table:"SOURCE"`
	Error  string `json:"error" table:"ERROR"`
}

// InputErrorTable lists input records that could not be read.
func InputErrorTable(errs []*InputError) *report.Table {
	rows := make([]UnusableInput, len(errs))
	for i, e := range errs {
		rows[i] = UnusableInput{e.Source, e.Err.Error()}
	}
	return report.Rows("input_errors", "Unusable input records", rows)
}

// SkippedVersion is a version a capture could not read.
type SkippedVersion struct {
	SchemaKey string `json:"schema_key" table:"SCHEMA KEY"`
	Version   *int64 `json:"version,omitempty" table:"VERSION"` // absent: the whole locator is unreadable
	Reason    string `json:"reason" table:"REASON"`
}

// SkippedTable lists versions a capture could not read, read from the stats'
// file as the table is printed.
func SkippedTable(ctx context.Context, st *CaptureStats) *report.Table {
	return report.Stream("skipped", "Unreadable versions (not captured)", func(yield func(SkippedVersion) error) error {
		return st.EachSkipped(ctx, func(s Skipped) error {
			row := SkippedVersion{SchemaKey: s.SchemaKey, Reason: s.Reason}
			if s.Version >= 0 {
				row.Version = report.Ptr(s.Version)
			}
			return yield(row)
		})
	})
}

// CollidingRow is one version number two schema histories use for different
// schemas, with the stored messages of each history.
type CollidingRow struct {
	SchemaKey    string      `json:"schema_key" table:"SCHEMA KEY"`
	Version      int64       `json:"version" table:"VERSION"`
	CurrentHash  string      `json:"current_hash,omitempty" table:"CURRENT HASH"`
	CapturedHash string      `json:"captured_hash,omitempty" table:"CAPTURED HASH"` // absent: a tombstone
	Registered   report.Time `json:"registered,omitzero" table:"REGISTERED"`
	RegisteredMs *int64      `json:"registered_ms,omitempty"`
	OldMessages  int64       `json:"-" table:"OLD-HISTORY MESSAGES"`
	OldEntries   int64       `json:"-" table:"OLD ENTRIES"`
	OldRange     string      `json:"-" table:"OLD RANGE"`
	OldPublished string      `json:"-" table:"OLD PUBLISHED"`
	NewMessages  int64       `json:"-" table:"NEW-HISTORY MESSAGES"`
	NewEntries   int64       `json:"-" table:"NEW ENTRIES"`
	NewRange     string      `json:"-" table:"NEW RANGE"`
	NewPublished string      `json:"-" table:"NEW PUBLISHED"`
	ResolvedText string      `json:"-" table:"RESOLUTION"`
	Old          SpanView    `json:"old"`                  // stored messages of the captured (older) history
	New          SpanView    `json:"new"`                  // stored messages of the current history
	Resolution   string      `json:"resolution,omitempty"` // old or new; absent: none given (refused)
}

// SpanView is the stored messages of one history: counts, the first and last
// position (ledger:entry) and publish times.
type SpanView struct {
	Messages       int64             `json:"messages"`
	Entries        int64             `json:"entries"`
	First          *cluster.Position `json:"first,omitempty"` // absent without messages
	Last           *cluster.Position `json:"last,omitempty"`
	FirstPublish   report.Time       `json:"first_publish_time,omitzero"`
	FirstPublishMs *int64            `json:"first_publish_time_ms,omitempty"`
	LastPublish    report.Time       `json:"last_publish_time,omitzero"`
	LastPublishMs  *int64            `json:"last_publish_time_ms,omitempty"`
}

func spanView(s MessageSpan) SpanView {
	v := SpanView{Messages: s.Messages, Entries: s.Entries}
	if s.Entries > 0 {
		v.First, v.Last = report.Ptr(s.First), report.Ptr(s.Last)
		v.FirstPublish, v.FirstPublishMs = report.Millis(s.FirstPublishMs), report.Ptr(s.FirstPublishMs)
		v.LastPublish, v.LastPublishMs = report.Millis(s.LastPublishMs), report.Ptr(s.LastPublishMs)
	}
	return v
}

// CollisionTable lists the versions two schema histories use for different
// schemas, and which stored messages belong to which history.
func CollisionTable(cs []Collision) *report.Table {
	var rows []CollidingRow
	for _, c := range cs {
		res := c.Resolution
		if res == "" {
			res = "none (refused)"
		}
		for _, v := range c.Versions {
			r := CollidingRow{SchemaKey: c.SchemaKey, Version: v.Version, CurrentHash: hex.EncodeToString(v.CurrentHash),
				CapturedHash: hex.EncodeToString(v.CapturedHash),
				OldMessages:  v.Old.Messages, OldEntries: v.Old.Entries, OldRange: spanRange(v.Old), OldPublished: spanPublished(v.Old),
				NewMessages: v.New.Messages, NewEntries: v.New.Entries, NewRange: spanRange(v.New), NewPublished: spanPublished(v.New),
				ResolvedText: res, Old: spanView(v.Old), New: spanView(v.New), Resolution: c.Resolution}
			if v.RegisteredMs >= 0 {
				r.Registered, r.RegisteredMs = report.Millis(v.RegisteredMs), report.Ptr(v.RegisteredMs)
			}
			rows = append(rows, r)
		}
	}
	return report.Rows("schema_collisions", "Schema version collisions", rows)
}

func spanRange(s MessageSpan) string {
	if s.Entries == 0 {
		return ""
	}
	return s.First.String() + " to " + s.Last.String()
}

func spanPublished(s MessageSpan) string {
	if s.Entries == 0 {
		return ""
	}
	return msTime(s.FirstPublishMs) + " to " + msTime(s.LastPublishMs)
}
