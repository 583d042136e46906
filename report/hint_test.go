package report

import (
	"strings"
	"testing"
	"time"
)

func TestHintLinesKeepCommandsWhole(t *testing.T) {
	cmd := "ledgermedic -d /a/very/long/path/to/the/copy/of/the/cluster inspect entries --ledger 13 --from 10 --to 10"
	cases := []struct {
		name, hint string
		width      int
		want       []string
	}{
		{"fits", "inspect it", 80, []string{"        hint: inspect it"}},
		{"no limit", "inspect it with: " + cmd, 0, []string{"        hint: inspect it with: " + cmd}},
		{"prose then command", "inspect it with: " + cmd, 80,
			[]string{"        hint: inspect it with:", "              " + cmd}},
		{"command then why", cmd + " (a dry run)", 80,
			[]string{"        hint: " + cmd, "              (a dry run)"}},
		{"prose wraps", strings.Repeat("word ", 20), 40, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := hintLines(c.hint, c.width)
			if c.want == nil {
				for _, l := range got {
					if len(l) > c.width {
						t.Errorf("prose line %q wider than %d", l, c.width)
					}
				}
				return
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("hintLines(%q, %d) =\n%s\nwant\n%s", c.hint, c.width, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestAtLeastAndParseSeverity(t *testing.T) {
	fs := []Finding{{Kind: "a", Severity: SeverityError}, {Kind: "b", Severity: SeverityWarning}, {Kind: "c", Severity: SeverityInfo}}
	for sev, n := range map[string]int{"error": 1, "WARNING": 2, "info": 3} {
		s, err := ParseSeverity(sev)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(AtLeast(fs, s)); got != n {
			t.Errorf("AtLeast %s: %d findings, want %d", sev, got, n)
		}
	}
	if _, err := ParseSeverity("fatal"); err == nil {
		t.Error("ParseSeverity(fatal) accepted")
	}
}

// A word too long for the room beside the indentation, with no break near its
// end, is cut within that room: wrapping it used to cut only the indentation
// off and loop forever.
func TestWrapWordsLongWordAfterIndent(t *testing.T) {
	for _, c := range []struct {
		s      string
		width  int
		indent string
	}{
		{"        hint: topic中文,&persistent://t/n/x,", 40, "              "},
		{"        hint: " + strings.Repeat("abcdef0123", 9), 40, "              "},
		{"x " + strings.Repeat("y", 30), 10, strings.Repeat(" ", 12)}, // indentation wider than the line
	} {
		done := make(chan []string, 1)
		go func() { done <- wrapWords(c.s, c.width, c.indent) }()
		select {
		case lines := <-done:
			if got, want := strings.ReplaceAll(strings.Join(lines, ""), " ", ""), strings.ReplaceAll(c.s, " ", ""); got != want {
				t.Errorf("wrapWords(%q, %d) lost text: %q", c.s, c.width, lines)
			}
			for _, l := range lines {
				if len([]rune(l)) > c.width && strings.TrimSpace(l) != "" && len(c.indent) < c.width {
					t.Errorf("wrapWords(%q, %d): line %q too wide", c.s, c.width, l)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("wrapWords(%q, %d) does not return", c.s, c.width)
		}
	}
}
