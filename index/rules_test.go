package index

import (
	"context"
	"strconv"
	"testing"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
)

// The cases where index's copies of the cluster rules disagreed with inspect's
// (see cluster's tests for the rules themselves): a terminated topic's last
// ledger is still the open one, whose entries only the store counts; and a
// topic is indexed when any of its ledgers is, not only the newest.
func TestBackfillRulesThatDisagreed(t *testing.T) {
	u := func(n int) []int { return uniform(n, 2) }
	type ledgerWant struct {
		planned bool
		skip    string // reason when not planned ("" = none expected)
	}
	cases := []struct {
		topic   tTopic
		want    []ledgerWant
		kinds   map[string]int // findings of the topic by kind
		skipped int
	}{
		{
			// Was: the last LedgerInfo (0 entries) of a terminated topic was "empty".
			topic: tTopic{name: "terminated", open: true, terminated: true, ledgers: []tLedger{{batches: u(3)}, {batches: u(4)}}},
			want:  []ledgerWant{{planned: true}, {planned: true}},
			kinds: map[string]int{KindOpenLedger: 1, KindNotIndexed: 0},
		},
		{
			// Was: the newest local ledger had no index, so the whole topic was not-indexed.
			topic: tTopic{name: "interceptor-off-later", ledgers: []tLedger{{batches: u(3)}, {batches: u(3)}, {batches: u(2), noIndex: true}}},
			want:  []ledgerWant{{planned: true}, {planned: true}, {skip: SkipNoBrokerIndex}},
			kinds: map[string]int{KindNoBrokerIndex: 1, KindNotIndexed: 0},
		},
		{
			topic: tTopic{name: "interceptor-on-later", ledgers: []tLedger{{batches: u(3), noIndex: true}, {batches: u(3)}}},
			want:  []ledgerWant{{skip: SkipNoBrokerIndex}, {planned: true}},
			kinds: map[string]int{KindNoBrokerIndex: 1, KindNotIndexed: 0},
		},
		{
			topic: tTopic{name: "never-indexed", ledgers: []tLedger{{batches: u(3), noIndex: true}, {batches: u(3), noIndex: true}}},
			want:  []ledgerWant{{skip: SkipNotIndexed}, {skip: SkipNotIndexed}},
			kinds: map[string]int{KindNotIndexed: 1},
		},
	}
	for _, c := range cases {
		t.Run(c.topic.name, func(t *testing.T) {
			dd, truth := buildDir(t, []tTopic{c.topic})
			path := tPath(c.topic.name)
			res := backfill(t, dd, BackfillOptions{Apply: true})
			info, _, _ := loadInfo(t, dd, path)
			for i, w := range c.want {
				v, ok := formats.LedgerProperty(info.GetLedgerInfo()[i], cluster.FirstEntryIndexKey)
				wantV := strconv.FormatInt(truth[path][i].First, 10)
				if w.planned != ok || ok && v != wantV {
					t.Errorf("ledger #%d: %s=%q (set %v), want set %v to %s", i, cluster.FirstEntryIndexKey, v, ok, w.planned, wantV)
				}
				if w.skip != "" && res.Skipped[w.skip] == 0 {
					t.Errorf("ledger #%d: no %s skip (skipped %v)", i, w.skip, res.Skipped)
				}
			}
			for kind, n := range c.kinds {
				if got := len(findingsOf(res, kind)); got != n {
					t.Errorf("%d %s findings, want %d: %+v", got, kind, n, res.Findings)
				}
			}
		})
	}
}

// index find searched a terminated topic's last ledger as if it were empty.
func TestFindInTerminatedTopicsLastLedger(t *testing.T) {
	dd, truth := buildDir(t, []tTopic{{name: "t", open: true, terminated: true, mlIndex: true,
		ledgers: []tLedger{{batches: uniform(3, 2)}, {batches: uniform(4, 3)}}}})
	path := tPath("t")
	info, _, _ := loadInfo(t, dd, path)
	if info.TerminatedPosition == nil || info.GetLedgerInfo()[1].GetEntries() != 0 {
		t.Fatalf("builder: want a terminated topic whose last LedgerInfo has 0 entries, got %v", info)
	}
	last := truth[path][1]
	for _, legacy := range []bool{false, true} {
		a, err := FindOffset(context.Background(), dd.Ledgers, info, last.Last, FindOptions{Legacy: legacy})
		if err != nil {
			t.Fatal(err)
		}
		want := Position{LedgerID: last.ID, EntryID: last.Entries - 1}
		if !a.Found || a.Position != want {
			t.Errorf("legacy=%v: offset %d: found %v at %v, want %v", legacy, last.Last, a.Found, a.Position, want)
		}
	}
}
