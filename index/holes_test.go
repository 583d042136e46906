package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
)

// The property every search by offset keeps around holes (lost, offloaded, partly
// stored ledgers): whichever strategy runs (firstEntryIndex, firstEntryIndex+legacy,
// legacy; a fresh Finder or one reused across searches), on a topic indexed, partly
// indexed or not indexed, the answer is the same, and it is right: found at the
// entry holding the offset, or in the ledger that holds it when the store does not.

// ledgerTruth is what was written of one ledger with entries.
type ledgerTruth struct {
	id          int64
	first, last int64 // broker indexes of its first and last message
	offloaded   bool
}

// holeOracle answers from what was written, not from the code under test.
type holeOracle struct {
	ledgers []ledgerTruth
	stored  *scanned // every entry the store holds, in order
}

// check returns why a is not a right answer for offset t, or nil.
func (o *holeOracle) check(t int64, a *Answer) error {
	prevLast, nextBase := int64(-1), int64(1<<62)
	for i, e := range o.stored.info {
		switch {
		case e.Base <= t && t <= e.Last:
			if !a.Found || a.Position != o.stored.pos[i] || a.Base != e.Base || a.Last != e.Last {
				return fmt.Errorf("want found %v [%d,%d]", o.stored.pos[i], e.Base, e.Last)
			}
			return nil
		case e.Last < t:
			prevLast = e.Last
		case e.Base > t && nextBase > e.Base:
			nextBase = e.Base
		}
	}
	// t is between two stored entries: the ledgers with messages between them are the gap.
	var gap []ledgerTruth
	var holder *ledgerTruth
	for i, l := range o.ledgers {
		if l.first <= nextBase-1 && l.last >= prevLast+1 {
			gap = append(gap, l)
		}
		if l.first <= t && t <= l.last {
			holder = &o.ledgers[i]
		}
	}
	before := t < o.ledgers[0].first // the topic begins later (retention trimmed it)
	if len(gap) == 0 {
		switch {
		case holder != nil:
			return fmt.Errorf("oracle: offset %d in ledger %d, outside every gap", t, holder.id)
		case before:
			if !a.Found || a.Position != o.stored.pos[0] {
				return fmt.Errorf("want found %v, the first entry", o.stored.pos[0])
			}
		case !a.PastEnd:
			return fmt.Errorf("want past the end")
		}
		return nil
	}
	// Before the topic's first ledger, a hole there is named with its entry 0 when
	// its firstEntryIndex says the offset is before it, else as a whole.
	entryOK := a.Position.EntryID == -1 || before && a.Position.EntryID == 0 && a.Position.LedgerID == gap[0].id
	if a.Found || a.PastEnd || a.NotLocal == a.Lost || !entryOK {
		return fmt.Errorf("want lost or offloaded in one of %v", gap)
	}
	k := slices.IndexFunc(gap, func(l ledgerTruth) bool { return l.id == a.Position.LedgerID })
	switch {
	case k < 0:
		return fmt.Errorf("ledger %d is not in the gap %v", a.Position.LedgerID, gap)
	case len(gap) == 1 && holder != nil && holder.id != gap[0].id:
		return fmt.Errorf("oracle: offset %d held by %v, gap %v", t, holder, gap)
	case holder == nil && nextBase != 1<<62 && !before:
		// Only past the end can an offset be in no ledger: nothing stored after it
		// tells how far the trailing holes reach, so naming one of them is right.
		return fmt.Errorf("oracle: offset %d in no ledger, gap %v", t, gap)
	case a.NotLocal != gap[k].offloaded:
		return fmt.Errorf("ledger %d offloaded=%v, answer says offloaded=%v", gap[k].id, gap[k].offloaded, a.NotLocal)
	}
	return nil
}

// withoutIndex returns a copy of info whose ledgers keep firstEntryIndex only where keep says.
func withoutIndex(info *mlpb.ManagedLedgerInfo, keep func(i int) bool) *mlpb.ManagedLedgerInfo {
	out := proto.Clone(info).(*mlpb.ManagedLedgerInfo)
	for i, li := range out.GetLedgerInfo() {
		if !keep(i) {
			li.Properties = slices.DeleteFunc(li.Properties, func(kv *mlpb.KeyValue) bool { return kv.GetKey() == cluster.FirstEntryIndexKey })
		}
	}
	return out
}

// indexVariants are the states a topic's index can be in: as stored, none, and
// three random parts of it.
func indexVariants(rng *rand.Rand, info *mlpb.ManagedLedgerInfo) map[string]*mlpb.ManagedLedgerInfo {
	out := map[string]*mlpb.ManagedLedgerInfo{
		"as-stored": info,
		"none":      withoutIndex(info, func(int) bool { return false }),
	}
	for v := range 3 {
		seed := rng.Uint64()
		r := rand.New(rand.NewPCG(seed, uint64(v)))
		out[fmt.Sprintf("partly-%d", v)] = withoutIndex(info, func(int) bool { return r.IntN(2) == 0 })
	}
	return out
}

