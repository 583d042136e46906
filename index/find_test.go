package index

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
)

// findCases are small topics covering the shapes find must handle.
func findCases() []tTopic {
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(props []string, sizes ...[]int) []tLedger {
		out := make([]tLedger, len(sizes))
		for i, s := range sizes {
			out[i] = tLedger{batches: s, prop: props[i%len(props)]}
		}
		return out
	}
	r := func(n int) []int { return randomBatches(rng, n, 7) }
	return []tTopic{
		{name: "all-props", ledgers: mk([]string{"auto"}, r(5), r(8), r(1), r(13), r(4))},
		{name: "no-props", ledgers: mk([]string{""}, r(5), r(8), r(1), r(13), r(4))},
		{name: "mixed", ledgers: mk([]string{"auto", "", ""}, r(6), r(3), r(9), r(2), r(11), r(5), r(7))},
		{name: "mixed-first-missing", ledgers: mk([]string{"", "auto"}, r(6), r(3), r(9), r(2), r(11))},
		{name: "singles", ledgers: mk([]string{"auto"}, uniform(9, 1), uniform(16, 1), uniform(1, 1))},
		{name: "uniform-batches", ledgers: mk([]string{"auto"}, uniform(10, 5), uniform(10, 5), uniform(10, 5))},
		{name: "empty-between", ledgers: mk([]string{"auto"}, r(4), nil, r(6), nil, r(3))},
		{name: "open-last", open: true, enc: formats.Encoding{Compressed: true, Codec: mlpb.CompressionType_ZSTD},
			ledgers: mk([]string{"auto", "auto", ""}, r(7), r(5), r(9))},
		{name: "open-last-with-prop", open: true, enc: formats.Encoding{Compressed: true, Codec: mlpb.CompressionType_LZ4},
			ledgers: mk([]string{"auto"}, r(7), r(5), r(9))},
		{name: "one-ledger", ledgers: mk([]string{"auto"}, r(33))},
	}
}

func TestFindOffsetMatchesBruteForce(t *testing.T) {
	topics := findCases()
	dd, truth := buildDir(t, topics)
	ctx := context.Background()
	for _, tt := range topics {
		t.Run(tt.name, func(t *testing.T) {
			path := tPath(tt.name)
			info, _, _ := loadInfo(t, dd, path)
			last := truth[path][len(truth[path])-1].Last
			all := scanAll(t, dd, info)
			for target := int64(0); target <= last+3; target++ {
				wantPos, wantE, wantOK := all.offset(target)
				for _, legacy := range []bool{false, true} {
					a, err := FindOffset(ctx, dd.Ledgers, info, target, FindOptions{Legacy: legacy})
					if err != nil {
						t.Fatalf("offset %d legacy=%v: %v", target, legacy, err)
					}
					if a.Found != wantOK || a.PastEnd == wantOK {
						t.Fatalf("offset %d legacy=%v: found=%v pastEnd=%v, brute force found=%v", target, legacy, a.Found, a.PastEnd, wantOK)
					}
					if !wantOK {
						continue
					}
					if a.Position != wantPos || a.Base != wantE.Base || a.Last != wantE.Last {
						t.Fatalf("offset %d legacy=%v: got %v [%d,%d] via %s, brute force %v [%d,%d]",
							target, legacy, a.Position, a.Base, a.Last, a.Method, wantPos, wantE.Base, wantE.Last)
					}
					checkCost(t, dd, a, info, target)
				}
			}
		})
	}
}

// checkCost holds an indexed search to its promise: one ledger, at most
// ⌈log2 E⌉+1 entry reads (one more when the answer is the next ledger's entry 0).
func checkCost(t *testing.T, dd *datadir.DataDir, a *Answer, info *mlpb.ManagedLedgerInfo, target int64) {
	t.Helper()
	if a.Method != MethodIndex || !a.Found {
		return
	}
	var entries int64
	for _, li := range info.GetLedgerInfo() {
		if li.GetLedgerId() == a.Position.LedgerID {
			entries = li.GetEntries()
		}
	}
	if entries == 0 { // the open ledger: count what the store holds
		last, err := dd.Ledgers.LastEntry(a.Position.LedgerID)
		if err != nil {
			t.Fatal(err)
		}
		entries = last + 1
	}
	if limit := ceilLog2(entries) + 1; a.EntryReads > limit || a.LedgersTouched != 1 {
		t.Errorf("offset %d: %d reads over %d ledgers, want <= %d in one ledger (E=%d)", target, a.EntryReads, a.LedgersTouched, limit, entries)
	}
}

