package html

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Chart geometry, in CSS pixels.
const (
	labelW     = 230 // lane labels, left of the plot
	plotW      = 900
	rightW     = 250 // version labels, right of the plot
	chartW     = labelW + plotW + rightW
	axisH      = 26
	laneLabelH = 24 // two bands of fault labels above each lane's bars
	barH       = 16
	stripH     = 5 // firstEntryIndex coverage, under the bars
	laneH      = laneLabelH + barH + stripH + 9
	versionH   = 22
	// maxLabels bounds the fault labels drawn in one lane; the marks list under the
	// chart names every one.
	maxLabels = 40
)

// axis maps Unix milliseconds to x.
type axis struct{ t0, t1 int64 }

func (a axis) x(ms int64) float64 {
	if ms <= a.t0 {
		return labelW
	}
	if ms >= a.t1 {
		return labelW + plotW
	}
	return labelW + float64(ms-a.t0)/float64(a.t1-a.t0)*plotW
}

// topicAxis spans every known time of the topic: ledgers, schema versions, messages.
func topicAxis(t *Topic) (axis, bool) {
	lo, hi := int64(math.MaxInt64), int64(0)
	see := func(ms int64) {
		if ms > 0 {
			lo, hi = min(lo, ms), max(hi, ms)
		}
	}
	for _, l := range t.Lanes {
		for _, g := range l.Ledgers {
			see(g.Start)
			see(g.End)
		}
	}
	if s := t.Schema; s != nil {
		for _, v := range s.Versions {
			see(v.Created)
			see(v.FirstPublish)
			see(v.LastPublish)
		}
		for _, o := range s.Orphans {
			see(o.Start)
		}
	}
	if hi == 0 {
		return axis{}, false
	}
	pad := max((hi-lo)/50, 1000) // room so the first and last bars are not on the frame
	return axis{lo - pad, hi + pad}, true
}

// svg builds SVG text; every text and attribute value goes through esc.
type svg struct{ b strings.Builder }

func esc(s string) string { return html.EscapeString(s) }

func f1(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func (s *svg) printf(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svg) html() template.HTML { return template.HTML(s.b.String()) }

// ticks draws the time axis with about 6 labelled ticks at round times.
func (s *svg) ticks(a axis, height int) {
	span := time.Duration(a.t1-a.t0) * time.Millisecond
	step := niceStep(span / 6)
	start := time.UnixMilli(a.t0).UTC().Truncate(step)
	layout := "15:04:05"
	if span > 48*time.Hour {
		layout = "2006-01-02"
	} else if span > 6*time.Hour {
		layout = "01-02 15:04"
	}
	s.printf(`<g class="axis"><text x="4" y="14" class="axislabel">%s UTC</text>`, esc(time.UnixMilli(a.t0).UTC().Format("2006-01-02")))
	for t := start; t.UnixMilli() <= a.t1; t = t.Add(step) {
		if t.UnixMilli() < a.t0 {
			continue
		}
		x := a.x(t.UnixMilli())
		s.printf(`<line x1="%s" x2="%s" y1="%d" y2="%d"/><text x="%s" y="14" text-anchor="middle">%s</text>`,
			f1(x), f1(x), axisH-6, height, f1(x), esc(t.Format(layout)))
	}
	s.printf(`</g>`)
}

func niceStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second,
		5 * time.Second, 15 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour,
		3 * time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour, 365 * 24 * time.Hour} {
		if d <= s {
			return s
		}
	}
	return 365 * 24 * time.Hour
}

// markOf is the label and CSS class of a ledger worth marking, "" for none.
func markOf(l *Ledger) (label, class string) {
	for _, f := range l.Faults {
		if lb, ok := faultLabels[f.Kind]; ok {
			return lb, "m-" + f.Kind
		}
	}
	switch {
	case len(l.Faults) > 0:
		return l.Faults[0].Kind, "m-" + l.Faults[0].Kind
	case l.State == LedgerOrphan:
		return "orphan", "m-orphan-ledger"
	case l.State == LedgerOffloaded:
		return "offloaded", "m-offloaded"
	case l.State == LedgerOpen:
		return "open", "m-open"
	}
	return "", ""
}