// holeTargets are a managed ledger's ledger edges and n random offsets up to past its end.
func holeTargets(rng *rand.Rand, ledgers []ledgerTruth, n int) []int64 {
	end := ledgers[len(ledgers)-1].last
	var out []int64
	for _, l := range ledgers {
		out = append(out, l.first, l.last, l.last+1)
	}
	for range n {
		out = append(out, rng.Int64N(end+4))
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// checkStrategiesAgree runs every strategy on every variant of info for every
// target, holds each answer to the oracle and the strategies to one another.
// It returns how many offsets it checked.
func checkStrategiesAgree(t *testing.T, dd *datadir.DataDir, name string, info *mlpb.ManagedLedgerInfo, o *holeOracle, targets []int64, rng *rand.Rand) int {
	t.Helper()
	ctx := context.Background()
	checked := 0
	for vname, vinfo := range indexVariants(rng, info) {
		reused := map[bool]*Finder{}
		for _, legacy := range []bool{false, true} {
			f, err := NewFinder(dd.Ledgers, vinfo, FindOptions{Metadata: dd.Metadata})
			if err != nil {
				t.Fatal(err)
			}
			reused[legacy] = f
		}
		methods := map[string]bool{}
		for _, target := range targets {
			var answers []*Answer
			var labels []string
			for _, legacy := range []bool{false, true} {
				a, err := FindOffset(ctx, dd.Ledgers, vinfo, target, FindOptions{Legacy: legacy, Metadata: dd.Metadata})
				if err != nil {
					t.Fatalf("%s %s offset %d legacy=%v: %v", name, vname, target, legacy, err)
				}
				b, err := reused[legacy].Offset(ctx, target, legacy)
				if err != nil {
					t.Fatalf("%s %s offset %d legacy=%v (reused finder): %v", name, vname, target, legacy, err)
				}
				answers = append(answers, a, b)
				labels = append(labels, a.Method, a.Method+" (reused finder)")
				methods[a.Method] = true
			}
			for i, a := range answers {
				if err := o.check(target, a); err != nil {
					t.Fatalf("%s %s offset %d via %s: got %s %v: %v\nnotes: %q", name, vname, target, labels[i], a.Result(), a.Position, err, a.Notes)
				}
				// --compare is the first against the legacy one: it must never disagree.
				if !a.Agrees(answers[0]) || a.Base != answers[0].Base || a.Last != answers[0].Last {
					t.Fatalf("%s %s offset %d: %s says %s %v, %s says %s %v", name, vname, target,
						labels[0], answers[0].Result(), answers[0].Position, labels[i], a.Result(), a.Position)
				}
			}
			checked++
		}
		t.Logf("%s %s: methods %v", name, vname, methods)
	}
	return checked
}

// holeTopics are hand-built topics with holes of every kind and place.
func holeTopics(rng *rand.Rand) []tTopic {
	r := func(n int) []int { return randomBatches(rng, n, 6) }
	L := func(n int) tLedger { return tLedger{batches: r(n), prop: "auto"} }
	lost := func(n int, prop string) tLedger { return tLedger{batches: r(n), lost: "node+entries", prop: prop} }
	gone := func(n int, prop string) tLedger { return tLedger{batches: r(n), lost: "entries", prop: prop} }
	off := func(n int, prop string) tLedger { return tLedger{batches: r(n), offloaded: true, prop: prop} }
	tail := func(n, drop int) tLedger { return tLedger{batches: r(n), dropTail: drop, prop: "auto"} }
	head := func(n int) tLedger { return tLedger{batches: r(n), noEntry0: true, prop: "auto"} }
	return []tTopic{
		{name: "lost-between", ledgers: []tLedger{L(20), lost(20, ""), L(10)}, open: true},
		{name: "lost-between-indexed", ledgers: []tLedger{L(20), lost(20, "auto"), L(10)}},
		{name: "lost-entries-between", ledgers: []tLedger{L(9), gone(12, ""), L(7), L(5)}},
		{name: "offloaded-first", ledgers: []tLedger{off(8, ""), L(9), L(6)}, open: true},
		{name: "offloaded-middle", ledgers: []tLedger{L(8), off(9, "auto"), L(6), off(5, "auto"), L(4)}},
		{name: "lost-first", ledgers: []tLedger{lost(7, ""), L(9), L(6)}},
		{name: "lost-last", ledgers: []tLedger{L(7), L(9), lost(6, "")}},
		{name: "adjacent-holes", ledgers: []tLedger{L(6), lost(5, ""), off(4, "auto"), gone(6, ""), L(8), off(3, ""), lost(4, "auto"), L(5)}, open: true},
		{name: "partly-stored", ledgers: []tLedger{L(6), tail(9, 3), L(7), head(8), L(5), tail(6, 6), L(4)}},
		{name: "partly-stored-open", ledgers: []tLedger{L(10), head(7), tail(8, 2)}, open: true},
	}
}

// TestFindStrategiesAgreeOnHoles: hand-built topics with holes of every kind
// and place: lost (no node, or a node and no entries), offloaded, partly stored
// (head or tail missing), next to one another, first, last, before the open ledger.
func TestFindStrategiesAgreeOnHoles(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	topics := holeTopics(rng)
	dd, truth := buildDir(t, topics)
	checked := 0
	for _, tt := range topics {
		t.Run(tt.name, func(t *testing.T) {
			path := tPath(tt.name)
			info, _, _ := loadInfo(t, dd, path)
			o := &holeOracle{stored: scanAll(t, dd, info)}
			for i, tr := range truth[path] {
				last := tr.Last
				if tt.open && i == len(tt.ledgers)-1 {
					// The open ledger has what the store holds: its count is not in metadata.
					last = o.stored.info[len(o.stored.info)-1].Last
				}
				if tr.Entries > 0 {
					o.ledgers = append(o.ledgers, ledgerTruth{id: tr.ID, first: tr.First, last: last, offloaded: tt.ledgers[i].offloaded})
				}
			}
			checked += checkStrategiesAgree(t, dd, tt.name, info, o, holeTargets(rng, o.ledgers, 150), rng)
			// Retention trimmed the first ledger: offsets before the topic begins.
			trimmed := proto.Clone(info).(*mlpb.ManagedLedgerInfo)
			trimmed.LedgerInfo = trimmed.LedgerInfo[1:]
			to := &holeOracle{ledgers: o.ledgers[1:], stored: scanAll(t, dd, trimmed)}
			checked += checkStrategiesAgree(t, dd, tt.name+" trimmed", trimmed, to, holeTargets(rng, to.ledgers, 40), rng)
		})
	}
	if checked < 1000 {
		t.Errorf("checked %d offsets, want >= 1000", checked)
	}
}

// TestFindStrategiesAgreeAfterBackfill: generated clusters with a lost ledger, a
// ledger whose entries are lost, an offloaded first ledger and open ledgers,
// searched before a back-fill, after a real one (index.Backfill, applied through
// the mutation engine, which leaves the lost ledgers without a value), and with
// parts of the index taken away.
func TestFindStrategiesAgreeAfterBackfill(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2))
	dd, m := generate(t, fixtures.Options{Seed: 7, LoseTopicLedger: true, LoseEntriesOnly: true})
	kinds := map[string]bool{}
	checked := 0
	for _, state := range []string{"before-backfill", "after-backfill"} {
		if state == "after-backfill" {
			res := backfill(t, dd, BackfillOptions{Apply: true})
			if res.Written == 0 || len(res.Runs) == 0 {
				t.Fatalf("back-fill updated nothing: %+v", res)
			}
		}
		for _, ml := range m.ManagedLedgers {
			if !ml.Indexed {
				continue
			}
			info, _, _ := loadInfo(t, dd, ml.Path)
			o := &holeOracle{stored: scanAll(t, dd, info)}
			for _, l := range ml.Ledgers {
				if l.FirstIndex >= 0 && l.LastIndex >= l.FirstIndex {
					o.ledgers = append(o.ledgers, ledgerTruth{id: l.ID, first: l.FirstIndex, last: l.LastIndex, offloaded: l.Offloaded})
				}
				switch {
				case l.Offloaded:
					kinds["offloaded"] = true
				case l.Lost != "":
					kinds["lost "+l.Lost] = true
				case l.Open:
					kinds["open"] = true
				}
			}
			checked += checkStrategiesAgree(t, dd, state+" "+ml.Topic, info, o, holeTargets(rng, o.ledgers, 60), rng)
		}
	}
	for _, k := range []string{"offloaded", "open", "lost " + fixtures.LostNodeAndEntries} {
		if !kinds[k] {
			t.Errorf("the fixture has no %s ledger on an indexed topic (kinds %v)", k, kinds)
		}
	}
	if checked < 1000 {
		t.Errorf("checked %d offsets, want >= 1000", checked)
	}
}

