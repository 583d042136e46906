package repair

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestCaptureListsSkippedVersions: the versions whose ledgers are lost are
// counted, listed in the order met with the reason, kept on disk, and removed
// by Close; every other version is written.
func TestCaptureListsSkippedVersions(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 7})
	losses := pickLosses(m)
	var want []string
	for _, l := range losses {
		loseLedger(t, dir, l.ledger, l.node)
		want = append(want, l.key+"@"+strconv.FormatInt(l.version, 10))
	}
	_, st := captureFile(t, dir)
	defer st.Close()
	if st.Skipped != len(losses) || st.Written != m.Totals.SchemaVersions-len(losses) {
		t.Fatalf("skipped %d, wrote %d; want %d skipped of %d", st.Skipped, st.Written, len(losses), m.Totals.SchemaVersions)
	}
	var got []string
	err := st.EachSkipped(context.Background(), func(s Skipped) error {
		if s.Reason == "" || !strings.Contains(s.Reason, ":") {
			t.Errorf("%s version %d: reason %q says nothing", s.SchemaKey, s.Version, s.Reason)
		}
		got = append(got, s.SchemaKey+"@"+strconv.FormatInt(s.Version, 10))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Fatalf("skipped %v, want %v", got, want)
	}
	var out bytes.Buffer
	doc := &report.Document{Tables: []*report.Table{SkippedTable(context.Background(), &st)}}
	if err := report.PrintWith(&out, doc, report.Options{Format: report.FormatJSONL}); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(out.String(), `"schema_key":`); rows != len(want) {
		t.Errorf("the skipped table printed %d rows, want %d:\n%s", rows, len(want), out.String())
	}
	spilled := st.skipped.dir.Path()
	if _, err := os.Stat(spilled); err != nil {
		t.Fatalf("the skipped versions are not on disk: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spilled); !os.IsNotExist(err) {
		t.Errorf("%s still there after Close (%v)", spilled, err)
	}
}

func FuzzDecodeSkipped(f *testing.F) {
	for _, s := range []Skipped{{"t/n/a", 3, "lost: no node"}, {"", -1, ""}, {"k", 1 << 40, "r"}} {
		f.Add(appendSkipped(nil, s))
	}
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSkipped(b)
		if err != nil {
			return
		}
		again := appendSkipped(nil, s)
		back, err := decodeSkipped(again)
		if err != nil || back != s {
			t.Fatalf("%+v encodes to %x, which decodes to %+v, %v", s, again, back, err)
		}
	})
}
