package app

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/inspect"
	htmlreport "github.com/ledgermedic/ledgermedic/report/html"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// everyFault is a fixture with one of each fault kind the generator makes.
var everyFault = fixtures.Options{Seed: 3, LoseSchemaLedgers: 2, LoseSchemaEntries: 1, LoseTopicLedger: true,
	LoseEntriesOnly: true, OrphanLedger: true, CorruptCRC: true}

// domNode is an element of the rendered DOM: its attributes and its text.
type domNode struct {
	tag, class string
	attr       map[string]string
	text       string
	topic      string // data-topic of the enclosing article
}

// parseDOM collects every element with a class, with the topic article it sits in.
func parseDOM(t *testing.T, dom string) []domNode {
	t.Helper()
	root, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatalf("parse DOM: %v", err)
	}
	var out []domNode
	var walk func(n *html.Node, topic string)
	walk = func(n *html.Node, topic string) {
		if n.Type == html.ElementNode {
			d := domNode{tag: n.Data, attr: map[string]string{}, topic: topic}
			for _, a := range n.Attr {
				d.attr[a.Key] = a.Val
			}
			d.class = d.attr["class"]
			if n.Data == "article" {
				topic = d.attr["data-topic"]
				d.topic = topic
			}
			d.text = textOf(n)
			out = append(out, d)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, topic)
		}
	}
	walk(root, "")
	return out
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var f func(*html.Node)
	f = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			f(c)
		}
	}
	f(n)
	return b.String()
}

func hasClass(d domNode, c string) bool { return slices.Contains(strings.Fields(d.class), c) }

// mark is one labelled place in the report: a ledger or a schema version, in a topic.
type mark struct {
	topic, what, kind string
}

// wantMarks is what the manifest says the report must name: its faults, orphans,
// offloaded and open ledgers (restored: lost schema versions a repair brought back).
func wantMarks(m *fixtures.Manifest, restored bool) (faults, others map[mark]bool) {
	faults, others = map[mark]bool{}, map[mark]bool{}
	keyTopic := map[string]string{}
	for _, s := range m.Schemas {
		keyTopic[s.Key] = s.Topic
	}
	for _, f := range m.Faults {
		switch f.Kind {
		case fixtures.FaultLostTopicLedger:
			faults[mark{f.Topic, "ledger " + strconv.FormatInt(f.Ledger, 10), inspect.KindLedgerMissing}] = true
		case fixtures.FaultLostTopicEntries:
			faults[mark{f.Topic, "ledger " + strconv.FormatInt(f.Ledger, 10), inspect.KindLedgerNodeWithoutEntries}] = true
		case fixtures.FaultCorruptCRC:
			faults[mark{f.Topic, "ledger " + strconv.FormatInt(f.Ledger, 10), inspect.KindEntryCRCMismatch}] = true
		case fixtures.FaultLostSchemaLedger, fixtures.FaultLostSchemaEntries:
			v := mark{keyTopic[f.SchemaKey], "version " + strconv.FormatInt(*f.Version, 10), "lost"}
			if restored {
				v.kind = "restored"
				others[v] = true
			} else {
				faults[v] = true
			}
		}
	}
	for _, o := range m.Orphans {
		topic := ""
		if o.Kind == fixtures.OrphanSchema {
			topic = keyTopic[o.SchemaKey]
		} else {
			for _, ml := range m.ManagedLedgers {
				if ml.Name == o.ManagedLedger {
					topic = ml.Topic
				}
			}
		}
		faults[mark{topic, "ledger " + strconv.FormatInt(o.Ledger, 10), inspect.KindOrphanLedger}] = true
	}
	for _, ml := range m.ManagedLedgers {
		for _, l := range ml.Ledgers {
			switch {
			case l.Offloaded:
				others[mark{ml.Topic, "ledger " + strconv.FormatInt(l.ID, 10), "offloaded"}] = true
			case l.Open:
				others[mark{ml.Topic, "ledger " + strconv.FormatInt(l.ID, 10), "open"}] = true
			}
		}
	}
	return faults, others
}