func TestFindMethodAndNotes(t *testing.T) {
	topics := findCases()
	dd, _ := buildDir(t, topics)
	cases := []struct {
		topic  string
		target int64
		method string
		notes  bool
	}{
		{"all-props", 3, MethodIndex, false},
		{"no-props", 3, MethodLegacy, true},
		{"mixed", 30, MethodMixed, true},
		{"singles", 12, MethodIndex, false},
	}
	for _, c := range cases {
		info, _, _ := loadInfo(t, dd, tPath(c.topic))
		a, err := FindOffset(context.Background(), dd.Ledgers, info, c.target, FindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Method != c.method || (len(a.Notes) > 0) != c.notes {
			t.Errorf("%s offset %d: method %s notes %q, want %s notes=%v", c.topic, c.target, a.Method, a.Notes, c.method, c.notes)
		}
	}
}

func TestFindOffsetLargeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var ledgers []tLedger
	for i := range 60 {
		prop := "auto"
		if i%9 == 4 || i%9 == 5 {
			prop = "" // a few unknown spans
		}
		ledgers = append(ledgers, tLedger{batches: randomBatches(rng, 5+rng.IntN(120), 10), prop: prop})
	}
	topics := []tTopic{{name: "large", ledgers: ledgers, open: true, enc: formats.Encoding{Compressed: true, Codec: mlpb.CompressionType_SNAPPY}}}
	dd, truth := buildDir(t, topics)
	path := tPath("large")
	info, _, _ := loadInfo(t, dd, path)
	tr := truth[path]
	last := tr[len(tr)-1].Last
	all := scanAll(t, dd, info)
	targets := []int64{0, last, last + 1, last + 1000}
	for _, l := range tr { // ledger edges, where off-by-ones live
		targets = append(targets, l.First, l.Last, l.Last+1)
	}
	for range 3000 {
		targets = append(targets, rng.Int64N(last+1))
	}
	ctx := context.Background()
	for _, target := range targets {
		wantPos, _, wantOK := all.offset(target)
		a, err := FindOffset(ctx, dd.Ledgers, info, target, FindOptions{})
		if err != nil {
			t.Fatalf("offset %d: %v", target, err)
		}
		if a.Found != wantOK || (wantOK && a.Position != wantPos) {
			t.Fatalf("offset %d: got %v found=%v (%s), want %v found=%v", target, a.Position, a.Found, a.Method, wantPos, wantOK)
		}
		if wantOK && (target < a.Base && a.Position.EntryID != 0 || target > a.Last) {
			t.Fatalf("offset %d: entry %v holds [%d,%d]", target, a.Position, a.Base, a.Last)
		}
		checkCost(t, dd, a, info, target)
	}
}

func TestFindTimeMatchesBruteForce(t *testing.T) {
	topics := findCases()
	dd, _ := buildDir(t, topics)
	ctx := context.Background()
	for _, tt := range topics {
		info, _, _ := loadInfo(t, dd, tPath(tt.name))
		all := scanAll(t, dd, info)
		// Entries are 10 ms apart; step 3 ms to land before, on and after them.
		for ms := int64(tBaseTime - 5); ms < tBaseTime+10*200; ms += 3 {
			wantPos, wantOK := all.time(uint64(ms))
			for _, legacy := range []bool{false, true} {
				a, err := FindTime(ctx, dd.Ledgers, info, ms, FindOptions{Legacy: legacy})
				if err != nil {
					t.Fatalf("%s time %d: %v", tt.name, ms, err)
				}
				if a.Found != wantOK || (wantOK && a.Position != wantPos) {
					t.Fatalf("%s time %d legacy=%v: got %v found=%v, want %v found=%v", tt.name, ms, legacy, a.Position, a.Found, wantPos, wantOK)
				}
			}
		}
	}
}

