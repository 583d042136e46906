package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/internal/spill"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestCheckTruncatedValues damages the value log under a node in the middle of
// the metadata and an entry in the middle of a ledger: both are reported where
// they are, and everything after them is still checked.
func TestCheckTruncatedValues(t *testing.T) {
	dir := buildTestDir(t)
	big := bytes.Repeat([]byte("x"), 2<<20)
	edit(t, dir, func(b *testBuilder) {
		b.node(formats.LedgerPath(10), big)
		b.node(formats.LedgerPath(70), ledgerMeta(t, 2, 100, true))
		b.entry(70, 0, []byte("small"))
		b.entry(70, 1, big)
		b.entry(70, 2, []byte("small"))
	})
	testutil.TruncateValueLogs(t, dir, datadir.MetadataDirName, 1<<20)
	testutil.TruncateValueLogs(t, dir, datadir.LedgersDirName, 1<<20)
	dd := openRO(t, dir)
	fs, stats, err := Check(context.Background(), dd, CheckOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := got(fs)
	w := []want{{KindValueTruncated, "node " + formats.LedgerPath(10)}, {KindValueTruncated, "ledger 70 entry 1"}}
	if !slices.Equal(g, w) {
		t.Fatalf("got %v, want %v; all %+v", g, w, fs)
	}
	if stats.Entries != 21+3 {
		t.Errorf("entries read %d, want 24: the scan must go on after the damaged entry", stats.Entries)
	}
	if stats.ManagedLedgers != 3 || stats.SchemaLocators != 2 {
		t.Errorf("stats %+v: the walk must go on after the damaged node", stats)
	}

	rows, more, err := Entries(context.Background(), dd, EntriesOptions{Ledger: 70, To: -1})
	if err != nil || more || len(rows.Rows) != 3 {
		t.Fatalf("entries view: %v, more %v, rows %v", err, more, rows)
	}
	if msg := rows.Rows[1][len(rows.Rows[1])-1].(string); !strings.Contains(msg, "truncated") {
		t.Errorf("entry 1 row error %q", msg)
	}
}

// TestSchemaUsageTruncatedValues damages the value log under most of the big
// entries of a topic ledger: schema-usage counts each as an entry and a bad
// entry of its topic, lists the lowest positions up to the cap and sums up the
// rest, reads the entries after them, and the reader's list of them stays
// bounded like the decoders' lists.
func TestSchemaUsageTruncatedValues(t *testing.T) {
	dir := buildTestDir(t)
	const big = 7 // entries 1..7 are stored in the value log
	payload := bytes.Repeat([]byte("x"), 1<<20+1<<16)
	editDD(t, dir, func(dd *datadir.DataDir, b *testBuilder) {
		b.rewriteML(dd, events1Path, func(info *mlpb.ManagedLedgerInfo) {
			info.LedgerInfo = append(info.LedgerInfo, &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(80), Entries: proto.Int64(big + 2)})
		})
		b.node(formats.LedgerPath(80), ledgerMeta(t, big+1, 100, true))
		for e := range int64(big + 2) {
			p := []byte("small")
			if e >= 1 && e <= big {
				p = payload
			}
			md := &pulsarpb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(uint64(e)),
				PublishTime: proto.Uint64(uint64(baseTime + e)), NumMessagesInBatch: proto.Int32(1)}
			b.entry(80, e, must(formats.BuildEntry(nil, true, md, p)))
		}
	})
	// Keep the first big value whole and cut into the other six.
	cutVlogs(t, dir, datadir.LedgersDirName, int64(big-1)*int64(len(payload)))

	dd := openRO(t, dir)
	// Which values the cut damaged is Badger's layout: ask the store.
	var lost []int64
	for e := range int64(big + 2) {
		if _, err := dd.Ledgers.Entry(80, e); errors.Is(err, store.ErrTruncatedValue) {
			lost = append(lost, e)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if len(lost) < 5 {
		t.Fatalf("entries %v truncated, want at least 5", lost)
	}
	const maxBad = 2
	for _, workers := range []int{1, 3} {
		r, err := SchemaUsage(context.Background(), dd, UsageOptions{Workers: workers, MaxListedBadEntries: maxBad}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var events TopicUsage
		for _, tu := range r.Topics {
			if tu.Topic == "persistent://acme/ns/events" {
				events = tu
			}
		}
		// 3+2 entries in partition 0, 3 in ledger 30 and 9 in ledger 80.
		if n := int64(len(lost)); events.Entries != 17 || events.BadEntries != n || r.BadEntries != n {
			t.Errorf("workers %d: events entries %d bad %d, report bad %d; want 17, %d, %d", workers, events.Entries, events.BadEntries, r.BadEntries, n, n)
		}
		var listed []want
		for _, f := range r.Findings {
			if f.Kind == KindValueTruncated || f.Kind == KindBadEntriesNotListed {
				listed = append(listed, want{f.Kind, f.Location})
			}
		}
		w := []want{{KindBadEntriesNotListed, "ledger store"}, {KindValueTruncated, fmt.Sprintf("ledger 80 entry %d", lost[0])}, {KindValueTruncated, fmt.Sprintf("ledger 80 entry %d", lost[1])}}
		if !slices.Equal(sortedWants(listed), w) {
			t.Errorf("workers %d: findings %v, want %v", workers, sortedWants(listed), w)
		}
	}

	// One worker meets every truncated value: its list is trimmed as it grows.
	sd, err := spill.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	u := newUsageScan(sd, maxBad)
	if _, err := usageWalk(context.Background(), dd.Metadata, nil, u, sd, func(report.Finding) {}); err != nil {
		t.Fatal(err)
	}
	p := &entryPass{dd: dd, feed: wholeStoreRanges(dd, 1), workers: 1, prog: report.NoProgress{}, usage: u}
	if err := p.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	states := p.usage.states
	held := 0
	for i, st := range states {
		held += len(st.bad)
		if len(st.bad) >= 2*maxBad {
			t.Errorf("state %d keeps %d bad entries, more than 2*%d", i, len(st.bad), maxBad)
		}
	}
	if held == 0 {
		t.Errorf("the truncated values are in no state's bounded list")
	}
}

// cutVlogs cuts cut bytes off the end of every value-log file under dir/sub
// longer than cut.
func cutVlogs(t *testing.T, dir, sub string, cut int64) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, sub, "*.vlog"))
	n := 0
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > cut {
			if err := os.Truncate(f, st.Size()-cut); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no value log under %s longer than %d bytes", sub, cut)
	}
}
