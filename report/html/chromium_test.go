package html

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// manyRows are n topics over 100 namespaces in name order; every 7th has
// info, every 97th warnings, every 1009th errors.
func manyRows(n int) RowSlice {
	rows := make(RowSlice, 0, n)
	for i := range n {
		r := TopicRow{Name: fmt.Sprintf("persistent://tenant-%02d/ns/topic-%07d", i%100, i), Partitions: 1,
			Ledgers: 3, Entries: 4, WithEntries: 2, Versions: 1}
		if i%7 == 0 {
			r.Info = 1
		}
		if i%97 == 0 {
			r.Warnings = int64(1 + i%3)
		}
		if i%1009 == 0 {
			r.Errors = int64(1 + i%5)
			r.BadVersions = 1
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b TopicRow) int { return strings.Compare(a.Name, b.Name) })
	return rows
}

// The table of 100,000 topics opens in headless Chromium in seconds, draws
// only the rows in view, worst first, and its filters (set by the page's
// address) select exactly the rows they should.
func TestTopicTableInChromium(t *testing.T) {
	testutil.SkipWithoutChromium(t)
	const n = 100_000
	rows := manyRows(n)
	drawn := bigTopic(3, 1)
	drawn.Name = rows[0].Name
	page := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{GeneratedAt: time.Unix(0, 0), Topics: []Topic{drawn}, Rows: rows,
		Counts: report.Counts{{Kind: "ledger-missing", Severity: report.SeverityError}: 1}}
	if err := Render(context.Background(), f, r); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(page)
	cases := []struct {
		fragment string
		want     func(*TopicRow) bool
	}{
		{"", func(*TopicRow) bool { return true }},
		{"q=TOPIC-00012&faulty=1", func(r *TopicRow) bool { return strings.Contains(r.Name, "topic-00012") && r.Faulty() }},
		{"q=tenant-07/", func(r *TopicRow) bool { return strings.Contains(r.Name, "tenant-07/") }},
	}
	for _, tc := range cases {
		t.Run(tc.fragment, func(t *testing.T) {
			start := time.Now()
			dom := testutil.ChromiumDOMAt(t, page, tc.fragment)
			wall := time.Since(start)
			var want []TopicRow
			for i := range rows {
				if tc.want(&rows[i]) {
					want = append(want, rows[i])
				}
			}
			slices.SortStableFunc(want, func(a, b TopicRow) int { return CompareWorst(&a, &b) })
			shown, drawnRows, ready := topicTableDOM(t, dom)
			t.Logf("%d rows (%.1f MB page): Chromium ran %v, the table was ready %d ms after the page began to load",
				n, float64(st.Size())/1e6, wall.Round(time.Millisecond), ready)
			if want := fmt.Sprintf("%d of %d shown", len(want), n); shown != want {
				t.Errorf("the filter says %q, want %q", shown, want)
			}
			if len(drawnRows) == 0 || len(drawnRows) > 40 {
				t.Fatalf("%d rows in the DOM, want a screenful", len(drawnRows))
			}
			for i, name := range drawnRows {
				if i >= len(want) || name != want[i].Name {
					t.Fatalf("row %d of the DOM is %s, want %s", i, name, want[min(i, len(want)-1)].Name)
				}
			}
			// Generous: a loaded two-core CI machine; it takes about a second alone.
			if ready > 20_000 {
				t.Errorf("the table was ready after %d ms", ready)
			}
		})
	}
}

// topicTableDOM reads the table of every topic from a DOM: the filter's
// counter, the topic of each row drawn, and when the script was done (ms).
func topicTableDOM(t *testing.T, dom string) (shown string, rows []string, readyMs int) {
	t.Helper()
	root, err := xhtml.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	ready := ""
	var walk func(*xhtml.Node)
	walk = func(n *xhtml.Node) {
		if n.Type == xhtml.ElementNode {
			attr := map[string]string{}
			for _, a := range n.Attr {
				attr[a.Key] = a.Val
			}
			switch {
			case attr["id"] == "t-shown" && n.FirstChild != nil:
				shown = n.FirstChild.Data
			case attr["id"] == "t-scroll":
				ready = attr["data-ready-ms"]
			case n.Data == "tr" && attr["data-topic"] != "":
				rows = append(rows, attr["data-topic"])
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	ms, err := strconv.Atoi(ready)
	if err != nil {
		t.Fatalf("the table's script did not finish (data-ready-ms %q)", ready)
	}
	return shown, rows, ms
}
