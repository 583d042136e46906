package inspect

import (
	"context"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestReplicaFindingsOnRealBookies: on real 4.17.4 bookie dirs (testdata/bookkeeper),
// one flipped replica is a warning whose hint says the good replica is served; with
// every replica of the entry flipped, each finding is an error that says no replica
// verifies, and no hint claims a good replica is served.
func TestReplicaFindingsOnRealBookies(t *testing.T) {
	t.Setenv(store.CacheDirEnv, t.TempDir())
	s := testutil.CopyRealBookies(t, "sorted")
	l := s.Ledgers[0]
	entry := l.Written[0].EntryID
	open := func() *datadir.DataDir {
		mu, err := store.ParseMetadataURL("zk-data:" + s.ZKDataDir())
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, d := range s.BookieDirs() {
			parts = append(parts, "bookie:"+d)
		}
		lu, err := store.ParseLedgersURL(strings.Join(parts, ","))
		if err != nil {
			t.Fatal(err)
		}
		dd, err := datadir.Open("", store.Options{ReadOnly: true, Metadata: &mu, Ledgers: &lu})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dd.Close() })
		return dd
	}
	findings := func() []report.Finding {
		fs, err := ReplicaFindings(context.Background(), open())
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	if fs := findings(); len(fs) != 0 {
		t.Fatalf("clean real bookies: %+v", fs)
	}
	flipped := 0
	for _, d := range s.BookieDirs() {
		if testutil.FlipLastPayloadByte(t, d, l.LedgerID, entry) {
			flipped++
			fs := findings()
			if flipped == 1 {
				if len(fs) != 1 || fs[0].Severity != report.SeverityWarning || !strings.Contains(fs[0].Hint, "good replica is served") {
					t.Errorf("one replica flipped: %+v", fs)
				}
				continue
			}
			if len(fs) != flipped {
				t.Fatalf("%d replicas flipped: %+v", flipped, fs)
			}
			for _, f := range fs {
				if f.Kind != KindReplicaCorrupt || f.Severity != report.SeverityError ||
					strings.Contains(f.Hint, "good replica is served") || !strings.Contains(f.Message, "no replica of this entry verifies") {
					t.Errorf("every replica flipped: %+v", f)
				}
			}
		}
	}
	if flipped != l.Ensemble[1] {
		t.Errorf("%d replicas flipped, want the write quorum %d", flipped, l.Ensemble[1])
	}
}