// TestFindLostLedgerAfterBackfill is the report's case in the index package: an
// offset in a lost ledger between two back-filled ones is in that lost ledger.
func TestFindLostLedgerAfterBackfill(t *testing.T) {
	topics := []tTopic{{name: "t", ledgers: []tLedger{
		{batches: uniform(20, 2), prop: "auto"}, {batches: uniform(20, 2), lost: "node+entries"}, {batches: uniform(10, 2), prop: "auto"},
	}, open: true}}
	dd, truth := buildDir(t, topics)
	tr := truth[tPath("t")]
	info, _, _ := loadInfo(t, dd, tPath("t"))
	for _, legacy := range []bool{false, true} {
		a, err := FindOffset(context.Background(), dd.Ledgers, info, tr[1].First+5, FindOptions{Legacy: legacy, Metadata: dd.Metadata})
		if err != nil {
			t.Fatal(err)
		}
		if !a.Lost || a.Position != (Position{LedgerID: tr[1].ID, EntryID: -1}) {
			t.Errorf("legacy=%v (%s): got %s %v, want lost in ledger %d; notes %q", legacy, a.Method, a.Result(), a.Position, tr[1].ID, a.Notes)
		}
	}
}

// writtenEntry is one entry the builder wrote, stored or not.
type writtenEntry struct {
	pos    Position
	ledger int // position in the topic's ledgers
	time   uint64
}

