package html

import (
	"bufio"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ledgermedic/ledgermedic/report"
)

//go:embed assets/report.tmpl assets/report.css assets/report.js
var assets embed.FS

var page = template.Must(template.New("report.tmpl").ParseFS(assets, "assets/report.tmpl"))

// Limits that keep the file small (a few MB) on a badly damaged cluster.
const (
	// MaxFindingRows bounds the findings table; the rest are counted.
	MaxFindingRows = 5000
	// MaxMarksPerTopic bounds the list of marked ledgers under a topic's chart.
	MaxMarksPerTopic = 2000
	topFindings      = 10
	// MaxDrawnTopics bounds the topics drawn as timelines: a report of more draws
	// the worst (most errors, then warnings, then info) and lists every topic in
	// a table, so a million-topic cluster's page opens in seconds.
	MaxDrawnTopics = 50
	// MaxTopicRows bounds that table; the rest are counted.
	MaxTopicRows = 10_000
)

// Render writes the report as one self-contained HTML page.
func Render(w io.Writer, r *Report) error {
	v, err := view(r)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := page.Execute(bw, v); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

type pageView struct {
	*Report
	Title        string
	When         string
	CSS          template.CSS
	JS           template.JS
	Sources      []sourceView
	Counts       []countView
	Top          []report.Finding
	Findings     []report.Finding // at most MaxFindingRows
	MoreFindings int
	Severities   []report.Severity
	Kinds        []string
	Topics       []topicView
	// With more topics than MaxDrawnTopics: every topic's row (worst first, at
	// most MaxTopicRows), and how many rows were left out.
	TopicRows     []topicRow
	MoreTopicRows int
	Loose         []looseView
	Runs          []runView
}

type sourceView struct {
	Source
	PointInTime string
}

type countView struct {
	Severity report.Severity
	N        int
}

type topicView struct {
	Topic
	Anchor      string
	HasAxis     bool
	Timeline    template.HTML
	Versions    template.HTML
	SchemaError string
	SchemaPath  string
	Marks       []markView
	MoreMarks   int
}

// topicRow is a topic in the table of every topic.
type topicRow struct {
	Name                   string
	Anchor                 string // "" when the topic is not drawn
	Partitions, Ledgers    int
	Entries                int64
	Errors, Warnings, Info int
}

type markView struct {
	Ledger  string // "" for a version
	Version string // "" for a ledger
	Kind    string // a finding kind, or orphan/offloaded/open
	Topic   string
	Text    string
	Fault   bool
}

type looseView struct {
	Ledger
	Created string
}

type runView struct {
	Run
	CommandLine string
	CreatedText string
}

func view(r *Report) (*pageView, error) {
	css, err := assets.ReadFile("assets/report.css")
	if err != nil {
		return nil, err
	}
	js, err := assets.ReadFile("assets/report.js")
	if err != nil {
		return nil, err
	}
	v := &pageView{Report: r, CSS: template.CSS(css), JS: template.JS(js), Title: title(r),
		When:       r.GeneratedAt.UTC().Format("2006-01-02 15:04:05 UTC"),
		Severities: []report.Severity{report.SeverityError, report.SeverityWarning, report.SeverityInfo}}
	for _, s := range r.Sources {
		v.Sources = append(v.Sources, sourceView{Source: s, PointInTime: pointInTime(s)})
	}
	counts := map[report.Severity]int{}
	kinds := map[string]bool{}
	for _, f := range r.Findings {
		counts[f.Severity]++
		kinds[f.Kind] = true
	}
	for _, s := range v.Severities {
		v.Counts = append(v.Counts, countView{s, counts[s]})
	}
	for k := range kinds {
		v.Kinds = append(v.Kinds, k)
	}
	slices.Sort(v.Kinds)
	v.Top = r.Findings[:min(topFindings, len(r.Findings))]
	v.Findings = r.Findings[:min(MaxFindingRows, len(r.Findings))]
	v.MoreFindings = len(r.Findings) - len(v.Findings)
	drawn := drawnTopics(r.Topics)
	for _, i := range drawn {
		v.Topics = append(v.Topics, topicOf(&r.Topics[i]))
	}
	if len(drawn) < len(r.Topics) {
		v.TopicRows, v.MoreTopicRows = topicRows(r.Topics, drawn)
	}
	for _, l := range r.Loose {
		v.Loose = append(v.Loose, looseView{Ledger: l, Created: msTime(l.Start)})
	}
	for _, run := range r.Runs {
		v.Runs = append(v.Runs, runView{Run: run, CommandLine: report.CommandLine(run.Command, run.Args),
			CreatedText: run.Created.UTC().Format("2006-01-02 15:04:05 UTC")})
	}
	return v, nil
}

// faultCounts counts a topic's faults by severity: its ledgers', its schema
// versions' and orphan schema ledgers', and an unreadable node as an error.
func faultCounts(t *Topic) (errors, warnings, info int) {
	add := func(fs []Fault) {
		for _, f := range fs {
			switch f.Severity {
			case report.SeverityError:
				errors++
			case report.SeverityWarning:
				warnings++
			default:
				info++
			}
		}
	}
	for _, l := range t.Lanes {
		if l.Error != "" {
			errors++
		}
		for _, g := range l.Ledgers {
			add(g.Faults)
		}
	}
	if sc := t.Schema; sc != nil {
		if sc.Error != "" {
			errors++
		}
		for _, v := range sc.Versions {
			add(v.Faults)
		}
		for _, g := range sc.Orphans {
			add(g.Faults)
		}
	}
	return errors, warnings, info
}

// worstFirst orders the indexes of topics by their faults, most serious first,
// then as the report has them.
func worstFirst(topics []Topic) []int {
	type score struct{ e, w, i int }
	scores := make([]score, len(topics))
	order := make([]int, len(topics))
	for i := range topics {
		e, w, n := faultCounts(&topics[i])
		scores[i], order[i] = score{e, w, n}, i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		sa, sb := scores[a], scores[b]
		return cmp.Or(cmp.Compare(sb.e, sa.e), cmp.Compare(sb.w, sa.w), cmp.Compare(sb.i, sa.i))
	})
	return order
}