// gotMarks reads the marks list of every topic article.
func gotMarks(t *testing.T, nodes []domNode, m *fixtures.Manifest) (faults, others map[mark]bool) {
	faults, others = map[mark]bool{}, map[mark]bool{}
	for _, d := range nodes {
		if d.tag != "li" || !hasClass(d, "mark") {
			continue
		}
		mk := mark{topic: d.attr["data-topic"], kind: d.attr["data-kind"]}
		if v := d.attr["data-version"]; v != "" {
			mk.what = "version " + v
			switch {
			case strings.Contains(d.text, "LOST"):
				mk.kind = "lost"
			case strings.Contains(d.text, "restored"):
				mk.kind = "restored"
			}
		} else {
			mk.what = "ledger " + d.attr["data-ledger"]
		}
		if d.topic == "" {
			t.Errorf("mark %+v outside a topic article", mk)
		}
		if hasClass(d, "fault") {
			faults[mk] = true
		} else {
			others[mk] = true
		}
	}
	return faults, others
}

func diffMarks(t *testing.T, what string, got, want map[mark]bool) {
	t.Helper()
	for m := range want {
		if !got[m] {
			t.Errorf("%s: the report does not name %+v", what, m)
		}
	}
	for m := range got {
		if !want[m] {
			t.Errorf("%s: the report names %+v, which the manifest does not have", what, m)
		}
	}
}

// TestReportInChromium renders the report in headless Chromium and checks the DOM
// it built: every topic of the manifest has its article, and the marks name
// exactly the manifest's faults (and its orphan, offloaded and open ledgers) at
// their places, both in the list and as labelled SVG marks on the timeline.
func TestReportInChromium(t *testing.T) {
	testutil.SkipWithoutChromium(t)
	faulty, fm := testutil.Fixture(t, everyFault)
	demoDir := filepath.Join(t.TempDir(), "demo")
	if out, errOut, code := runApp(t, "demo", "--dir", demoDir); code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out, errOut)
	}
	demo := filepath.Join(demoDir, "cluster")
	dm, err := fixtures.LoadManifest(demo)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		dir      string
		m        *fixtures.Manifest
		restored bool // the demo repaired its lost schema versions
		exit     int
	}{
		{"every fault kind", faulty, fm, false, 1},
		{"demo cluster after repair", demo, dm, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report.html")
			if o, e, code := runApp(t, "--data-dir", tc.dir, "report", "--out", out); code != tc.exit {
				t.Fatalf("report exit %d, want %d\n%s\n%s", code, tc.exit, o, e)
			}
			shot := filepath.Join(t.TempDir(), "report.png")
			testutil.ChromiumScreenshot(t, out, shot, 1360, 2000)
			checkPNG(t, shot, 1360, 2000)
			nodes := parseDOM(t, testutil.ChromiumDOM(t, out))
			var topics []string
			for _, d := range nodes {
				if d.tag == "article" && hasClass(d, "topic") {
					topics = append(topics, d.attr["data-topic"])
				}
			}
			var want []string
			for _, tu := range tc.m.Topics {
				want = append(want, tu.Topic)
			}
			slices.Sort(want)
			if !slices.Equal(topics, want) {
				t.Errorf("topics in the DOM %v, manifest %v", topics, want)
			}
			wf, wo := wantMarks(tc.m, tc.restored)
			if len(wf)+len(wo) == 0 {
				t.Fatal("the manifest names nothing to look for")
			}
			gf, gots := gotMarks(t, nodes, tc.m)
			diffMarks(t, "faults", gf, wf)
			diffMarks(t, "other marks", gots, wo)
			checkSVGMarks(t, nodes, wf)
			checkFilterScript(t, nodes)
		})
	}
}

