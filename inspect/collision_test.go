package inspect

import (
	"context"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/schemaid"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestSchemaVersionCollision: on reset histories, SchemaUsage reports one
// collision per reset topic for version 0, sets its status, and
// SplitVersionUsage splits the messages exactly as the manifest says; a
// deleted history and the healthy topics give no collision.
func TestSchemaVersionCollision(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 31, DeleteSchemaHistory: 1, ResetSchemaHistory: 2})
	r := usageRun(t, dir, UsageOptions{})
	collisions := map[string]bool{}
	for _, f := range r.Findings {
		if f.Kind == KindSchemaVersionCollision {
			if f.Version == nil || *f.Version != 0 || f.Path == "" {
				t.Errorf("collision finding %+v", f)
			}
			collisions[f.Topic] = true
		}
	}
	dd := usageOpen(t, dir, true)
	resets := 0
	for _, tu := range m.Topics {
		if len(tu.Histories) != 2 {
			if collisions[tu.Topic] {
				t.Errorf("%s: collision reported, but its history was not reset", tu.Topic)
			}
			continue
		}
		resets++
		if !collisions[tu.Topic] {
			t.Errorf("%s: no collision reported", tu.Topic)
		}
		for _, ru := range r.Topics {
			for _, u := range ru.Uses {
				if ru.Topic == tu.Topic && u.ID.Kind == schemaid.KindPulsarVersion && u.ID.Version == 0 && u.Status != UseCollision {
					t.Errorf("%s version 0: status %s", tu.Topic, u.Status)
				}
			}
		}
		var resetAt int64
		for _, s := range m.Schemas {
			if s.Key == tu.SchemaKey {
				resetAt = s.NewVersions[0].Timestamp
			}
		}
		topic, err := formats.ParseTopic(tu.Topic)
		if err != nil {
			t.Fatal(err)
		}
		splits, err := SplitVersionUsage(context.Background(), dd, topic, map[int64]int64{0: resetAt})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]map[int64][2]int64{}
		for _, h := range tu.Histories {
			want[h.History] = map[int64][2]int64{}
			for _, u := range h.Usage {
				want[h.History][*u.Version] = [2]int64{u.Messages, u.Entries}
			}
		}
		for _, s := range splits {
			old, new := [2]int64{s.Before.Messages, s.Before.Entries}, [2]int64{s.After.Messages, s.After.Entries}
			if s.Version != 0 {
				// Not split: all in After, and all of the old history.
				old, new = new, [2]int64{}
			}
			if old != want[fixtures.HistoryOld][s.Version] || new != want[fixtures.HistoryNew][s.Version] {
				t.Errorf("%s version %d: split old %v new %v, the manifest old %v new %v", tu.Topic, s.Version,
					old, new, want[fixtures.HistoryOld][s.Version], want[fixtures.HistoryNew][s.Version])
			}
		}
	}
	if resets != 2 || len(collisions) != 2 {
		t.Fatalf("%d resets, collisions %v", resets, collisions)
	}
	if _, err := SplitVersionUsage(context.Background(), dd, formats.TopicName{Domain: "persistent", Tenant: "no", Namespace: "such", LocalName: "topic"}, nil); err == nil {
		t.Error("a topic without managed ledgers split without an error")
	}
}