func TestFindOffloadedLedger(t *testing.T) {
	topics := []tTopic{{name: "off", ledgers: []tLedger{
		{batches: uniform(4, 2), prop: "auto"},
		{batches: uniform(5, 3), prop: "auto", offloaded: true},
		{batches: uniform(4, 2), prop: "auto"},
	}}}
	dd, truth := buildDir(t, topics)
	path := tPath("off")
	info, _, _ := loadInfo(t, dd, path)
	tr := truth[path]
	a, err := FindOffset(context.Background(), dd.Ledgers, info, tr[1].First+2, FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.NotLocal || a.Position.LedgerID != tr[1].ID || a.EntryReads != 0 || len(a.Notes) == 0 {
		t.Fatalf("got %+v, want the offloaded ledger %d named without reads", a, tr[1].ID)
	}
	// Legacy cannot search the offloaded ledger, but offsets are continuous: the
	// gap before the next local entry is that ledger, as the indexed search says.
	a, err = FindOffset(context.Background(), dd.Ledgers, info, tr[1].First+2, FindOptions{Legacy: true})
	if err != nil {
		t.Fatal(err)
	}
	if !a.NotLocal || a.Position != (Position{LedgerID: tr[1].ID, EntryID: -1}) || len(a.Notes) < 2 {
		t.Fatalf("legacy: got %+v, want the offloaded ledger %d", a, tr[1].ID)
	}
}

func TestFindRejectsNegative(t *testing.T) {
	dd, _ := buildDir(t, findCases()[:1])
	info, _, _ := loadInfo(t, dd, tPath("all-props"))
	if _, err := FindOffset(context.Background(), dd.Ledgers, info, -1, FindOptions{}); err == nil {
		t.Error("offset -1 accepted")
	}
	if _, err := FindTime(context.Background(), dd.Ledgers, info, -1, FindOptions{}); err == nil {
		t.Error("time -1 accepted")
	}
}

func TestLowerBoundReadBound(t *testing.T) {
	// Property: for every size and target, lowerBound finds the first satisfying
	// entry within ⌈log2 n⌉+1 probes, with and without (even wrong) interpolation.
	rng := rand.New(rand.NewPCG(3, 4))
	for n := int64(1); n <= 300; n++ {
		base := make([]int64, n)
		lastIdx := make([]int64, n)
		var idx int64 = -1
		for i := range n {
			base[i] = idx + 1
			idx += 1 + rng.Int64N(9)
			lastIdx[i] = idx
		}
		for _, target := range []int64{0, rng.Int64N(idx + 1), idx, idx + 1} {
			for _, ip := range []*interpolation{nil, {Target: target, LoOff: 0, HiOff: idx}, {Target: target, LoOff: 0, HiOff: idx / 7}} {
				reads := 0
				got, _, ok, err := lowerBound(context.Background(), n, byOffset(target), func(i int64) (EntryInfo, error) {
					reads++
					return EntryInfo{Base: base[i], Last: lastIdx[i], HasIndex: true}, nil
				}, ip)
				if err != nil {
					t.Fatal(err)
				}
				want := int64(0)
				for want < n && lastIdx[want] < target {
					want++
				}
				if ok != (want < n) || (ok && got != want) {
					t.Fatalf("n=%d target=%d: got %d ok=%v, want %d", n, target, got, ok, want)
				}
				if reads > ceilLog2(n)+1 {
					t.Fatalf("n=%d target=%d: %d reads > %d", n, target, reads, ceilLog2(n)+1)
				}
			}
		}
	}
}

// TestFindOnGeneratedFixtures checks every offset of every indexed managed ledger
// of generated clusters, with the property on every ledger, on none, and after a
// back-fill (which leaves the offloaded first ledger without one).
func TestFindOnGeneratedFixtures(t *testing.T) {
	for _, withProp := range []bool{false, true} {
		dd, m := generate(t, fixtures.Options{Seed: 21, WithFirstEntryIndex: withProp})
		if !withProp {
			backfill(t, dd, BackfillOptions{Apply: true})
		}
		ctx := context.Background()
		for _, ml := range m.ManagedLedgers {
			if !ml.Indexed {
				continue
			}
			info, _, _ := loadInfo(t, dd, ml.Path)
			all := scanAll(t, dd, info)
			for target := int64(0); target <= ml.LastIndex+2; target++ {
				var offloaded *fixtures.MLLedger
				for i, l := range ml.Ledgers {
					if l.Offloaded && target >= l.FirstIndex && target <= l.LastIndex {
						offloaded = &ml.Ledgers[i]
					}
				}
				wantPos, _, wantOK := all.offset(target)
				for _, legacy := range []bool{false, true} {
					a, err := FindOffset(ctx, dd.Ledgers, info, target, FindOptions{Legacy: legacy})
					if err != nil {
						t.Fatalf("%s offset %d: %v", ml.Topic, target, err)
					}
					if a.NotLocal {
						if offloaded == nil || a.Position.LedgerID != offloaded.ID {
							t.Fatalf("%s offset %d: says offloaded ledger %d", ml.Topic, target, a.Position.LedgerID)
						}
						continue
					}
					if a.Found != wantOK || (wantOK && a.Position != wantPos) {
						t.Fatalf("%s offset %d (prop=%v legacy=%v): got %v found=%v via %s, want %v found=%v",
							ml.Topic, target, withProp, legacy, a.Position, a.Found, a.Method, wantPos, wantOK)
					}
				}
			}
		}
	}
}

// TestScanAgreesWithBuilder ties the brute-force answer key (which decodes entries
// with ParseEntryInfo) and FirstIndex to the indexes the builder wrote, so the
// searches are not only checked against the code they use.
func TestScanAgreesWithBuilder(t *testing.T) {
	topics := findCases()
	dd, truth := buildDir(t, topics)
	for _, tt := range topics {
		path := tPath(tt.name)
		info, _, _ := loadInfo(t, dd, path)
		all := scanAll(t, dd, info)
		next := int64(0) // every message offset appears once, in order
		for i, e := range all.info {
			if !e.HasIndex || e.Base != next || e.Last < e.Base {
				t.Fatalf("%s %v: [%d,%d] index=%v, want base %d", tt.name, all.pos[i], e.Base, e.Last, e.HasIndex, next)
			}
			next = e.Last + 1
		}
		for _, tr := range truth[path] {
			if tr.Entries == 0 {
				continue
			}
			first, err := FirstIndex(dd.Ledgers, tr.ID)
			if err != nil || first != tr.First {
				t.Errorf("%s ledger %d: FirstIndex %d (%v), builder wrote %d", tt.name, tr.ID, first, err, tr.First)
			}
		}
		if last := truth[path][len(truth[path])-1].Last; next-1 != last {
			t.Errorf("%s: scan ends at %d, builder at %d", tt.name, next-1, last)
		}
	}
}