// checkSVGMarks insists each faulty ledger and lost version is also drawn and
// labelled on its topic's charts.
func checkSVGMarks(t *testing.T, nodes []domNode, want map[mark]bool) {
	t.Helper()
	for m := range want {
		found := false
		for _, d := range nodes {
			if d.tag != "g" {
				continue
			}
			switch {
			case strings.HasPrefix(m.what, "ledger ") && hasClass(d, "mark"):
				id := strings.TrimPrefix(m.what, "ledger ")
				found = found || d.attr["data-ledger"] == id && strings.Contains(d.text, "L"+id+" ") && baseOf(d.topic) == baseOf(m.topic)
			case strings.HasPrefix(m.what, "version ") && hasClass(d, "version") && hasClass(d, "lost"):
				found = found || d.attr["data-version"] == strings.TrimPrefix(m.what, "version ") && d.topic == m.topic &&
					strings.Contains(d.text, "LOST")
			}
		}
		if !found {
			t.Errorf("no labelled SVG mark for %+v", m)
		}
	}
}

func baseOf(topic string) string {
	tn, err := formats.ParseTopic(topic)
	if err != nil {
		return topic
	}
	return tn.Base().String()
}

// checkFilterScript: the inline script ran (it fills the "n of m shown" counter).
func checkFilterScript(t *testing.T, nodes []domNode) {
	t.Helper()
	for _, d := range nodes {
		if d.attr["id"] == "f-shown" {
			if !strings.Contains(d.text, " shown") {
				t.Errorf("the findings filter did not run: counter %q", d.text)
			}
			return
		}
	}
	t.Error("no findings filter in the DOM")
}

func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if cfg.Width != w || cfg.Height != h {
		t.Errorf("screenshot is %dx%d, want %dx%d", cfg.Width, cfg.Height, w, h)
	}
}

// TestReportSaysSoOnBadInput: an empty dir, empty stores, a topic that is not
// there and a topic with no ledgers give a report that says so, not a failure.
func TestReportSaysSoOnBadInput(t *testing.T) {
	emptyDir := t.TempDir()
	emptyStores := filepath.Join(t.TempDir(), "dd")
	dd, err := datadir.Create(emptyStores)
	if err != nil {
		t.Fatal(err)
	}
	dd.Close()
	noLedgers := filepath.Join(t.TempDir(), "dd")
	withEmptyTopic(t, noLedgers, "persistent://acme/idle/quiet")
	healthy, _ := testutil.Fixture(t, fixtures.Options{Seed: 1})
	cases := []struct {
		name string
		args []string
		exit int
		want []string
	}{
		{"empty dir", []string{"--data-dir", emptyDir}, 1, []string{"could not be opened", "an empty or wrong directory"}},
		{"empty stores", []string{"--data-dir", emptyStores}, 1, []string{"holds no node"}},
		{"topic with no ledgers", []string{"--data-dir", noLedgers}, 0, []string{"persistent://acme/idle/quiet", "the topic has no ledgers"}},
		{"topic not there", []string{"--data-dir", healthy}, 0, []string{"persistent://no/such/topic", "does not exist here"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.html")
			args := append(tc.args, "report", "--out", out)
			if tc.name == "topic not there" {
				args = append(args, "--topic", "persistent://no/such/topic")
			}
			o, e, code := runApp(t, args...)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.exit, o, e)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("no report written: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("report lacks %q", w)
				}
			}
		})
	}
}

