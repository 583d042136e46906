package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// columnCaps returns the widest each column may be for the table to fit in
// width terminal columns, or nil when it fits as it is (or width is 0). The
// widest columns give way first (water-filling): narrow columns stay whole.
func columnCaps(headers []string, rows [][]string, width int) []int {
	if width <= 0 || len(headers) == 0 {
		return nil
	}
	// natural is each column's widest cell, with its header wrapped at spaces
	// (headers give way before any cell does).
	natural := make([]int, len(headers))
	total := 0
	for i, h := range headers {
		for _, word := range strings.Fields(h) {
			natural[i] = max(natural[i], runewidth.StringWidth(word))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			natural[i] = max(natural[i], runewidth.StringWidth(c))
		}
	}
	for i, h := range headers {
		total += max(natural[i], runewidth.StringWidth(h))
	}
	// An ASCII row is "| a | b |": three columns of frame per cell and one more.
	budget := width - 3*len(headers) - 1
	if total <= budget {
		return nil
	}
	if budget < len(headers) {
		return nil // cannot fit even one character per column: print it whole
	}
	// Largest cap c with sum(min(natural, c)) <= budget.
	lo, hi := 1, 0
	for _, n := range natural {
		hi = max(hi, n)
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		sum := 0
		for _, n := range natural {
			sum += min(n, mid)
		}
		if sum <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	caps := make([]int, len(natural))
	spare := budget
	for i, n := range natural {
		caps[i] = min(n, lo)
		spare -= caps[i]
	}
	// Hand the columns left over to the capped columns, left to right.
	for i, n := range natural {
		if spare == 0 {
			break
		}
		if add := min(n-caps[i], spare); add > 0 {
			caps[i] += add
			spare -= add
		}
	}
	return caps
}

// wrapRow wraps each cell to its column's cap.
func wrapRow(cells []string, caps []int) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.Join(wrapCell(c, caps[i]), "\n")
	}
	return out
}

// wrapHeaders wraps each header at spaces to its column's cap.
func wrapHeaders(headers []string, caps []int) []string {
	out := make([]string, len(headers))
	for i, h := range headers {
		out[i] = strings.Join(wrapWords(h, caps[i], ""), "\n")
	}
	return out
}

// wrapCell cuts s into lines of at most w display columns, breaking after a
// space, '/', ',', ':', '=' or '-' where one is near the end of a line, so
// paths and lists break where a reader expects.
func wrapCell(s string, w int) []string {
	if w <= 0 || runewidth.StringWidth(s) <= w {
		return []string{s}
	}
	var lines []string
	rs := []rune(s)
	for len(rs) > 0 {
		n, cols := 0, 0
		for n < len(rs) {
			rw := runewidth.RuneWidth(rs[n])
			if cols+rw > w {
				break
			}
			cols += rw
			n++
		}
		if n == 0 {
			n = 1 // a rune wider than the column: give it a line of its own
		}
		if n < len(rs) {
			n = breakAt(rs, n)
		}
		lines = append(lines, strings.TrimRight(string(rs[:n]), " "))
		rs = rs[n:]
	}
	return lines
}

// breakAt moves a line break at n back to the last space in the line's last two
// thirds, else to after the last '/', ',', ':', '=' or a '-' between letters in
// its last third, else keeps n.
func breakAt(rs []rune, n int) int {
	for b := n; b > n/3; b-- {
		if rs[b-1] == ' ' {
			return b
		}
	}
	for b := n; b > n*2/3; b-- {
		r := rs[b-1]
		if strings.ContainsRune("/,:=", r) || r == '-' && b >= 2 && rs[b-2] != '-' && rs[b] != '-' {
			return b
		}
	}
	return n
}

// fitsTable reports whether a table of these cells fits in width unwrapped.
func fitsTable(headers []string, rows [][]string, width int) bool {
	if width <= 0 {
		return true
	}
	total := 3*len(headers) + 1
	for i, h := range headers {
		w := runewidth.StringWidth(h)
		for _, r := range rows {
			w = max(w, runewidth.StringWidth(r[i]))
		}
		total += w
	}
	return total <= width
}

// renderFindingsList prints findings one block each, for terminals too narrow
// for the findings table: every field gets the whole width, so messages and
// suggested commands stay readable.
func renderFindingsList(w io.Writer, fs []Finding, width int) {
	for _, f := range fs {
		for _, l := range wrapWords(fmt.Sprintf("%-7s %s  %s", strings.ToUpper(string(f.Severity)), f.Kind, f.Location), width, "        ") {
			fmt.Fprintln(w, l)
		}
		for _, l := range wrapWords("        "+f.Message, width, "        ") {
			fmt.Fprintln(w, l)
		}
		for _, l := range hintLines(f.Hint, width) {
			fmt.Fprintln(w, l)
		}
	}
}

