package html

import (
	"bufio"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ledgermedic/ledgermedic/report"
)

//go:embed assets/report.tmpl assets/report.css assets/report.js
var assets embed.FS

var page = template.Must(template.New("report.tmpl").ParseFS(assets, "assets/report.tmpl"))

// Limits that keep the page small on a badly damaged cluster of any size: what
// is not listed is counted, and `check` lists it all.
const (
	// MaxFindingsPerKind bounds the findings listed of each kind, as check's --limit does.
	MaxFindingsPerKind = 200
	// MaxMarksPerTopic bounds the list of marked ledgers under a topic's chart.
	MaxMarksPerTopic = 2000
	topFindings      = 10
	// MaxDrawnTopics bounds the topics drawn as timelines: a report of more draws
	// the worst (CompareWorst) and lists every topic in a table whose rows the
	// page's script shows a screenful at a time, so that a million-topic
	// cluster's page opens in seconds.
	MaxDrawnTopics = 50
	// MaxLooseLedgers bounds the ledgers listed that belong to no topic.
	MaxLooseLedgers = 1000
)

// Render writes the report as one self-contained HTML page, as it goes: the
// table of every topic is embedded as data (topicData) read from r.Rows, never
// held whole.
func Render(ctx context.Context, w io.Writer, r *Report) error {
	v, err := view(r)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := page.Execute(bw, v); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	if v.Table {
		if err := writeTopicData(ctx, bw, r, v.Topics); err != nil {
			return fmt.Errorf("render report: %w", err)
		}
	}
	if err := page.ExecuteTemplate(bw, "end", v); err != nil {
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
	FindingTotal int64
	MoreFindings int64
	PerKind      int
	Severities   []report.Severity
	Kinds        []string
	Topics       []topicView
	// Table: more topics than are drawn, so every topic is listed in a table
	// (its rows come as data after the page, topicData).
	Table      bool
	TopicCount int64
	Loose      []looseView
	Runs       []runView
}

type sourceView struct {
	Source
	PointInTime string
}

type countView struct {
	Severity report.Severity
	N        int64
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
		When: r.GeneratedAt.UTC().Format("2006-01-02 15:04:05 UTC"), PerKind: MaxFindingsPerKind,
		Severities: []report.Severity{report.SeverityError, report.SeverityWarning, report.SeverityInfo}}
	for _, s := range r.Sources {
		v.Sources = append(v.Sources, sourceView{Source: s, PointInTime: pointInTime(s)})
	}
	counts := map[report.Severity]int64{}
	kinds := map[string]bool{}
	for k, n := range r.Counts {
		counts[k.Severity] += int64(n)
		kinds[k.Kind] = true
	}
	for _, s := range v.Severities {
		v.Counts = append(v.Counts, countView{s, counts[s]})
	}
	for k := range kinds {
		v.Kinds = append(v.Kinds, k)
	}
	slices.Sort(v.Kinds)
	v.Top = r.Findings[:min(topFindings, len(r.Findings))]
	v.FindingTotal = max(r.FindingTotal(), int64(len(r.Findings)))
	v.MoreFindings = v.FindingTotal - int64(len(r.Findings))
	for i := range r.Topics {
		v.Topics = append(v.Topics, topicOf(&r.Topics[i]))
	}
	v.TopicCount = r.TopicCount()
	v.Table = v.TopicCount > int64(len(r.Topics))
	for _, l := range r.Loose {
		v.Loose = append(v.Loose, looseView{Ledger: l, Created: msTime(l.Start)})
	}
	for _, run := range r.Runs {
		v.Runs = append(v.Runs, runView{Run: run, CommandLine: report.CommandLine(run.Command, run.Args),
			CreatedText: run.Created.UTC().Format("2006-01-02 15:04:05 UTC")})
	}
	return v, nil
}

// rowColumns are the numbers of a row in the page's data, in this order (the
// script reads them by place).
func rowColumns(b []byte, r *TopicRow) []byte {
	for i, n := range [...]int64{int64(r.Partitions), r.Ledgers, r.Entries, r.Errors, r.Warnings, r.Info,
		r.WithEntries, r.Covered, r.Versions, r.BadVersions} {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return b
}

// writeTopicData writes every row of the table of every topic as one JSON
// document in a <script type="application/json"> element, row by row:
//
//	{"n": rows, "cols": columns per row, "restart": nameRestart, "drawn": [[name, anchor], ...],
//	 "names": [shared, suffix, ...], "v": [numbers of row 0 (rowColumns), of row 1, ...]}
//
// Names are in name order and front-coded (each shares a prefix with the one
// before it: its length, then the rest), which makes a million of them a few
// MB; every nameRestart-th is whole, so the script decodes a row's name from
// there. JSON escapes <, > and &, so no name can end the element.
func writeTopicData(ctx context.Context, w *bufio.Writer, r *Report, drawn []topicView) error {
	b := []byte(`<script type="application/json" id="topic-data">{"n":`)
	b = strconv.AppendInt(b, r.Rows.Len(), 10)
	b = append(b, `,"cols":10,"restart":`...)
	b = strconv.AppendInt(b, nameRestart, 10)
	b = append(b, `,"drawn":[`...)
	for i, t := range drawn {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(append(append(b, '['), jsonString(t.Name)...), ','), jsonString(t.Anchor)...), ']')
	}
	b = append(b, `],"names":[`...)
	if _, err := w.Write(b); err != nil {
		return err
	}
	prev, n := "", int64(0)
	err := r.Rows.Each(ctx, func(row *TopicRow) error {
		b = b[:0]
		if n > 0 {
			b = append(b, ',')
		}
		shared := commonPrefix(prev, row.Name)
		if n%nameRestart == 0 {
			shared = 0
		}
		b = strconv.AppendInt(b, int64(utf16Len(row.Name[:shared])), 10)
		b = append(append(b, ','), jsonString(row.Name[shared:])...)
		prev, n = row.Name, n+1
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if _, err := w.WriteString(`],"v":[`); err != nil {
		return err
	}
	n = 0
	err = r.Rows.Each(ctx, func(row *TopicRow) error {
		b = b[:0]
		if n > 0 {
			b = append(b, ',')
		}
		b = rowColumns(b, row)
		n++
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.WriteString("]}</script>\n")
	return err
}

// nameRestart: every this many rows, a name is written whole.
const nameRestart = 64

// commonPrefix is the length in bytes of the longest common prefix of a and b
// that ends on a character boundary of b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}

// utf16Len is the length of s as the script counts it (UTF-16 code units): the
// shared prefix length is read by String.prototype.slice.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// jsonString is s as a JSON string that is safe inside a script element.
func jsonString(s string) []byte {
	b, err := json.Marshal(s)
	if err != nil { // a string always marshals
		return []byte(`""`)
	}
	return b
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
