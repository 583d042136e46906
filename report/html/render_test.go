package html

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/report"
)

// bigTopic is one managed ledger of n one-second ledgers; every step-th is lost.
func bigTopic(n, step int) Topic {
	lane := Lane{Topic: "persistent://t/ns/big", Path: "/managed-ledgers/t/ns/persistent/big", Indexed: true}
	start := int64(1_718_000_000_000)
	for i := range n {
		l := Ledger{ID: int64(i + 1), Topic: lane.Topic, Entries: int64(i % 100), Start: start + int64(i)*1000,
			End: start + int64(i+1)*1000, State: LedgerClosed, FirstEntryIndex: i%2 == 0}
		if step > 0 && i%step == 0 {
			l.Faults = []Fault{{Kind: "ledger-missing", Severity: report.SeverityError, Message: "lost"}}
		}
		lane.Ledgers = append(lane.Ledgers, l)
	}
	lane.Ledgers[n-1].State, lane.Ledgers[n-1].End = LedgerOpen, 0
	return Topic{Name: lane.Topic, Lanes: []Lane{lane}}
}

func render(t testing.TB, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// At 10,000 ledgers a bar would be a tenth of a pixel: they are drawn as
// aggregate bars, never more bars than pixels, and every faulty ledger keeps its
// own mark and list entry.
func TestTimelineAggregatesButKeepsEveryFault(t *testing.T) {
	cases := []struct {
		ledgers, step int
		maxBars       int
	}{
		{10, 3, 10},
		{1000, 100, plotW},
		{10_000, 250, plotW},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.ledgers), func(t *testing.T) {
			page := render(t, &Report{GeneratedAt: time.Unix(0, 0), Topics: []Topic{bigTopic(tc.ledgers, tc.step)}})
			bars := strings.Count(page, `<rect class="bar `) + strings.Count(page, `<rect class="agg"`)
			if bars == 0 || bars > tc.maxBars {
				t.Errorf("%d bars drawn for %d ledgers, want 1..%d", bars, tc.ledgers, tc.maxBars)
			}
			for i := 0; i < tc.ledgers; i += tc.step {
				id := i + 1
				if !strings.Contains(page, fmt.Sprintf(`<g class="mark m-ledger-missing" data-ledger="%d"`, id)) {
					t.Errorf("ledger %d: no SVG mark", id)
				}
				if !strings.Contains(page, fmt.Sprintf(`data-ledger="%d" data-version="" data-kind="ledger-missing"`, id)) {
					t.Errorf("ledger %d: not in the marks list", id)
				}
			}
			if len(page) > 5<<20 {
				t.Errorf("page is %d bytes", len(page))
			}
		})
	}
}

// Names come from the stores: they are escaped everywhere, in HTML and in SVG.
func TestRenderEscapesStoreText(t *testing.T) {
	evil := `persistent://t/ns/<script>alert(1)</script>"'&`
	tp := bigTopic(3, 1)
	tp.Name, tp.Lanes[0].Topic = evil, evil
	tp.Lanes[0].Ledgers[0].Faults[0].Message = "<img src=x onerror=alert(1)>"
	r := &Report{GeneratedAt: time.Unix(0, 0), DataDir: "<b>dir</b>", Topics: []Topic{tp},
		Findings: []report.Finding{{Kind: "k<script>", Severity: report.SeverityError, Location: "<i>", Message: "</td><script>x()</script>"}},
		Problems: []string{"<svg onload=x()>"}}
	page := render(t, r)
	for _, bad := range []string{"<script>alert", "<img", "<svg onload", "<b>dir", "<i>", "</td><script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds unescaped %q", bad)
		}
	}
	if n := len(regexp.MustCompile(`<script>`).FindAllString(page, -1)); n != 1 {
		t.Errorf("%d <script> elements, want only the filter's", n)
	}
}

