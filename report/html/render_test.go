package html

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

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
	if err := Render(context.Background(), &b, r); err != nil {
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

// A report of more topics than it draws embeds every topic's row as data
// after the page, in name order with front-coded names, which decode back to
// the rows exactly (names with markup, multi-byte and astral characters
// included); a report whose topics are all drawn has no table.
func TestBigReportEmbedsEveryRow(t *testing.T) {
	names := []string{"persistent://t/ns/a", "persistent://t/ns/a-1", "persistent://t/ns/b</script><script>x()</script>",
		"persistent://t/ns/bé", "persistent://t/ns/bé😀", "persistent://t/ns/bé😀z", "persistent://t/ns/c"}
	for i := range 200 {
		names = append(names, fmt.Sprintf("persistent://u/ns/topic-%04d", i))
	}
	slices.Sort(names)
	var rows RowSlice
	for i, n := range names {
		rows = append(rows, TopicRow{Name: n, Partitions: i % 4, Ledgers: int64(i), Entries: int64(i) << 33,
			Errors: int64(i % 3), Warnings: int64(i % 5), Info: int64(i % 7), WithEntries: int64(i % 6),
			Covered: int64(i % 2), Versions: int64(i % 4), BadVersions: int64(i % 2)})
	}
	drawn := []Topic{bigTopic(3, 1)}
	drawn[0].Name = names[2]
	page := render(t, &Report{GeneratedAt: time.Unix(0, 0), Topics: drawn, Rows: rows})
	got := decodeTopicData(t, page)
	if len(got.rows) != len(rows) {
		t.Fatalf("%d rows in the data, want %d", len(got.rows), len(rows))
	}
	for i := range rows {
		if got.rows[i] != rows[i] {
			t.Fatalf("row %d decodes to %+v, want %+v", i, got.rows[i], rows[i])
		}
	}
	if got.drawn[names[2]] != "topic-"+anchor(names[2]) {
		t.Errorf("drawn topics in the data: %v", got.drawn)
	}
	for _, s := range []string{`id="t-text"`, `id="t-faulty"`, `id="t-scroll"`,
		fmt.Sprintf("Topics (%d: the 1 worst drawn)", len(rows))} {
		if !strings.Contains(page, s) {
			t.Errorf("the page has no %s", s)
		}
	}
	if n := strings.Count(page, "</script>"); n != 2 {
		t.Errorf("%d </script> in the page, want 2 (the data and the script)", n)
	}
	small := render(t, &Report{GeneratedAt: time.Unix(0, 0), Topics: drawn, Rows: rows[:1]})
	if strings.Contains(small, `id="topics"`) || strings.Contains(small, `id="topic-data"`) {
		t.Error("a report whose topics are all drawn has a table of them")
	}
}

type topicData struct {
	rows  []TopicRow
	drawn map[string]string
}

// decodeTopicData reads the page's topic data as its script does.
func decodeTopicData(t *testing.T, page string) topicData {
	t.Helper()
	_, rest, ok := strings.Cut(page, `<script type="application/json" id="topic-data">`)
	if !ok {
		t.Fatal("no topic data in the page")
	}
	js, _, ok := strings.Cut(rest, "</script>")
	if !ok {
		t.Fatal("the topic data does not end")
	}
	var d struct {
		N       int
		Cols    int
		Restart int
		Drawn   [][2]string
		Names   []json.RawMessage
		V       []int64
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatalf("topic data: %v", err)
	}
	if d.Cols != 10 || len(d.Names) != 2*d.N || len(d.V) != d.Cols*d.N {
		t.Fatalf("topic data of %d rows has %d columns, %d names, %d numbers", d.N, d.Cols, len(d.Names), len(d.V))
	}
	out := topicData{drawn: map[string]string{}}
	for _, p := range d.Drawn {
		out.drawn[p[0]] = p[1]
	}
	var prev []uint16 // as JavaScript holds strings
	for i := range d.N {
		var shared int
		var suffix string
		if json.Unmarshal(d.Names[2*i], &shared) != nil || json.Unmarshal(d.Names[2*i+1], &suffix) != nil || shared > len(prev) {
			t.Fatalf("row %d: name %s %s", i, d.Names[2*i], d.Names[2*i+1])
		}
		if d.Restart <= 0 || i%d.Restart == 0 && shared != 0 {
			t.Fatalf("row %d shares a prefix: names restart every %d", i, d.Restart)
		}
		prev = append(prev[:shared], utf16.Encode([]rune(suffix))...)
		v := d.V[i*d.Cols:]
		out.rows = append(out.rows, TopicRow{Name: string(utf16.Decode(prev)), Partitions: int(v[0]), Ledgers: v[1],
			Entries: v[2], Errors: v[3], Warnings: v[4], Info: v[5], WithEntries: v[6], Covered: v[7],
			Versions: v[8], BadVersions: v[9]})
	}
	return out
}