// faultLabels are the words drawn beside a faulty ledger, most serious first in
// the order markOf meets them on a ledger.
var faultLabels = map[string]string{
	"ledger-missing":              "lost",
	"ledger-node-without-entries": "entries lost",
	"ledger-entries-missing":      "entries missing",
	"entries-without-node":        "no node",
	"orphan-ledger":               "orphan",
	"entry-crc-mismatch":          "CRC mismatch",
	"entry-undecodable":           "undecodable",
	"value-truncated":             "truncated",
	"node-undecodable":            "bad node",
}

// dataLost reports whether a ledger's entries are gone (the bar is drawn red).
func dataLost(g *Ledger) bool {
	for _, f := range g.Faults {
		switch f.Kind {
		case "ledger-missing", "ledger-node-without-entries", "ledger-entries-missing":
			return true
		}
	}
	return false
}

// bucket is ledgers drawn as one bar because each would be under a pixel wide.
type bucket struct {
	x0, x1          float64
	n               int
	first, last     int64
	entries         int64
	withEntries     int
	covered         int
	faulty, entryID int
}

// timeline draws one topic's lanes: a bar per ledger (created → closed), shaded
// by entries; marks and labels on faulty, orphan, offloaded and open ledgers;
// the firstEntryIndex coverage strip under each indexed lane.
func timeline(t *Topic, a axis) template.HTML {
	var s svg
	height := axisH + len(t.Lanes)*laneH + 4
	s.printf(`<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartW, height, chartW, height, esc("ledger timeline of "+t.Name))
	s.printf(`<title>%s</title>`, esc("Ledger timeline of "+t.Name))
	s.ticks(a, height)
	var maxEntries int64 = 1
	for _, l := range t.Lanes {
		for _, g := range l.Ledgers {
			maxEntries = max(maxEntries, g.Entries)
		}
	}
	for i := range t.Lanes {
		lane(&s, &t.Lanes[i], a, axisH+i*laneH, maxEntries, t.Name)
	}
	s.printf(`</svg>`)
	return s.html()
}

func laneName(topic, base string) string {
	if rest, ok := strings.CutPrefix(topic, base); ok && rest != "" {
		return strings.TrimPrefix(rest, "-")
	}
	if i := strings.LastIndex(topic, "/"); i >= 0 {
		return topic[i+1:]
	}
	return topic
}

func lane(s *svg, l *Lane, a axis, y int, maxEntries int64, base string) {
	barY := y + laneLabelH
	label := laneName(l.Topic, base)
	if l.Indexed {
		label += fmt.Sprintf(" · index %d/%d", l.Covered, l.WithEntries)
	}
	s.printf(`<g class="lane" data-topic="%s"><text class="lanelabel" x="4" y="%d">%s</text>`, esc(l.Topic), barY+12, esc(label))
	s.printf(`<line class="laneline" x1="%d" x2="%d" y1="%d" y2="%d"/>`, labelW, labelW+plotW, barY+barH/2, barY+barH/2)
	if l.Error != "" {
		s.printf(`<text class="err" x="%d" y="%d">managed-ledger node unreadable: %s</text></g>`, labelW+4, barY+12, esc(trim(l.Error, 120)))
		return
	}
	if len(l.Ledgers) == 0 {
		s.printf(`<text class="muted" x="%d" y="%d">no ledgers</text></g>`, labelW+4, barY+12)
		return
	}
	end := a.t1
	for _, bs := range laneBars(l, a) {
		if bs.ledger == nil {
			s.printf(`<rect class="agg" x="%s" y="%d" width="%s" height="%d" fill-opacity="%s"><title>%s</title></rect>`,
				f1(bs.x0), barY, f1(bs.w), barH, shade(bs.entries, maxEntries),
				esc(fmt.Sprintf("%d ledgers (%d … %d), %d entries — drawn as one bar: each is under a pixel wide", bs.n, bs.first, bs.last, bs.total)))
			if bs.cov >= 0 {
				s.printf(`<rect class="cov" x="%s" y="%d" width="%s" height="%d" fill-opacity="%s"/>`, f1(bs.x0), barY+barH+2, f1(bs.w), stripH,
					f1(0.15+0.85*bs.cov))
			}
			continue
		}
		g := bs.ledger
		cls := "bar " + g.State
		if dataLost(g) {
			cls += " lost"
		} else if len(g.Faults) > 0 {
			cls += " faulty"
		}
		s.printf(`<rect class="%s" x="%s" y="%d" width="%s" height="%d" fill-opacity="%s"><title>%s</title></rect>`,
			cls, f1(bs.x0), barY, f1(bs.w), barH, shade(g.Entries, maxEntries), esc(ledgerTitle(g)))
		if bs.cov >= 0 {
			c := "cov"
			if bs.cov == 0 {
				c = "cov none"
			}
			s.printf(`<rect class="%s" x="%s" y="%d" width="%s" height="%d"/>`, c, f1(bs.x0), barY+barH+2, f1(bs.w), stripH)
		}
	}
	marks(s, l, a, end, barY)
	s.printf(`</g>`)
}

// ledgerSpan is a ledger's bar: created → closed; an open ledger runs to the end
// of the axis; unknown times collapse to the known one.
func ledgerSpan(g *Ledger, a axis, end int64) (x0, x1 float64) {
	st, en := g.Start, g.End
	if g.State == LedgerOpen || en == 0 && st > 0 {
		en = end
	}
	if st == 0 {
		st = en
	}
	return a.x(st), a.x(max(st, en))
}

func shade(entries, maxEntries int64) string {
	return f1(0.3 + 0.7*float64(entries)/float64(max(maxEntries, 1)))
}

func ledgerTitle(g *Ledger) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ledger %d (%s): %d entries, %d bytes", g.ID, g.State, g.Entries, g.Size)
	if g.Start > 0 {
		est := ""
		if g.StartEstimated {
			est = " (estimated: the ledger node is gone)"
		}
		fmt.Fprintf(&b, "\ncreated %s%s", msTime(g.Start), est)
	}
	if g.End > 0 {
		fmt.Fprintf(&b, "\nclosed %s", msTime(g.End))
	}
	if g.FirstEntryIndex {
		b.WriteString("\nhas firstEntryIndex")
	}
	for _, f := range g.Faults {
		fmt.Fprintf(&b, "\n%s: %s", f.Kind, f.Message)
	}
	return b.String()
}

// marks draws a triangle over each ledger worth marking, with its label while
// there is room (two bands; labels that fit neither are left to the list).
func marks(s *svg, l *Lane, a axis, end int64, barY int) {
	var bandEnd [2]float64
	labels := 0
	for i := range l.Ledgers {
		g := &l.Ledgers[i]
		label, class := markOf(g)
		if label == "" {
			continue
		}
		x0, x1 := ledgerSpan(g, a, end)
		x := (x0 + x1) / 2
		s.printf(`<g class="mark %s" data-ledger="%d" data-topic="%s" data-mark="%s"><title>%s</title>`,
			class, g.ID, esc(l.Topic), esc(label), esc(ledgerTitle(g)))
		s.printf(`<path d="M%s %d l-4 -7 h8 z"/>`, f1(x), barY-1)
		text := fmt.Sprintf("L%d %s", g.ID, label)
		w := float64(len(text))*6 + 6
		if labels < maxLabels {
			for band := range 2 {
				if x-2 >= bandEnd[band] && x+w <= chartW {
					s.printf(`<text x="%s" y="%d">%s</text>`, f1(x-2), barY-9-band*11, esc(text))
					bandEnd[band] = x + w
					labels++
					break
				}
			}
		}
		s.printf(`</g>`)
	}
}

// versions draws a schema key's versions on the topic's axis: a dot when the
// version was created, a bar over the publish times of the messages that use
// it, and its state: lost in red with the messages that need it, restored marked.
func versions(t *Topic, a axis) template.HTML {
	sc := t.Schema
	var s svg
	height := axisH + len(sc.Versions)*versionH + len(sc.Orphans)*versionH + 6
	s.printf(`<svg class="versions" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartW, height, chartW, height, esc("schema versions of "+sc.Key))
	s.printf(`<title>%s</title>`, esc("Schema versions of "+sc.Key))
	s.ticks(a, height)
	for i, v := range sc.Versions {
		y := axisH + i*versionH
		cls := versionClass(&v)
		s.printf(`<g class="version %s" data-version="%d" data-schema="%s"><title>%s</title>`, cls, v.Version, esc(sc.Key), esc(versionTitle(&v)))
		name := fmt.Sprintf("v%d", v.Version)
		if v.Type != "" {
			name += " " + v.Type
		}
		if v.Deleted {
			name += " (deleted)"
		}
		s.printf(`<text class="lanelabel" x="4" y="%d">%s</text>`, y+14, esc(name))
		s.printf(`<line class="laneline" x1="%d" x2="%d" y1="%d" y2="%d"/>`, labelW, labelW+plotW, y+10, y+10)
		if v.Messages > 0 && v.FirstPublish > 0 {
			x0, x1 := a.x(v.FirstPublish), a.x(v.LastPublish)
			s.printf(`<rect class="use" x="%s" y="%d" width="%s" height="10"/>`, f1(x0), y+5, f1(max(x1-x0, 2)))
		}
		if v.Created > 0 {
			s.printf(`<circle class="created" cx="%s" cy="%d" r="4"/>`, f1(a.x(v.Created)), y+10)
		}
		s.printf(`<text class="vstate" x="%d" y="%d">%s</text></g>`, labelW+plotW+6, y+14, esc(versionLabel(&v)))
	}
	for i, o := range sc.Orphans {
		y := axisH + (len(sc.Versions)+i)*versionH
		s.printf(`<g class="mark m-orphan-ledger" data-ledger="%d" data-mark="orphan"><title>%s</title>`, o.ID, esc(ledgerTitle(&o)))
		s.printf(`<text class="lanelabel" x="4" y="%d">orphan ledger %d</text>`, y+14, o.ID)
		if o.Start > 0 {
			s.printf(`<path d="M%s %d l-4 -7 h8 z"/>`, f1(a.x(o.Start)), y+14)
		}
		s.printf(`<text class="vstate" x="%d" y="%d">L%d orphan</text></g>`, labelW+plotW+6, y+14, o.ID)
	}
	s.printf(`</svg>`)
	return s.html()
}