// An empty report still renders, saying what is missing.
func TestRenderEmptyReport(t *testing.T) {
	page := render(t, &Report{GeneratedAt: time.Unix(0, 0), Problems: []string{"the metadata store holds no node"},
		JournalNote: "no runs"})
	for _, want := range []string{"the metadata store holds no node", "No topics.", "No findings.", "no store could be opened", "no runs"} {
		if !strings.Contains(page, want) {
			t.Errorf("empty report lacks %q", want)
		}
	}
}

// A report of more topics than MaxDrawnTopics draws the worst of them, worst
// first, and lists every topic, worst first, in a filterable table; a small one
// draws every topic in its order and has no such table.
func TestBigReportDrawsTheWorstTopics(t *testing.T) {
	var topics []Topic
	n := MaxDrawnTopics*2 + 7
	for i := range n {
		tp := bigTopic(3, 0)
		tp.Name = fmt.Sprintf("persistent://t/ns/topic-%03d", i)
		switch {
		case i%10 == 3: // errors: i%20 == 13 has two
			tp.Lanes[0].Ledgers[0].Faults = []Fault{{Kind: "ledger-missing", Severity: report.SeverityError}}
			if i%20 == 13 {
				tp.Lanes[0].Ledgers[1].Faults = []Fault{{Kind: "ledger-missing", Severity: report.SeverityError}}
			}
		case i%10 == 5:
			tp.Lanes[0].Ledgers[0].Faults = []Fault{{Kind: "orphan-ledger", Severity: report.SeverityWarning}}
		}
		topics = append(topics, tp)
	}
	page := render(t, &Report{GeneratedAt: time.Unix(0, 0), Topics: topics})
	drawn := regexp.MustCompile(`<article class="topic" id="[^"]*" data-topic="([^"]*)">`).FindAllStringSubmatch(page, -1)
	if len(drawn) != MaxDrawnTopics {
		t.Fatalf("%d topics drawn of %d, want %d", len(drawn), n, MaxDrawnTopics)
	}
	// The two-error topics, then the one-error ones, then the warnings, in name order each.
	var want []string
	for _, pick := range []func(int) bool{
		func(i int) bool { return i%20 == 13 }, func(i int) bool { return i%20 == 3 }, func(i int) bool { return i%10 == 5 },
		func(i int) bool { return i%10 != 3 && i%10 != 5 },
	} {
		for i := range n {
			if pick(i) {
				want = append(want, topics[i].Name)
			}
		}
	}
	for i, d := range drawn {
		if d[1] != want[i] {
			t.Fatalf("drawn topic %d is %s, want %s", i, d[1], want[i])
		}
	}
	rows := regexp.MustCompile(`<tr data-faulty="(1?)"><td>(?:<a href="#[^"]*">)?([^<]*)<`).FindAllStringSubmatch(page, -1)
	if len(rows) != n {
		t.Fatalf("the table of every topic has %d rows, want %d", len(rows), n)
	}
	faulty := map[string]bool{}
	for i := range n {
		faulty[topics[i].Name] = i%10 == 3 || i%10 == 5
	}
	for i, r := range rows {
		if r[2] != want[i] || (r[1] == "1") != faulty[r[2]] {
			t.Fatalf("row %d is %s (faulty %q), want %s (faulty %v)", i, r[2], r[1], want[i], faulty[want[i]])
		}
	}
	for _, s := range []string{`id="t-text"`, `id="t-faulty"`, fmt.Sprintf("Topics (%d: the %d worst drawn)", n, MaxDrawnTopics),
		`<a href="#topic-persistent___t_ns_topic-013">`} {
		if !strings.Contains(page, s) {
			t.Errorf("the page has no %s", s)
		}
	}
	small := render(t, &Report{GeneratedAt: time.Unix(0, 0), Topics: topics[:MaxDrawnTopics]})
	if strings.Contains(small, `id="topics"`) || strings.Count(small, `<article class="topic"`) != MaxDrawnTopics {
		t.Errorf("a report of %d topics does not draw them all, or lists them in a table", MaxDrawnTopics)
	}
}
