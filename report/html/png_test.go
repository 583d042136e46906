package html

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// FaultColour and MarkPixel let the fixture test (package html_test, which may
// import inspect) find a mark in a TimelinePNG.
var FaultColour = colErr

// MarkPixel is a pixel inside the triangle TimelinePNG draws over ledger id:
// the triangle's centre column, 3 px above its apex, a row only triangles use.
func MarkPixel(t *Topic, id int64) (x, y int, ok bool) {
	a, ok := topicAxis(t)
	if !ok {
		return 0, 0, false
	}
	for i := range t.Lanes[:min(len(t.Lanes), pngMaxLanes)] {
		for j := range t.Lanes[i].Ledgers {
			g := &t.Lanes[i].Ledgers[j]
			if g.ID == id {
				x0, x1 := ledgerSpan(g, a, a.t1)
				return int(math.Round((x0 + x1) / 2)), markRow(i), true
			}
		}
	}
	return 0, 0, false
}

func markRow(lane int) int { return laneBarY(pngTitleH+pngAxisH+lane*pngLaneH) - 4 }

// The PNG merges and keeps exactly the bars the SVG does.
func TestPNGBarsMatchSVG(t *testing.T) {
	for _, n := range []int{1, 10, 1000, 10_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tp := bigTopic(n, 7)
			a, _ := topicAxis(&tp)
			svg := string(timeline(&tp, a))
			want := strings.Count(svg, `<rect class="bar `) + strings.Count(svg, `<rect class="agg"`)
			if got := len(laneBars(&tp.Lanes[0], a)); got != want {
				t.Errorf("PNG has %d bars, SVG %d", got, want)
			}
			svgMarks := len(regexp.MustCompile(`<g class="mark `).FindAllString(svg, -1))
			svgLabels := strings.Count(svg, `<text x=`)
			ms := laneMarks(&tp.Lanes[0], a)
			labelled := 0
			for _, m := range ms {
				if m.band >= 0 {
					labelled++
				}
			}
			if len(ms) != svgMarks {
				t.Errorf("PNG marks %d ledgers, SVG %d", len(ms), svgMarks)
			}
			// The bitmap font is wider (7 px against 6), so the PNG may label fewer.
			if labelled > maxLabels || labelled > svgLabels || labelled == 0 {
				t.Errorf("PNG labels %d marks (SVG %d, bound %d)", labelled, svgLabels, maxLabels)
			}
		})
	}
}

// At every column of the triangle row, the fault colour is there exactly where
// a lost ledger's triangle is, at 10 ledgers and at 10,000; the image has the
// size the geometry says, and the encoded file stays small.
func TestTimelinePNGMarksEveryLostLedger(t *testing.T) {
	cases := []struct {
		ledgers, step int
		maxBytes      int
	}{
		{10, 3, 64 << 10},
		{1000, 100, 128 << 10},
		{10_000, 250, 256 << 10},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.ledgers), func(t *testing.T) {
			tp := bigTopic(tc.ledgers, tc.step)
			img, ok := TimelinePNG(&tp)
			if !ok {
				t.Fatal("no timeline")
			}
			if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != chartW || h != pngTitleH+pngAxisH+pngLaneH+pngLegendH {
				t.Errorf("image is %dx%d", w, h)
			}
			var marks []int
			for i := 0; i < tc.ledgers; i += tc.step {
				x, _, ok := MarkPixel(&tp, int64(i+1))
				if !ok {
					t.Fatalf("ledger %d not found", i+1)
				}
				marks = append(marks, x)
			}
			y := markRow(0)
			for x := labelW; x < labelW+plotW; x++ {
				near := false
				for _, m := range marks {
					near = near || abs(x-m) <= 2
				}
				if red := img.RGBAAt(x, y) == colErr; red != near {
					t.Errorf("x=%d: fault colour %v, a lost ledger's mark within 2 px %v", x, red, near)
				}
			}
			var b bytes.Buffer
			if err := png.Encode(&b, img); err != nil {
				t.Fatal(err)
			}
			if b.Len() > tc.maxBytes {
				t.Errorf("PNG is %d bytes, bound %d", b.Len(), tc.maxBytes)
			}
			if _, err := png.Decode(&b); err != nil {
				t.Errorf("decode: %v", err)
			}
		})
	}
}

func toRGBA(c color.Color) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

func abs(v int) int { return max(v, -v) }