// withEmptyTopic makes a data dir holding one managed ledger with no ledgers.
func withEmptyTopic(t *testing.T, dir, topic string) {
	t.Helper()
	dd, err := datadir.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	tn, err := formats.ParseTopic(topic)
	if err != nil {
		t.Fatal(err)
	}
	v, err := formats.EncodeManagedLedgerInfo(&mlpb.ManagedLedgerInfo{}, formats.Plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Metadata.CompareAndSet(tn.ManagedLedgerPath(), 0, v); err != nil {
		t.Fatal(err)
	}
}

// TestReportIsSelfContained: nothing in the page points outside it.
func TestReportIsSelfContained(t *testing.T) {
	dir, _ := testutil.Fixture(t, everyFault)
	out := filepath.Join(t.TempDir(), "r.html")
	if _, e, code := runApp(t, "--data-dir", dir, "report", "--out", out); code != 1 {
		t.Fatalf("exit %d: %s", code, e)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	root, err := html.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			switch a.Key {
			case "src", "href", "xlink:href", "action":
				if !strings.HasPrefix(a.Val, "#") {
					t.Errorf("<%s %s=%q> points outside the page", n.Data, a.Key, a.Val)
				}
			}
		}
		if n.Data == "link" || n.Data == "img" || n.Data == "iframe" {
			t.Errorf("external element <%s>", n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	if strings.Contains(string(b), "url(") || strings.Contains(string(b), "@import") {
		t.Error("CSS fetches something")
	}
}

// BenchmarkReport compares the report with check (its physical baseline: the
// report runs check's scans plus one metadata walk) on the same fixture.
func BenchmarkReport(b *testing.B) {
	dir := benchFixture(b)
	out := filepath.Join(b.TempDir(), "r.html")
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if _, e, code := runAppB(b, "--data-dir", dir, "check"); code > 1 {
				b.Fatalf("check exit %d: %s", code, e)
			}
		}
	})
	b.Run("report", func(b *testing.B) {
		for b.Loop() {
			if _, e, code := runAppB(b, "--data-dir", dir, "report", "--out", out); code > 1 {
				b.Fatalf("report exit %d: %s", code, e)
			}
		}
		st, err := os.Stat(out)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Size()), "report-bytes")
	})
}

// benchFixture is LEDGERMEDIC_BENCH_DIR when set (a big generated cluster, e.g.
// fixtures generate --topics 50 --ledgers 20 --entries 1000), else a small one.
func benchFixture(b *testing.B) string {
	if d := os.Getenv("LEDGERMEDIC_BENCH_DIR"); d != "" {
		return d
	}
	dir := filepath.Join(b.TempDir(), "dd")
	if _, err := fixtures.Generate(context.Background(), dir, fixtures.Options{Seed: 1, Topics: 10, LedgersPerTopic: 10,
		EntriesPerLedger: 200, LoseTopicLedger: true, CorruptCRC: true}, nil); err != nil {
		b.Fatal(err)
	}
	return dir
}

func runAppB(b *testing.B, args ...string) (string, string, int) {
	var out, errb strings.Builder
	code := Run(context.Background(), append([]string{"ledgermedic"}, args...),
		Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")})
	return out.String(), errb.String(), code
}

// TestBigReportInChromium: a report of more topics than it draws opens in
// Chromium with the worst topics drawn and every topic in the table, whose
// filter script runs.
func TestBigReportInChromium(t *testing.T) {
	testutil.SkipWithoutChromium(t)
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 8, Topics: htmlreport.MaxDrawnTopics + 12, LedgersPerTopic: 2,
		EntriesPerLedger: 2, LoseSchemaLedgers: 2, LoseTopicLedger: true, OrphanLedger: true})
	out := filepath.Join(t.TempDir(), "report.html")
	if o, e, code := runApp(t, "-d", dir, "report", "--out", out); code != 1 {
		t.Fatalf("report: exit %d\n%s\n%s", code, o, e)
	}
	nodes := parseDOM(t, testutil.ChromiumDOM(t, out))
	articles, shown := 0, ""
	for _, d := range nodes {
		if d.tag == "article" && hasClass(d, "topic") {
			articles++
		}
		if d.attr["id"] == "t-shown" {
			shown = d.text
		}
	}
	if articles != htmlreport.MaxDrawnTopics {
		t.Errorf("%d topics drawn, want %d", articles, htmlreport.MaxDrawnTopics)
	}
	if want := fmt.Sprintf("%d of %d shown", len(m.Topics), len(m.Topics)); shown != want {
		t.Errorf("the topics filter says %q, want %q (the script ran over every topic)", shown, want)
	}
}
