package app

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/testutil"
)

func usageRows(t *testing.T, dir, topic string) []inspect.UsageRow {
	t.Helper()
	out, errOut, code := runApp(t, "-d", dir, "-o", "json", "inspect", "schema-usage", "--topic", topic)
	if code > 1 {
		t.Fatalf("schema-usage --topic %s: exit %d: %s", topic, code, errOut)
	}
	var doc struct {
		Rows []inspect.UsageRow `json:"schema_usage"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Rows
}

// TestSchemaUsageFirstLastAcrossPartitions: a partitioned topic's row counts
// every partition, so its first and last use are the earliest and latest
// publish over all partitions (as each partition alone reports them), and each
// names the partition it is in.
func TestSchemaUsageFirstLastAcrossPartitions(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 7})
	const base = "persistent://acme/orders/orders"
	type end struct {
		ms        uint64
		ledger    int64
		entry     int64
		partition int
	}
	first, last := map[string]end{}, map[string]end{}
	for p := range 3 {
		for _, r := range usageRows(t, dir, fmt.Sprintf("%s-partition-%d", base, p)) {
			f := end{*r.FirstPublishMs, r.First.LedgerID, r.First.EntryID, p}
			if e, ok := first[r.Ref]; !ok || f.ms < e.ms {
				first[r.Ref] = f
			}
			l := end{*r.LastPublishMs, r.Last.LedgerID, r.Last.EntryID, p}
			if e, ok := last[r.Ref]; !ok || l.ms > e.ms {
				last[r.Ref] = l
			}
		}
	}
	rows := usageRows(t, dir, base)
	if len(rows) == 0 {
		t.Fatal("no schema usage rows")
	}
	crosses := false
	for _, r := range rows {
		if r.FirstPartition == nil || r.LastPartition == nil {
			t.Fatalf("%s: first/last partition missing", r.Ref)
		}
		got := end{*r.FirstPublishMs, r.First.LedgerID, r.First.EntryID, *r.FirstPartition}
		if got != first[r.Ref] {
			t.Errorf("%s: first %+v, want the earliest over the partitions %+v", r.Ref, got, first[r.Ref])
		}
		got = end{*r.LastPublishMs, r.Last.LedgerID, r.Last.EntryID, *r.LastPartition}
		if got != last[r.Ref] {
			t.Errorf("%s: last %+v, want the latest over the partitions %+v", r.Ref, got, last[r.Ref])
		}
		crosses = crosses || *r.FirstPartition != *r.LastPartition
	}
	if !crosses {
		t.Error("no row's first and last lie in different partitions: the fixture no longer tests that")
	}
	// A topic that is not partitioned names no partition.
	for _, r := range usageRows(t, dir, "persistent://public/default/events") {
		if r.FirstPartition != nil || r.LastPartition != nil {
			t.Errorf("non-partitioned %s names a partition", r.Ref)
		}
	}
}