// Topic names become safe, unique file names, also on case-insensitive disks.
func TestPNGFileNames(t *testing.T) {
	long := "persistent://t/ns/" + strings.Repeat("x", 300)
	cases := []struct {
		topics []string
		want   []string
	}{
		{[]string{"persistent://acme/orders/orders"}, []string{"persistent_acme_orders_orders.png"}},
		{[]string{"persistent://a/b_c/d", "persistent://a_b/c/d", "persistent://A/b_c/d"},
			[]string{"persistent_a_b_c_d.png", "persistent_a_b_c_d-2.png", "persistent_A_b_c_d-3.png"}},
		{[]string{"../../etc/passwd", "..", ""}, []string{"_.._.._etc_passwd.png", "_...png", "_.png"}},
		{[]string{"persistent://t/ns/ünï cödé"}, []string{"persistent_t_ns__n__c_d_.png"}},
		{[]string{long}, []string{safeName(long) + ".png"}},
	}
	for _, tc := range cases {
		names := newFileNames()
		for i, topic := range tc.topics {
			got := names.unique(safeName(topic), ".png")
			if got != tc.want[i] {
				t.Errorf("%q: file %q, want %q", topic, got, tc.want[i])
			}
			if len(got) > 255 || strings.ContainsAny(got, `/\:*?"<>| `) {
				t.Errorf("%q: file name %q is not safe", topic, got)
			}
		}
	}
}

// WritePNGs writes a timeline per topic with ledgers and a schema chart per topic
// with versions, each a PNG that decodes, and says which.
func TestWritePNGs(t *testing.T) {
	withSchema := bigTopic(20, 5)
	withSchema.Schema = &Schema{Key: "t/ns/big", Versions: []Version{
		{Version: 0, Type: "AVRO", State: "ok", Created: withSchema.Lanes[0].Ledgers[0].Start, Messages: 3,
			FirstPublish: withSchema.Lanes[0].Ledgers[1].Start, LastPublish: withSchema.Lanes[0].Ledgers[8].End},
		{Version: 1, Type: "AVRO", State: "ledger-lost", Lost: true, Messages: 7,
			FirstPublish: withSchema.Lanes[0].Ledgers[9].Start, LastPublish: withSchema.Lanes[0].Ledgers[18].End}}}
	empty := Topic{Name: "persistent://t/ns/idle", Note: "the topic has no ledgers"}
	dir := filepath.Join(t.TempDir(), "charts", "nested")
	files, err := WritePNGs(dir, &Report{GeneratedAt: time.Unix(0, 0), Topics: []Topic{withSchema, empty}})
	if err != nil {
		t.Fatal(err)
	}
	want := []PNGFile{
		{filepath.Join(dir, "persistent_t_ns_big.png"), "persistent://t/ns/big", "timeline"},
		{filepath.Join(dir, "persistent_t_ns_big.schema.png"), "persistent://t/ns/big", "schema"},
	}
	if fmt.Sprint(files) != fmt.Sprint(want) {
		t.Fatalf("wrote %v, want %v", files, want)
	}
	for _, f := range files {
		img := decodeFile(t, f.Path)
		if img.Bounds().Dx() != chartW {
			t.Errorf("%s is %d px wide", f.Path, img.Bounds().Dx())
		}
	}
	// The lost version's row is red where its messages were published.
	sc := decodeFile(t, files[1].Path)
	a, _ := topicAxis(&withSchema)
	x := int(math.Round(a.x(withSchema.Lanes[0].Ledgers[12].Start)))
	y := pngTitleH + pngAxisH + 1*pngVersionH + 10
	if c := toRGBA(sc.At(x, y)); c != colErr {
		t.Errorf("lost version's use bar at (%d,%d) is %v", x, y, c)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(files) {
		t.Errorf("%d files in %s (temp files left?)", len(entries), dir)
	}
}

func decodeFile(t *testing.T, path string) image.Image {
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
	return img
}

// A --png that is a file is refused with the path named; nothing is written.
func TestWritePNGsIntoAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tp := bigTopic(3, 1)
	_, err := WritePNGs(file, &Report{Topics: []Topic{tp}})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("error %v, want one naming %s", err, file)
	}
}

// Store text the font cannot draw is replaced, never dropped silently or a panic.
func TestPNGDrawsAnyText(t *testing.T) {
	tp := bigTopic(5, 1)
	tp.Name = "persistent://t/ns/\u00e9v\u00e9nements\u2603\x00\xff"
	tp.Lanes[0].Topic = tp.Name + "-partition-0"
	if _, ok := TimelinePNG(&tp); !ok {
		t.Fatal("no timeline")
	}
	if got := ascii("a·b…c—d\u2603\x01"); got != "a-b...c-d??" {
		t.Errorf("ascii = %q", got)
	}
	if got := fit("abcdefghij", 5*glyphW); got != "abc.." {
		t.Errorf("fit = %q", got)
	}
}