// drawnTopics are the indexes of the topics drawn: all, in the report's order,
// when there are at most MaxDrawnTopics; else the MaxDrawnTopics worst, worst first.
func drawnTopics(topics []Topic) []int {
	if len(topics) <= MaxDrawnTopics {
		out := make([]int, len(topics))
		for i := range out {
			out[i] = i
		}
		return out
	}
	return worstFirst(topics)[:MaxDrawnTopics]
}

// topicRows is the table of every topic, worst first, linked to the drawn ones.
func topicRows(topics []Topic, drawn []int) ([]topicRow, int) {
	isDrawn := make(map[int]bool, len(drawn))
	for _, i := range drawn {
		isDrawn[i] = true
	}
	order := worstFirst(topics)
	rows := make([]topicRow, 0, min(len(order), MaxTopicRows))
	for _, i := range order[:min(len(order), MaxTopicRows)] {
		t := &topics[i]
		row := topicRow{Name: t.Name, Partitions: len(t.Lanes)}
		if isDrawn[i] {
			row.Anchor = "topic-" + anchor(t.Name)
		}
		for _, l := range t.Lanes {
			row.Ledgers += len(l.Ledgers)
			for _, g := range l.Ledgers {
				row.Entries += g.Entries
			}
		}
		row.Errors, row.Warnings, row.Info = faultCounts(t)
		rows = append(rows, row)
	}
	return rows, len(order) - len(rows)
}

func title(r *Report) string {
	if r.DataDir != "" {
		return r.DataDir
	}
	var urls []string
	for _, s := range r.Sources {
		urls = append(urls, s.URL)
	}
	if len(urls) == 0 {
		return "no stores"
	}
	return strings.Join(urls, " + ")
}

func pointInTime(s Source) string {
	var parts []string
	if s.Zxid != 0 {
		parts = append(parts, fmt.Sprintf("zxid 0x%x (%d)", s.Zxid, s.Zxid))
	}
	if s.Revision != 0 {
		parts = append(parts, "revision "+strconv.FormatInt(s.Revision, 10))
	}
	if !s.AsOf.IsZero() {
		parts = append(parts, "as of "+s.AsOf.UTC().Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return "as read"
	}
	return strings.Join(parts, ", ")
}

func topicOf(t *Topic) topicView {
	tv := topicView{Topic: *t, Anchor: "topic-" + anchor(t.Name)}
	if t.Schema != nil {
		tv.SchemaError, tv.SchemaPath = t.Schema.Error, t.Schema.Path
	}
	if a, ok := topicAxis(t); ok {
		tv.HasAxis = true
		if len(t.Lanes) > 0 {
			tv.Timeline = timeline(t, a)
		}
		if t.Schema != nil && (len(t.Schema.Versions) > 0 || len(t.Schema.Orphans) > 0) {
			tv.Versions = versions(t, a)
		}
	}
	tv.Marks, tv.MoreMarks = topicMarks(t)
	return tv
}

// anchor makes an HTML id from a topic name.
func anchor(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// topicMarks lists, in words, every marked ledger and every lost, restored or
// damaged version of a topic: what the chart draws, readable without hovering.
func topicMarks(t *Topic) (ms []markView, more int) {
	add := func(m markView) {
		if len(ms) < MaxMarksPerTopic {
			ms = append(ms, m)
		} else {
			more++
		}
	}
	for _, l := range t.Lanes {
		for i := range l.Ledgers {
			g := &l.Ledgers[i]
			label, _ := markOf(g)
			if label == "" {
				continue
			}
			kind := g.State
			if len(g.Faults) > 0 {
				kind = g.Faults[0].Kind
			}
			add(markView{Ledger: strconv.FormatInt(g.ID, 10), Kind: kind, Topic: l.Topic, Fault: len(g.Faults) > 0,
				Text: ledgerMarkText(g, label, laneName(l.Topic, t.Name))})
		}
	}
	if s := t.Schema; s != nil {
		for _, v := range s.Versions {
			if v.State == "ok" && v.RestoredBy == "" && len(v.Faults) == 0 {
				continue
			}
			kind := v.State
			if len(v.Faults) > 0 {
				kind = v.Faults[0].Kind
			}
			add(markView{Version: strconv.FormatInt(v.Version, 10), Kind: kind, Topic: t.Name, Fault: v.Lost,
				Text: fmt.Sprintf("schema %s version %d: %s", s.Key, v.Version, versionLabel(&v))})
		}
		for _, o := range s.Orphans {
			add(markView{Ledger: strconv.FormatInt(o.ID, 10), Kind: "orphan-ledger", Topic: t.Name, Fault: true,
				Text: fmt.Sprintf("ledger %d: orphan schema ledger of %s (nothing references it)", o.ID, s.Key)})
		}
	}
	return ms, more
}

func ledgerMarkText(g *Ledger, label, lane string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ledger %d (%s): %s", g.ID, lane, label)
	for _, f := range g.Faults {
		if f.EntryID != nil {
			fmt.Fprintf(&b, "; %s at entry %d", cmp.Or(faultLabels[f.Kind], f.Kind), *f.EntryID)
		}
	}
	if g.Entries > 0 {
		fmt.Fprintf(&b, " — %s", count(g.Entries, "entry"))
	}
	return b.String()
}
