package html

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The PNG charts are the SVG timelines drawn as bitmaps for chat tools, which
// show images but not HTML. They are drawn from the same model with the same
// axis (labelW + plotW, so a ledger sits at the same x in both), the same
// aggregation (laneBars) and the same marks; rows are taller because the
// bitmap font is 13 px high.
const (
	glyphW       = 7 // basicfont.Face7x13's advance
	pngTitleH    = 24
	pngAxisH     = 20
	pngBandH     = 14              // one band of mark labels
	pngLaneTop   = 2*pngBandH + 10 // two label bands and the triangles, above the bars
	pngLaneH     = pngLaneTop + barH + stripH + 16
	pngVersionH  = 20
	pngLegendH   = 24
	pngMaxLanes  = 100 // a taller image is of no use in a chat; the HTML has every lane
	pngMaxName   = 120 // bytes of a file name taken from a topic name
	pngLabelPad  = 6
	markHalfBase = 4 // the triangle over a marked ledger: 8 px wide, 7 px high
	markHeight   = 7
)

// Colours are report.css's, so the PNG reads like the page.
var (
	colWhite     = rgb(0xffffff)
	colText      = rgb(0x2d3748)
	colMuted     = rgb(0x718096)
	colGrid      = rgb(0xe2e8f0)
	colLaneLine  = rgb(0xcbd5e0)
	colBar       = rgb(0x3182ce)
	colBarEdge   = rgb(0x2c5282)
	colAgg       = rgb(0x4a5568)
	colErr       = rgb(0xc53030) // lost data and faults: the colour a reader looks for
	colErrEdge   = rgb(0x742a2a)
	colWarn      = rgb(0xc05621)
	colOK        = rgb(0x2f855a)
	colOpen      = rgb(0x68d391)
	colOffloaded = rgb(0xcbd5e0)
	colCovNone   = rgb(0xa0aec0)
	colUse       = rgb(0x63b3ed)
)

func rgb(v uint32) color.RGBA { return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff} }

