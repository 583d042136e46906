package html_test

import (
	"context"
	"image/color"
	"image/png"
	"os"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/inspect"
	htmlreport "github.com/ledgermedic/ledgermedic/report/html"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// On a generated cluster, each ledger the manifest says was lost has the fault
// colour at its place in its topic's timeline PNG, as written to disk.
func TestTimelinePNGOfFixtureMarksLostLedgers(t *testing.T) {
	cases := []struct {
		name string
		opts fixtures.Options
	}{
		{"lost ledger", fixtures.Options{Seed: 3, LoseTopicLedger: true}},
		{"lost ledger and entries, many ledgers", fixtures.Options{Seed: 5, LoseTopicLedger: true, LoseEntriesOnly: true,
			LedgersPerTopic: 40, EntriesPerLedger: 5, WithFirstEntryIndex: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, m := testutil.Fixture(t, tc.opts)
			dd, err := datadir.Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
			if err != nil {
				t.Fatal(err)
			}
			defer dd.Close()
			r, err := inspect.Incident(context.Background(), dd, inspect.IncidentOptions{Now: time.Unix(0, 0)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			files, err := htmlreport.WritePNGs(t.TempDir(), r)
			if err != nil {
				t.Fatal(err)
			}
			timelines := map[string]string{}
			for _, f := range files {
				if f.Chart == "timeline" {
					timelines[f.Topic] = f.Path
				}
			}
			lost := 0
			for _, f := range m.Faults {
				if f.Kind != fixtures.FaultLostTopicLedger && f.Kind != fixtures.FaultLostTopicEntries {
					continue
				}
				lost++
				tp := topicOfLedger(r, f.Ledger)
				if tp == nil {
					t.Errorf("ledger %d (%s) is in no topic of the report", f.Ledger, f.Topic)
					continue
				}
				x, y, ok := htmlreport.MarkPixel(tp, f.Ledger)
				path := timelines[tp.Name]
				if !ok || path == "" {
					t.Errorf("ledger %d: no timeline PNG for %s", f.Ledger, tp.Name)
					continue
				}
				if c := pixel(t, path, x, y); c != htmlreport.FaultColour {
					t.Errorf("ledger %d in %s: pixel (%d,%d) is %v, want the fault colour", f.Ledger, path, x, y, c)
				}
			}
			if lost == 0 {
				t.Fatal("the manifest names no lost topic ledger")
			}
		})
	}
}

func topicOfLedger(r *htmlreport.Report, id int64) *htmlreport.Topic {
	for i := range r.Topics {
		for _, l := range r.Topics[i].Lanes {
			for _, g := range l.Ledgers {
				if g.ID == id {
					return &r.Topics[i]
				}
			}
		}
	}
	return nil
}

func pixel(t *testing.T, path string, x, y int) color.RGBA {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if w := img.Bounds().Dx(); w != 1380 {
		t.Errorf("%s is %d px wide, want the SVG's 1380", path, w)
	}
	r, g, b, a := img.At(x, y).RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}