// TestFindTimeStrategiesAgreeOnHoles: the same topics searched by time. Times are
// not continuous, so the rule is the ledger's close time: the answer is the first
// entry at or after the target when the store holds it, else the ledger that holds
// it, lost or offloaded (or one just before it that closed exactly at the target:
// a close time is after its last entry).
func TestFindTimeStrategiesAgreeOnHoles(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	topics := holeTopics(rng)
	dd, truth := buildDir(t, topics)
	ctx := context.Background()
	checked := 0
	for _, tt := range topics {
		path := tPath(tt.name)
		info, _, _ := loadInfo(t, dd, path)
		stored := map[Position]bool{}
		for _, p := range scanAll(t, dd, info).pos {
			stored[p] = true
		}
		// The builder's clock: every entry 10 ms after the one before; a closed
		// ledger's timestamp 1 ms after its last entry.
		var written []writtenEntry
		clock := uint64(tBaseTime)
		closed := make([]int64, len(tt.ledgers))
		for li, tr := range truth[path] {
			for e := range tr.Entries {
				clock += 10
				written = append(written, writtenEntry{pos: Position{LedgerID: tr.ID, EntryID: e}, ledger: li, time: clock})
			}
			closed[li] = info.GetLedgerInfo()[li].GetTimestamp()
		}
		if tt.open { // the open ledger has what the store holds: its count is not in metadata
			for len(written) > 0 && !stored[written[len(written)-1].pos] {
				written = written[:len(written)-1]
			}
		}
		var targets []int64
		for ms := int64(tBaseTime - 5); ms <= int64(clock)+15; ms += 3 {
			targets = append(targets, ms)
		}
		for vname, vinfo := range indexVariants(rng, info) {
			for _, target := range targets {
				want := slices.IndexFunc(written, func(w writtenEntry) bool { return w.time >= uint64(target) })
				var first *Answer
				for _, legacy := range []bool{false, true} {
					a, err := FindTime(ctx, dd.Ledgers, vinfo, target, FindOptions{Legacy: legacy})
					if err != nil {
						t.Fatalf("%s %s time %d legacy=%v: %v", tt.name, vname, target, legacy, err)
					}
					if first == nil {
						first = a
					} else if !a.Agrees(first) {
						t.Fatalf("%s %s time %d: %s says %s %v, %s says %s %v", tt.name, vname, target,
							first.Method, first.Result(), first.Position, a.Method, a.Result(), a.Position)
					}
					bad := ""
					switch {
					case a.Found:
						if want < 0 || a.Position != written[want].pos || !stored[a.Position] {
							bad = "a stored entry that is not the first at or after the target"
						}
					case a.PastEnd:
						if want >= 0 {
							bad = fmt.Sprintf("past the end, but %v is at %d", written[want].pos, written[want].time)
						}
					default:
						li := slices.IndexFunc(truth[path], func(tr tTruth) bool { return tr.ID == a.Position.LedgerID })
						switch {
						case li < 0 || a.NotLocal != tt.ledgers[li].offloaded:
							bad = "not a lost or offloaded ledger of the topic"
						case want >= 0 && li != written[want].ledger && closed[li] != target:
							bad = fmt.Sprintf("the first entry at or after the target is %v", written[want].pos)
						case want < 0 && closed[li] < target && closed[li] != 0:
							bad = "a ledger closed before the target"
						}
					}
					if bad != "" {
						t.Fatalf("%s %s time %d via %s: got %s %v: %s\nnotes %q", tt.name, vname, target, a.Method, a.Result(), a.Position, bad, a.Notes)
					}
				}
				checked++
			}
		}
	}
	if checked < 1000 {
		t.Errorf("checked %d times, want >= 1000", checked)
	}
}