func versionClass(v *Version) string {
	switch {
	case v.RestoredBy != "" && !v.RestoreUndone && !v.Lost:
		return "restored"
	case v.Lost:
		return "lost"
	case v.State != "ok":
		return "bad"
	}
	return "ok"
}

// versionLabel is the words right of a version's row.
func versionLabel(v *Version) string {
	switch {
	case v.Lost:
		return fmt.Sprintf("LOST · %s need it", count(v.Messages, "message"))
	case v.RestoredBy != "" && !v.RestoreUndone:
		return fmt.Sprintf("restored · %s", count(v.Messages, "message"))
	case v.State != "ok":
		return v.State
	}
	return count(v.Messages, "message")
}

func versionTitle(v *Version) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version %d: %s, ledger %d entry %d", v.Version, v.State, v.Ledger, v.Entry)
	if v.Detail != "" {
		fmt.Fprintf(&b, " (%s)", v.Detail)
	}
	if v.Created > 0 {
		fmt.Fprintf(&b, "\ncreated %s", msTime(v.Created))
	}
	if v.Messages > 0 {
		fmt.Fprintf(&b, "\n%s in %s, published %s to %s", count(v.Messages, "message"), count(v.Entries, "entry"),
			msTime(v.FirstPublish), msTime(v.LastPublish))
	}
	if v.RestoredBy != "" {
		fmt.Fprintf(&b, "\nrestored by run %s", v.RestoredBy)
		if v.RestoreUndone {
			b.WriteString(" (since undone)")
		}
	}
	return b.String()
}

func count(n int64, one string) string {
	if n == 1 {
		return "1 " + one
	}
	if one == "entry" {
		return strconv.FormatInt(n, 10) + " entries"
	}
	return strconv.FormatInt(n, 10) + " " + one + "s"
}

func msTime(ms int64) string {
	if ms <= 0 {
		return "unknown"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