// hintLines prints a hint under its finding. Prose wraps; a suggested command
// ("ledgermedic ..." up to a parenthesis) is never cut: it gets a line of its
// own, whole even when wider than the terminal, which soft-wraps it and copies
// it as one line, where a command cut over two lines does not paste.
func hintLines(hint string, width int) []string {
	const lead, indent = "        hint: ", "              "
	if hint == "" {
		return nil
	}
	if width <= 0 || runewidth.StringWidth(lead+hint) <= width {
		return []string{lead + hint}
	}
	i := strings.Index(hint, "ledgermedic ")
	if i < 0 {
		return wrapWords(lead+hint, width, indent)
	}
	prose, cmd, tail := strings.TrimSpace(hint[:i]), hint[i:], ""
	if j := strings.Index(cmd, " ("); j >= 0 {
		cmd, tail = cmd[:j], strings.TrimSpace(cmd[j:])
	}
	var lines []string
	if prose != "" {
		lines = append(wrapWords(lead+prose, width, indent), indent+cmd)
	} else {
		lines = []string{lead + cmd}
	}
	if tail != "" {
		lines = append(lines, wrapWords(indent+tail, width, indent)...)
	}
	return lines
}

// wrapWords word-wraps a line of prose to width (0: no limit); continuation
// lines start with indent. A word longer than the line is cut.
func wrapWords(s string, width int, indent string) []string {
	if width <= 0 || runewidth.StringWidth(s) <= width {
		return []string{s}
	}
	var lines []string
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))] // the first line keeps its indentation
	line := ""
	for _, word := range strings.Fields(s) {
		prefix := indent
		if len(lines) == 0 {
			prefix = lead
		}
		switch {
		case strings.TrimSpace(line) == "":
			line = prefix + word
		case runewidth.StringWidth(line)+1+runewidth.StringWidth(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = indent + word
		}
		for runewidth.StringWidth(line) > width {
			cut := wrapCell(line, width)
			if strings.TrimSpace(cut[0]) == "" {
				// The break fell in the indentation (a long word without a
				// break near its end): cut the word itself, in the room
				// beside the indentation, or the line comes round again.
				word := strings.TrimLeft(line, " ")
				pad := line[:len(line)-len(word)]
				if cut = wrapCell(word, max(width-runewidth.StringWidth(pad), 1)); len(cut) == 1 {
					break // only the indentation is too wide: the line stays as it is
				}
				cut[0] = pad + cut[0]
			}
			lines = append(lines, cut[0])
			line = indent + strings.Join(cut[1:], "")
		}
	}
	if strings.TrimSpace(line) != "" {
		lines = append(lines, line)
	}
	return lines
}

// printJSONL writes one JSON object per line: each table row with its table's
// name first ("table"), each finding ("table":"findings"), each extra value and
// each note. For line tools (jq -c, grep) on large outputs.
func printJSONL(w io.Writer, d *Document, fs FindingStream, hasFindings bool) error {
	line := func(o orderedObject) error {
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	for _, t := range d.Tables {
		if err := t.eachJSON(func(v any) error { return tableLine(w, t.Name, v) }); err != nil {
			return err
		}
	}
	if hasFindings {
		if err := fs.each(func(f Finding) error { return tableLine(w, "findings", f) }); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(d.Extra) {
		var o orderedObject
		o.set("table", "extra")
		o.set("key", k)
		o.set("value", d.Extra[k])
		if err := line(o); err != nil {
			return err
		}
	}
	for _, n := range d.Notes {
		var o orderedObject
		o.set("table", "notes")
		o.set("note", n)
		if err := line(o); err != nil {
			return err
		}
	}
	return nil
}

// tableLine writes one JSON object: {"table":name, then the members of v (an object).
func tableLine(w io.Writer, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("json table %s: %w", name, err)
	}
	head, _ := json.Marshal(name)
	rest := bytes.TrimPrefix(b, []byte("{"))
	if !bytes.Equal(rest, []byte("}")) {
		rest = append([]byte(","), rest...)
	}
	_, err = fmt.Fprintf(w, "{\"table\":%s%s\n", head, rest)
	return err
}
