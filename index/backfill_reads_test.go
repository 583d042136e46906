package index

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

// countingLedgers is a real ledger store that counts reads per entry, through
// Entry and through its entry readers alike.
type countingLedgers struct {
	store.LedgerStore
	mu    sync.Mutex
	reads map[[2]int64]int
}

func countReads(dd *datadir.DataDir) (*datadir.DataDir, *countingLedgers) {
	c := &countingLedgers{LedgerStore: dd.Ledgers, reads: make(map[[2]int64]int)}
	cdd := *dd
	cdd.Ledgers = c
	return &cdd, c
}

func (c *countingLedgers) count(l, e int64) {
	c.mu.Lock()
	c.reads[[2]int64{l, e}]++
	c.mu.Unlock()
}

func (c *countingLedgers) Entry(l, e int64) ([]byte, error) {
	c.count(l, e)
	return c.LedgerStore.Entry(l, e)
}

func (c *countingLedgers) EntryReader() store.EntryReader {
	return countingReader{c, c.LedgerStore.EntryReader()}
}

type countingReader struct {
	c *countingLedgers
	store.EntryReader
}

func (r countingReader) Peek(l, e int64, fn func([]byte) error) error {
	r.c.count(l, e)
	return r.EntryReader.Peek(l, e, fn)
}

// TestBackfillReadsEntry0Once: deciding whether a topic is indexed (the ML
// property, else entry 0 of a ledger, newest first) and planning its ledgers
// share one read of each entry 0.
func TestBackfillReadsEntry0Once(t *testing.T) {
	u := func(n int) []int { return uniform(n, 2) }
	topics := []tTopic{
		{name: "by-entry", ledgers: []tLedger{{batches: u(3)}, {batches: u(3)}, {batches: u(2)}}},
		{name: "by-entry-newest-unindexed", ledgers: []tLedger{{batches: u(3)}, {batches: u(3), noIndex: true}}},
		{name: "by-property", mlIndex: true, ledgers: []tLedger{{batches: u(3)}, {batches: u(3)}}},
		{name: "not-indexed", ledgers: []tLedger{{batches: u(3), noIndex: true}, {batches: u(3), noIndex: true}}},
		// Ledger 0 has its value: it is not planned, but the rule still asks its entry 0.
		{name: "half-done", ledgers: []tLedger{{batches: u(3), prop: "auto"}, {batches: u(2), noIndex: true}}},
	}
	dd, truth := buildDir(t, topics)
	cdd, c := countReads(dd)
	res := backfill(t, cdd, BackfillOptions{Workers: 2})
	for _, tt := range topics {
		for i, l := range truth[tPath(tt.name)] {
			if n := c.reads[[2]int64{l.ID, 0}]; n != 1 {
				t.Errorf("%s ledger #%d: entry 0 read %d times, want once", tt.name, i, n)
			}
		}
	}
	if len(c.reads) != 11 {
		t.Errorf("read %d entries, want the 11 entries 0: %v", len(c.reads), c.reads)
	}
	want := map[string]int{"by-entry": 3, "by-entry-newest-unindexed": 1, "by-property": 2, "not-indexed": 0, "half-done": 0}
	for _, tr := range res.Topics {
		if name := tr.Topic[len("persistent://acme/test/"):]; tr.Planned != want[name] {
			t.Errorf("%s: planned %d, want %d", name, tr.Planned, want[name])
		}
	}
	if len(findingsOf(res, KindNotIndexed)) != 1 || res.Skipped[SkipNotIndexed] != 2 || res.Skipped[SkipNoBrokerIndex] != 2 {
		t.Errorf("skipped %v, findings %+v", res.Skipped, res.Findings)
	}
}

// TestBackfillChunksKeepOrder: topics with more ledgers than one planner reads
// itself (probeChunk, read by the pool) and more topics than one hand-off
// (planChunk) plan as they would one by one, in path order, every ledger
// planned with its true value.
func TestBackfillChunksKeepOrder(t *testing.T) {
	var topics []tTopic
	for i := range 2*planChunk + 3 {
		n := 1 + i%3
		if i%7 == 0 {
			n = 2*probeChunk + 5
		}
		var ls []tLedger
		for range n {
			ls = append(ls, tLedger{batches: uniform(2, 1+i%2)})
		}
		topics = append(topics, tTopic{name: fmt.Sprintf("t%03d", i), mlIndex: i%2 == 0, ledgers: ls})
	}
	dd, truth := buildDir(t, topics)
	var planned []PlannedLedger
	var mu sync.Mutex
	res := backfill(t, dd, BackfillOptions{Workers: 3, Rate: 1e6, OnPlanned: func(p PlannedLedger) {
		mu.Lock()
		planned = append(planned, p)
		mu.Unlock()
	}})
	if len(res.Topics) != len(topics) {
		t.Fatalf("%d topics, want %d", len(res.Topics), len(topics))
	}
	k := 0
	for i, tr := range res.Topics {
		name := topics[i].name
		if tr.Path != tPath(name) || tr.Planned != len(topics[i].ledgers) {
			t.Fatalf("topic #%d: %s planned %d, want %s planned %d", i, tr.Path, tr.Planned, tPath(name), len(topics[i].ledgers))
		}
		for j, l := range truth[tPath(name)] {
			if p := planned[k]; p.LedgerID != l.ID || p.Value != l.First || p.Source != SourceEntry0 {
				t.Fatalf("%s ledger #%d: planned %+v, want ledger %d value %d", name, j, p, l.ID, l.First)
			}
			k++
		}
	}
	if k != len(planned) || res.Planned != int64(k) {
		t.Errorf("planned %d writes (%d counted), want %d", len(planned), res.Planned, k)
	}
}

// TestBackfillDoneTopicReadsNothing: a topic whose ledgers all have the
// property is checked for continuity from the values alone, with no read.
func TestBackfillDoneTopicReadsNothing(t *testing.T) {
	u := func(n int) []int { return uniform(n, 2) }
	dd, _ := buildDir(t, []tTopic{
		{name: "done", mlIndex: true, ledgers: []tLedger{{batches: u(4), prop: "auto"}, {batches: u(4), prop: "auto"}}},
		// 3 is less than ledger 0's 4 entries after its first index 0.
		{name: "done-broken", mlIndex: true, ledgers: []tLedger{{batches: u(4), prop: "auto"}, {batches: u(4), prop: "3"}}},
	})
	cdd, c := countReads(dd)
	res := backfill(t, cdd, BackfillOptions{})
	if len(c.reads) != 0 {
		t.Errorf("read %v, want nothing", c.reads)
	}
	cf := findingsOf(res, KindContinuity)
	if len(cf) != 1 || cf[0].Path != tPath("done-broken") || res.Planned != 0 || res.Had != 4 {
		t.Errorf("planned %d, had %d, continuity findings %+v", res.Planned, res.Had, cf)
	}
}
