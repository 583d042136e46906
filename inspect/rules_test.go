package inspect

import (
	"context"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/index"
	"github.com/ledgermedic/ledgermedic/report"
)

// check and back-fill now share cluster's rules, so a topic check recommends
// back-filling is one back-fill works on, and a ledger check counts as covered is
// one back-fill leaves alone. Each case was a disagreement: back-fill called a
// topic whose newest ledger has no index "not indexed"; check counted an invalid
// property value as coverage.
func TestCheckAndBackfillAgree(t *testing.T) {
	const path = "/managed-ledgers/acme/ns/persistent/mixed"
	cases := []struct {
		name    string
		ledgers []testLedger
		edit    func(info *mlpb.ManagedLedgerInfo)
		hint    bool // check recommends index backfill
		planned int  // back-fill plans this many ledgers
	}{
		{
			name: "interceptor turned off before the newest ledger",
			ledgers: []testLedger{
				{id: 60, batches: []int32{1, 2}, indexed: true, firstIdx: 0},
				{id: 61, batches: []int32{1, 1}, indexed: true, firstIdx: 3},
				{id: 62, batches: []int32{1, 1}},
			},
			edit: func(info *mlpb.ManagedLedgerInfo) {
				for _, li := range info.GetLedgerInfo() {
					li.Properties = nil // nothing back-filled yet
				}
			},
			hint: true, planned: 2,
		},
		{
			name: "a property value that is not a decimal is not coverage",
			ledgers: []testLedger{
				{id: 60, batches: []int32{1, 2}, indexed: true, firstIdx: 0},
			},
			edit: func(info *mlpb.ManagedLedgerInfo) {
				formats.SetLedgerProperty(info.GetLedgerInfo()[0], cluster.FirstEntryIndexKey, "abc")
			},
			hint: true, planned: 0, // back-fill warns index-property-invalid and rewrites only with --force
		},
		{
			name: "never indexed",
			ledgers: []testLedger{
				{id: 60, batches: []int32{1, 2}},
				{id: 61, batches: []int32{1}},
			},
			hint: false, planned: 0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := buildTestDir(t)
			editDD(t, dir, func(dd *datadir.DataDir, b *testBuilder) {
				b.writeTopic(path, "acme/ns/persistent/mixed", formats.Plain, false, c.ledgers)
			})
			if c.edit != nil {
				editDD(t, dir, func(dd *datadir.DataDir, b *testBuilder) { b.rewriteML(dd, path, c.edit) })
			}
			var hint bool
			for _, f := range runCheck(t, dir, CheckOptions{}) {
				if f.Kind == KindFirstEntryIndexMissing && f.Path == path {
					hint = strings.Contains(f.Hint, "index backfill")
				}
			}
			if hint != c.hint {
				t.Errorf("check recommends back-fill: %v, want %v", hint, c.hint)
			}
			dd := openRO(t, dir)
			res, err := index.Backfill(context.Background(), dd, index.BackfillOptions{Paths: []string{path}})
			if err != nil {
				t.Fatal(err)
			}
			var notIndexed bool
			for _, f := range res.Findings {
				notIndexed = notIndexed || f.Kind == index.KindNotIndexed
			}
			if int(res.Planned) != c.planned || notIndexed == c.hint {
				t.Errorf("back-fill planned %d (want %d), not-indexed %v; findings %v", res.Planned, c.planned, notIndexed, kinds(res.Findings))
			}
		})
	}
}

func kinds(fs []report.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Kind
	}
	return out
}
