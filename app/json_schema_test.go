package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/report"
)

// jsonDoc is the documentation of every command's JSON.
const jsonDoc = "../docs/json.md"

// commonSection of docs/json.md documents the members every command may print.
const commonSection = "Every document"

// noJSON are the commands that print no JSON document, and why.
var noJSON = map[string]string{
	"demo": "a walk-through: it prints the transcript of the commands it runs",
}

// jsonSameAs are the commands whose document is another command's: their
// section in docs/json.md says so and lists no fields of its own.
var jsonSameAs = map[string]string{"merge": "check"}

// fieldTypes are the types docs/json.md may give a field.
var fieldTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "time": true,
	"hex": true, "any": true}

// leafCommands are the full names of every command that runs something
// ("inspect topics"), from the app itself.
func leafCommands() []string {
	var out []string
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			if len(c.Subcommands) > 0 {
				walk(prefix+c.Name+" ", c.Subcommands)
				continue
			}
			out = append(out, prefix+c.Name)
		}
	}
	walk("", New(Env{}).Commands)
	sort.Strings(out)
	return out
}

// readJSONDoc parses docs/json.md: "## command" sections with tables whose
// rows are | `path` | type | meaning |. Paths name members with dots and array
// elements with [] (topics[].ledgers).
func readJSONDoc(t *testing.T) map[string]map[string]string {
	f, err := os.Open(jsonDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([a-z]+) \\|")
	sections := map[string]map[string]string{}
	var cur map[string]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "## "); ok {
			cur = map[string]string{}
			sections[strings.Trim(name, "` ")] = cur
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil || cur == nil {
			continue
		}
		if !fieldTypes[m[2]] {
			t.Errorf("%s: field %s has type %q, want one of string, integer, number, boolean, time, hex, any", jsonDoc, m[1], m[2])
		}
		cur[m[1]] = m[2]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sections
}

// TestJSONGoldensAreTyped walks every JSON golden and checks each value
// against the type docs/json.md gives its field: a number or boolean printed
// as a string (or the other way round) fails, as does an undocumented field,
// a null, an empty string or "-" (absent fields are left out). It fails too
// when a command has no golden file or no section in docs/json.md, so it
// cannot pass by checking nothing.
func TestJSONGoldensAreTyped(t *testing.T) {
	sections := readJSONDoc(t)
	common := sections[commonSection]
	if len(common) == 0 {
		t.Fatalf("%s has no %q section", jsonDoc, commonSection)
	}
	byFile := map[string]string{} // "inspect-schema-usage" -> "inspect schema-usage"
	for _, c := range leafCommands() {
		byFile[strings.ReplaceAll(c, " ", "-")] = c
	}
	for name := range sections {
		if _, ok := byFile[strings.ReplaceAll(name, " ", "-")]; !ok && name != commonSection {
			t.Errorf("%s: section %q is not a command", jsonDoc, name)
		}
	}
	files, err := filepath.Glob(filepath.Join(jsonGoldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	visited := map[string]int{}
	for _, f := range files {
		base, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".json"), "@")
		cmd, ok := byFile[base]
		if !ok {
			t.Errorf("%s: names no command", f)
			continue
		}
		doc := sections[cmd]
		if same, ok := jsonSameAs[cmd]; ok && doc != nil {
			doc = sections[same]
		}
		if doc == nil {
			continue // reported below
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		n := checkJSONValue(t.Errorf, f, "", v, func(path string) (string, bool) {
			if typ, ok := doc[path]; ok {
				return typ, true
			}
			typ, ok := common[path]
			return typ, ok
		})
		if n == 0 {
			t.Errorf("%s: no value checked", f)
		}
		visited[cmd] += n
	}
	for _, c := range leafCommands() {
		switch why, skip := noJSON[c]; {
		case skip:
			t.Logf("%s: no JSON (%s)", c, why)
		case sections[c] == nil:
			t.Errorf("%s: no section in %s", c, jsonDoc)
		case visited[c] == 0:
			t.Errorf("%s: no golden file %s/%s.json", c, jsonGoldenDir, strings.ReplaceAll(c, " ", "-"))
		}
	}
	if len(visited) < len(leafCommands())-len(noJSON) {
		t.Errorf("checked the JSON of %d commands, the app has %d with JSON", len(visited), len(leafCommands())-len(noJSON))
	}
}

var hexText = regexp.MustCompile(`^([0-9a-f]{2})*$`)

// checkJSONValue checks v at path against the documented types and returns
// how many scalar values it checked.
func checkJSONValue(errorf func(string, ...any), file, path string, v any, typeOf func(string) (string, bool)) int {
	if typ, ok := typeOf(path); ok && typ == "any" {
		return 1 // a free-form value (a decoded message or payload)
	}
	switch x := v.(type) {
	case map[string]any:
		n := 0
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			n += checkJSONValue(errorf, file, p, e, typeOf)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += checkJSONValue(errorf, file, path+"[]", e, typeOf)
		}
		return n
	}
	typ, ok := typeOf(path)
	if !ok {
		errorf("%s: %s = %v is not documented in %s", file, path, v, jsonDoc)
		return 0
	}
	if err := checkScalar(typ, v); err != nil {
		errorf("%s: %s = %#v: %v", file, path, v, err)
	}
	return 1
}

func checkScalar(typ string, v any) error {
	switch x := v.(type) {
	case nil:
		return fmt.Errorf("null: an absent value must be left out")
	case bool:
		if typ != "boolean" {
			return fmt.Errorf("a boolean where %s documents %s", jsonDoc, typ)
		}
	case json.Number:
		if typ != "integer" && typ != "number" {
			return fmt.Errorf("a number where %s documents %s", jsonDoc, typ)
		}
		if _, err := x.Int64(); typ == "integer" && err != nil {
			return fmt.Errorf("not an integer")
		}
	case string:
		switch typ {
		case "integer", "number", "boolean":
			return fmt.Errorf("a string where %s documents %s", jsonDoc, typ)
		}
		if x == "" || x == "-" {
			return fmt.Errorf("an empty value: absent values must be left out")
		}
		if typ == "time" && x != "TIME" { // TIME: a golden's placeholder for the time of the run
			if _, err := time.Parse(report.TimeFormat, x); err != nil || !strings.HasSuffix(x, "Z") || len(x) != len("2006-01-02T15:04:05.000Z") {
				return fmt.Errorf("not RFC 3339 UTC with milliseconds (%s)", report.TimeFormat)
			}
		}
		if typ == "hex" && !hexText.MatchString(x) {
			return fmt.Errorf("not lower-case hex")
		}
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

// The checker itself: a number as a string, a boolean as a string, a null, an
// empty string, a bad time and an undocumented field are each caught.
func TestJSONTypeCheckerCatches(t *testing.T) {
	doc := map[string]string{"n": "integer", "b": "boolean", "s": "string", "t": "time", "h": "hex", "m": "any"}
	typeOf := func(p string) (string, bool) { typ, ok := doc[p]; return typ, ok }
	check := func(in string) (errs []string) {
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		checkJSONValue(func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }, "test", "", v, typeOf)
		return errs
	}
	for _, bad := range []string{`{"n":"7"}`, `{"b":"true"}`, `{"n":null}`, `{"s":""}`, `{"s":"-"}`,
		`{"t":"2024-06-10T06:13:20Z"}`, `{"h":"0G"}`, `{"x":1}`, `{"n":1.5}`, `{"s":3}`, `{"b":[1]}`} {
		if errs := check(bad); len(errs) == 0 {
			t.Errorf("%s passed the checker", bad)
		}
	}
	good := `{"n":7,"b":false,"s":"x","t":"2024-06-10T06:13:20.000Z","h":"0a","m":{"anything":"7"}}`
	if errs := check(good); len(errs) != 0 {
		t.Errorf("%s failed the checker: %v", good, errs)
	}
}