// blend is c at opacity alpha over white (SVG's fill-opacity on a white page).
func blend(c color.RGBA, alpha float64) color.RGBA {
	alpha = min(max(alpha, 0), 1)
	mix := func(v uint8) uint8 { return uint8(math.Round(float64(v)*alpha + 255*(1-alpha))) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
}

// shadeAlpha is shade's opacity as a number.
func shadeAlpha(entries, maxEntries int64) float64 {
	return 0.3 + 0.7*float64(entries)/float64(max(maxEntries, 1))
}

// barShape is one bar of a lane: a ledger, or ledgers merged because each would
// be under a pixel wide.
type barShape struct {
	x0, w   float64
	ledger  *Ledger // nil for a merged bar
	n       int     // ledgers in a merged bar
	entries int64   // a merged bar's mean entries
	// first, last and total describe a merged bar: its ledger ids and entries.
	first, last, total int64
	// cov is the firstEntryIndex strip: -1 none, else the covered fraction.
	cov float64
}

// laneBars is a lane's aggregation, shared by the SVG (lane) and the PNG: a bar
// per ledger at least a pixel wide, runs of narrower ones merged, orphans left to
// their marks.
func laneBars(l *Lane, a axis) []barShape {
	var out []barShape
	var b *bucket
	flush := func() {
		if b == nil {
			return
		}
		cov := -1.0
		if l.Indexed && b.withEntries > 0 {
			cov = float64(b.covered) / float64(b.withEntries)
		}
		out = append(out, barShape{x0: b.x0, w: max(b.x1-b.x0, 1), n: b.n, entries: b.entries / int64(b.n), cov: cov,
			first: b.first, last: b.last, total: b.entries})
		b = nil
	}
	for i := range l.Ledgers {
		g := &l.Ledgers[i]
		x0, x1 := ledgerSpan(g, a, a.t1)
		if x1-x0 < 1 && g.State != LedgerOrphan {
			if b == nil || x0-b.x1 > 1 {
				flush()
				b = &bucket{x0: x0, first: g.ID}
			}
			b.x1, b.last = max(b.x1, x1), g.ID
			b.n++
			b.entries += g.Entries
			if g.Entries > 0 {
				b.withEntries++
				if g.FirstEntryIndex {
					b.covered++
				}
			}
			if b.x1-b.x0 >= 1 {
				flush()
			}
			continue
		}
		flush()
		if g.State == LedgerOrphan {
			continue
		}
		cov := -1.0
		if l.Indexed && g.Entries > 0 {
			cov = 0
			if g.FirstEntryIndex {
				cov = 1
			}
		}
		out = append(out, barShape{x0: x0, w: max(x1-x0, 1), ledger: g, entries: g.Entries, cov: cov})
	}
	flush()
	return out
}

// markShape is a marked ledger: its triangle's x, its label, and whether the
// label found room (at most maxLabels per lane, in two bands, as in marks()).
type markShape struct {
	x       int
	label   string
	class   string
	band    int // -1: not labelled
	labelX  int
	ledger  *Ledger
	colour  color.RGBA
	labelCo color.RGBA
}

func laneMarks(l *Lane, a axis) []markShape {
	var bandEnd [2]float64
	labels := 0
	var out []markShape
	for i := range l.Ledgers {
		g := &l.Ledgers[i]
		label, class := markOf(g)
		if label == "" {
			continue
		}
		x0, x1 := ledgerSpan(g, a, a.t1)
		x := (x0 + x1) / 2
		m := markShape{x: int(math.Round(x)), label: ascii(fmt.Sprintf("L%d %s", g.ID, label)), class: class, band: -1, ledger: g}
		m.colour, m.labelCo = markColours(class)
		w := float64(len(m.label)*glyphW + pngLabelPad)
		if labels < maxLabels {
			for band := range 2 {
				if x-2 >= bandEnd[band] && x+w <= chartW {
					m.band, m.labelX = band, int(math.Round(x-2))
					bandEnd[band] = x + w
					labels++
					break
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// markColours are report.css's .mark rules: triangle, then label.
func markColours(class string) (tri, text color.RGBA) {
	switch class {
	case "m-offloaded":
		return colMuted, colAgg
	case "m-open":
		return colOK, colOK
	case "m-orphan-ledger", "m-entries-without-node":
		return colWarn, colWarn
	}
	return colErr, colErr
}

// canvas draws rectangles, lines and text on an RGBA image.
type canvas struct{ img *image.RGBA }

func newCanvas(w, h int) canvas {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(colWhite), image.Point{}, draw.Src)
	return canvas{img}
}

// fill paints [x0,x1)×[y0,y1); draw.Draw clips to the image.
func (c canvas) fill(x0, y0, x1, y1 int, col color.RGBA) {
	draw.Draw(c.img, image.Rect(x0, y0, x1, y1), image.NewUniform(col), image.Point{}, draw.Src)
}

// frame paints a 1 px border inside [x0,x1)×[y0,y1).
func (c canvas) frame(x0, y0, x1, y1 int, col color.RGBA) {
	c.fill(x0, y0, x1, y0+1, col)
	c.fill(x0, y1-1, x1, y1, col)
	c.fill(x0, y0, x0+1, y1, col)
	c.fill(x1-1, y0, x1, y1, col)
}

// dashed is a horizontal 2-on 3-off line, like the SVG's lane line.
func (c canvas) dashed(x0, x1, y int, col color.RGBA) {
	for x := x0; x < x1; x += 5 {
		c.fill(x, y, min(x+2, x1), y+1, col)
	}
}

// triangle points down at (x, apexY), as the SVG's mark path.
func (c canvas) triangle(x, apexY int, col color.RGBA) {
	for dy := range markHeight {
		half := (dy*markHalfBase + markHeight/2) / markHeight
		c.fill(x-half, apexY-dy, x+half+1, apexY-dy+1, col)
	}
}

func (c canvas) disk(cx, cy, r int, col color.RGBA) {
	for dy := -r; dy <= r; dy++ {
		half := int(math.Sqrt(float64(r*r - dy*dy)))
		c.fill(cx-half, cy+dy, cx+half+1, cy+dy+1, col)
	}
}

// text draws s with its baseline at y; bold draws it twice, a pixel apart.
func (c canvas) text(x, y int, s string, col color.RGBA, bold bool) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
	if bold {
		d.Dot = fixed.P(x+1, y)
		d.DrawString(s)
	}
}

// ascii makes store text drawable: the bitmap font has ASCII only.
func ascii(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r == '…':
			b.WriteString("...")
		case r == '·', r == '—', r == '–':
			b.WriteByte('-')
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// fit cuts s to px pixels of text, marking the cut.
func fit(s string, px int) string {
	n := px / glyphW
	if len(s) <= n {
		return s
	}
	if n <= 2 {
		return s[:max(n, 0)]
	}
	return s[:n-2] + ".."
}

// pngTicks draws the time axis as ticks() does, between y0 and y1.
func (c canvas) ticks(a axis, y0, y1 int) {
	span := time.Duration(a.t1-a.t0) * time.Millisecond
	step := niceStep(span / 6)
	layout := "15:04:05"
	if span > 48*time.Hour {
		layout = "2006-01-02"
	} else if span > 6*time.Hour {
		layout = "01-02 15:04"
	}
	c.text(4, y0+13, time.UnixMilli(a.t0).UTC().Format("2006-01-02")+" UTC", colMuted, true)
	for t := time.UnixMilli(a.t0).UTC().Truncate(step); t.UnixMilli() <= a.t1; t = t.Add(step) {
		if t.UnixMilli() < a.t0 {
			continue
		}
		x := int(math.Round(a.x(t.UnixMilli())))
		c.fill(x, y0+pngAxisH-6, x+1, y1, colGrid)
		label := t.Format(layout)
		c.text(x-len(label)*glyphW/2, y0+13, label, colMuted, false)
	}
}

// TimelinePNG draws a topic's ledger timeline; false when the topic has no
// lanes or no known time (the page shows no chart either).
func TimelinePNG(t *Topic) (*image.RGBA, bool) {
	a, ok := topicAxis(t)
	if !ok || len(t.Lanes) == 0 {
		return nil, false
	}
	lanes := t.Lanes[:min(len(t.Lanes), pngMaxLanes)]
	plotTop := pngTitleH + pngAxisH
	height := plotTop + len(lanes)*pngLaneH + pngLegendH
	c := newCanvas(chartW, height)
	title := "Ledger timeline of " + ascii(t.Name)
	if len(lanes) < len(t.Lanes) {
		title += fmt.Sprintf(" (first %d of %d lanes; the HTML report has all)", len(lanes), len(t.Lanes))
	}
	c.text(4, 16, fit(title, chartW-8), colText, true)
	c.ticks(a, pngTitleH, height-pngLegendH)
	var maxEntries int64 = 1
	for _, l := range t.Lanes {
		for _, g := range l.Ledgers {
			maxEntries = max(maxEntries, g.Entries)
		}
	}
	for i := range lanes {
		c.lane(&lanes[i], a, plotTop+i*pngLaneH, maxEntries, t.Name)
	}
	c.legend(height - pngLegendH)
	return c.img, true
}

// laneBarY is where a lane's bars start, for a lane whose row starts at y.
func laneBarY(y int) int { return y + pngLaneTop }

func (c canvas) lane(l *Lane, a axis, y int, maxEntries int64, base string) {
	barY := laneBarY(y)
	label := ascii(laneName(l.Topic, base))
	if l.Indexed {
		label += fmt.Sprintf(" | index %d/%d", l.Covered, l.WithEntries)
	}
	c.text(4, barY+12, fit(label, labelW-8), colText, false)
	c.dashed(labelW, labelW+plotW, barY+barH/2, colLaneLine)
	if l.Error != "" {
		c.text(labelW+4, barY+12, fit("managed-ledger node unreadable: "+ascii(l.Error), plotW+rightW-8), colErr, false)
		return
	}
	if len(l.Ledgers) == 0 {
		c.text(labelW+4, barY+12, "no ledgers", colMuted, false)
		return
	}
	for _, b := range laneBars(l, a) {
		c.bar(b, barY, maxEntries)
	}
	ms := laneMarks(l, a)
	unlabelled := 0
	for _, m := range ms {
		c.triangle(m.x, barY-1, m.colour)
		if m.band < 0 {
			unlabelled++
			continue
		}
		c.text(m.labelX, barY-11-m.band*pngBandH, m.label, m.labelCo, m.labelCo == colErr)
	}
	summary := fmt.Sprintf("%s, %d marked", count(int64(len(l.Ledgers)), "ledger"), len(ms))
	c.text(labelW+plotW+8, barY+12, fit(summary, rightW-10), colMuted, false)
	if unlabelled > 0 {
		c.text(labelW+plotW+8, barY+barH+stripH+13, fit(fmt.Sprintf("%d not labelled (see the HTML)", unlabelled), rightW-10), colMuted, false)
	}
}

// bar draws one bar and its coverage strip with report.css's look.
func (c canvas) bar(b barShape, barY int, maxEntries int64) {
	x0 := int(math.Floor(b.x0))
	x1 := max(int(math.Ceil(b.x0+b.w)), x0+1)
	y1 := barY + barH
	switch g := b.ledger; {
	case g == nil:
		c.fill(x0, barY, x1, y1, blend(colAgg, shadeAlpha(b.entries, maxEntries)))
	case dataLost(g):
		c.fill(x0, barY, x1, y1, colErr)
		if x1-x0 >= 3 {
			c.fill(x0, barY, x0+1, y1, colErrEdge)
		}
	case g.State == LedgerOffloaded:
		c.fill(x0, barY, x1, y1, colOffloaded)
		c.frame(x0, barY, x1, y1, colMuted)
	case g.State == LedgerOpen:
		c.fill(x0, barY, x1, y1, colOpen)
		c.frame(x0, barY, x1, y1, colOK)
	default:
		c.fill(x0, barY, x1, y1, blend(colBar, shadeAlpha(b.entries, maxEntries)))
		if x1-x0 >= 3 {
			c.fill(x0, barY, x0+1, y1, colBarEdge)
		}
	}
	if g := b.ledger; g != nil && !dataLost(g) && len(g.Faults) > 0 {
		c.frame(x0, barY, x1, y1, colErr)
		if x1-x0 >= 4 {
			c.frame(x0+1, barY+1, x1-1, y1-1, colErr)
		}
	}
	if b.cov < 0 {
		return
	}
	sy := barY + barH + 2
	switch {
	case b.ledger == nil:
		c.fill(x0, sy, x1, sy+stripH, blend(colOK, 0.15+0.85*b.cov))
	case b.cov > 0:
		c.fill(x0, sy, x1, sy+stripH, colOK)
	default:
		c.fill(x0, sy, x1, sy+stripH, colGrid)
		c.frame(x0, sy, x1, sy+stripH, colCovNone)
	}
}

// legend names the colours at the foot of a timeline.
func (c canvas) legend(y int) {
	x := 4
	item := func(label string, draw func(x, y int)) {
		draw(x, y+6)
		c.text(x+18, y+15, label, colText, false)
		x += 18 + len(label)*glyphW + 16
	}
	swatch := func(col color.RGBA) func(x, y int) {
		return func(x, y int) { c.fill(x, y, x+14, y+10, col) }
	}
	item("ledger (darker: more entries)", swatch(colBar))
	item("merged (each < 1 px)", swatch(colAgg))
	item("entries lost", swatch(colErr))
	item("open", swatch(colOpen))
	item("offloaded", swatch(colOffloaded))
	item("firstEntryIndex", func(x, y int) { c.fill(x, y+3, x+14, y+3+stripH, colOK) })
	item("fault / orphan / marked", func(x, y int) { c.triangle(x+7, y+9, colErr) })
}

// VersionsPNG draws a topic's schema versions on the topic's axis; false when
// there is no schema chart on the page either.
func VersionsPNG(t *Topic) (*image.RGBA, bool) {
	a, ok := topicAxis(t)
	sc := t.Schema
	if !ok || sc == nil || len(sc.Versions)+len(sc.Orphans) == 0 {
		return nil, false
	}
	plotTop := pngTitleH + pngAxisH
	height := plotTop + (len(sc.Versions)+len(sc.Orphans))*pngVersionH + 8
	c := newCanvas(chartW, height)
	c.text(4, 16, fit("Schema versions of "+ascii(sc.Key), chartW-8), colText, true)
	c.ticks(a, pngTitleH, height)
	for i := range sc.Versions {
		c.version(&sc.Versions[i], a, plotTop+i*pngVersionH)
	}
	for i := range sc.Orphans {
		o := &sc.Orphans[i]
		y := plotTop + (len(sc.Versions)+i)*pngVersionH
		c.text(4, y+14, fmt.Sprintf("orphan ledger %d", o.ID), colWarn, false)
		c.dashed(labelW, labelW+plotW, y+10, colLaneLine)
		if o.Start > 0 {
			c.triangle(int(math.Round(a.x(o.Start))), y+14, colWarn)
		}
		c.text(labelW+plotW+6, y+14, fmt.Sprintf("L%d orphan", o.ID), colWarn, true)
	}
	return c.img, true
}

func (c canvas) version(v *Version, a axis, y int) {
	use, text, state := colUse, colText, colText
	switch versionClass(v) {
	case "lost":
		use, text, state = colErr, colErr, colErr
	case "restored":
		use, state = colOpen, colOK
	case "bad":
		state = colWarn
	}
	name := fmt.Sprintf("v%d", v.Version)
	if v.Type != "" {
		name += " " + ascii(v.Type)
	}
	if v.Deleted {
		name += " (deleted)"
	}
	c.text(4, y+14, fit(name, labelW-8), text, v.Lost)
	c.dashed(labelW, labelW+plotW, y+10, colLaneLine)
	if v.Messages > 0 && v.FirstPublish > 0 {
		x0 := a.x(v.FirstPublish)
		w := max(a.x(v.LastPublish)-x0, 2)
		c.fill(int(math.Floor(x0)), y+5, int(math.Ceil(x0+w)), y+15, use)
	}
	if v.Created > 0 {
		c.disk(int(math.Round(a.x(v.Created))), y+10, 4, colBarEdge)
	}
	c.text(labelW+plotW+6, y+14, fit(ascii(versionLabel(v)), rightW-8), state, v.Lost)
}

// PNGFile is one chart written by WritePNGs.
type PNGFile struct {
	Path  string
	Topic string
	Chart string // "timeline" or "schema"
}

// WritePNGs writes each topic's timeline, and its schema versions when it has a
// schema chart, as PNG files in dir (created when missing). File names come from
// topic names, made filesystem-safe and unique within the report. Each file is
// written to a temp name and renamed, so a failed run leaves no half image.
func WritePNGs(dir string, r *Report) ([]PNGFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("png dir %s: %w", dir, err)
	}
	names := newFileNames()
	var out []PNGFile
	for i := range r.Topics {
		t := &r.Topics[i]
		base := safeName(t.Name)
		if img, ok := TimelinePNG(t); ok {
			p := filepath.Join(dir, names.unique(base, ".png"))
			if err := writePNG(p, img); err != nil {
				return out, err
			}
			out = append(out, PNGFile{Path: p, Topic: t.Name, Chart: "timeline"})
		}
		if img, ok := VersionsPNG(t); ok {
			p := filepath.Join(dir, names.unique(base, ".schema.png"))
			if err := writePNG(p, img); err != nil {
				return out, err
			}
			out = append(out, PNGFile{Path: p, Topic: t.Name, Chart: "schema"})
		}
	}
	return out, nil
}

func writePNG(path string, img image.Image) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".chart-*.png")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	bw := bufio.NewWriterSize(f, 1<<16)
	err = png.Encode(bw, img)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// safeName turns a topic name into a file name: "persistent://acme/orders/o"
// becomes "persistent_acme_orders_o". Only [A-Za-z0-9._-] survive, it never
// starts with a dot (hidden, or "..") and stays well under NAME_MAX.
func safeName(topic string) string {
	s := strings.Replace(topic, "://", "_", 1)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s = b.String()
	if len(s) > pngMaxName {
		s = s[:pngMaxName]
	}
	if s == "" || s[0] == '.' {
		s = "_" + s
	}
	return s
}

// fileNames hands out names no other chart of the report has, ignoring case
// (macOS and Windows file systems do).
type fileNames map[string]bool

func newFileNames() fileNames { return fileNames{} }

func (f fileNames) unique(base, ext string) string {
	name := base + ext
	for i := 2; f[strings.ToLower(name)]; i++ {
		name = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
	f[strings.ToLower(name)] = true
	return name
}
