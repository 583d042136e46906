package app

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/report"
)

// globalFlags are the flags that may be given anywhere on the command line:
// before the command (`ledgermedic -d D check`) or after it (`ledgermedic check
// -d D`). Each call returns new flag values: urfave keeps per-flag state.
func globalFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: flagDataDir, Aliases: []string{"d"}, EnvVars: []string{"LEDGERMEDIC_DATA_DIR"},
			Usage: "the data dir (holds metadata/, ledgers/ and the write journal)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: string(report.FormatTable),
			Usage: "output format: table (fits the terminal), wide (every cell whole), json (one document), jsonl (one object per row)"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON document instead of tables (same as -o json)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print no tables, notes or progress: the exit code tells the result; errors still go to stderr"},
	}, storeFlags()...)
}

// globalFlagNames lists the main names of globalFlags.
func globalFlagNames() []string {
	var names []string
	for _, f := range globalFlags() {
		names = append(names, f.Names()[0])
	}
	return names
}

// addGlobalFlags declares the global flags on every command, so urfave parses
// them after the command name too. A command that has its own flag of the same
// name (`fixtures generate --ledgers N`, `schema capture -o FILE`) keeps its own:
// there the global one can only be given before the command. Every action is
// wrapped so it first sees the global values given at any level.
func addGlobalFlags(cmds []*cli.Command) {
	for _, c := range cmds {
		own := map[string]bool{}
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				own[n] = true
			}
		}
		for _, g := range globalFlags() {
			if collides(g, own) {
				continue
			}
			hide(g)
			c.Flags = append(c.Flags, g)
		}
		if len(c.Subcommands) == 0 {
			c.HideHelpCommand = true // `ledgermedic help CMD` and `CMD --help` remain
		}
		requiredNames := stripRequired(c.Flags)
		if c.Action != nil {
			c.Action = withGlobals(c.Action, requiredNames)
		}
		addGlobalFlags(c.Subcommands)
	}
}

func collides(f cli.Flag, own map[string]bool) bool {
	for _, n := range f.Names() {
		if own[n] {
			return true
		}
	}
	return false
}

// hide keeps each command's help short: the global flags are listed once, in
// `ledgermedic --help`.
func hide(f cli.Flag) {
	switch x := f.(type) {
	case *cli.StringFlag:
		x.Hidden = true
	case *cli.BoolFlag:
		x.Hidden = true
	case *cli.IntFlag:
		x.Hidden = true
	case *cli.Int64Flag:
		x.Hidden = true
	case *cli.Float64Flag:
		x.Hidden = true
	case *cli.DurationFlag:
		x.Hidden = true
	}
}

// stripRequired turns urfave's required-flag check off and returns the names it
// would have checked: urfave prints the help on stdout (mixing it into --json
// output) and returns an error of an unexported type. withGlobals checks them.
func stripRequired(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		var required *bool
		var usage *string
		switch x := f.(type) {
		case *cli.StringFlag:
			required, usage = &x.Required, &x.Usage
		case *cli.StringSliceFlag:
			required, usage = &x.Required, &x.Usage
		case *cli.IntFlag:
			required, usage = &x.Required, &x.Usage
		case *cli.Int64Flag:
			required, usage = &x.Required, &x.Usage
		case *cli.Uint64Flag:
			required, usage = &x.Required, &x.Usage
		case *cli.BoolFlag:
			required, usage = &x.Required, &x.Usage
		case *cli.Float64Flag:
			required, usage = &x.Required, &x.Usage
		case *cli.DurationFlag:
			required, usage = &x.Required, &x.Usage
		}
		if required != nil && *required {
			*required = false
			*usage += " (required)"
			names = append(names, f.Names()[0])
		}
	}
	return names
}

// withGlobals copies each global flag given at an outer level (`ledgermedic -d D
// check`) into the command's own context, innermost wins, so c.String("data-dir")
// reads the same wherever it was given; then checks the required flags.
func withGlobals(action cli.ActionFunc, required []string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := inheritGlobals(c); err != nil {
			return err
		}
		var missing []string
		for _, n := range required {
			if !c.IsSet(n) {
				missing = append(missing, "--"+n)
			}
		}
		if len(missing) > 0 {
			return missingFlag(c, strings.Join(missing, ", "))
		}
		return action(c)
	}
}

// missingFlag prints the command's help on stderr (stdout stays the one document
// --json promises) and returns the usage error naming what is missing.
func missingFlag(c *cli.Context, what string) error {
	_ = cli.ShowCommandHelp(helpToStderr(c), c.Command.Name)
	name := strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
	return report.BadInputf("%s: missing required flag %s (see: ledgermedic %s --help)", name, what, name)
}

// helpToStderr is the parent context whose App writes to stderr, for help
// printed beside an error.
func helpToStderr(c *cli.Context) *cli.Context {
	parent := c.Lineage()[1]
	app := *c.App
	app.Writer = c.App.ErrWriter
	p := *parent
	p.App = &app
	return &p
}

func inheritGlobals(c *cli.Context) error {
	lineage := c.Lineage()
	for _, name := range globalFlagNames() {
		if c.Command == nil || !declares(c.Command.Flags, name) || givenHere(c, name) {
			continue
		}
		for _, anc := range lineage[1:] {
			if !givenHere(anc, name) {
				continue
			}
			if err := c.Set(name, fmt.Sprint(anc.Value(name))); err != nil {
				return report.BadInputf("--%s: %v", name, err)
			}
			break
		}
	}
	return nil
}

// givenHere reports whether name was given on the command line at this level.
// Values from the environment are the same at every level and do not count: a
// flag given on the command line at an outer level overrides them.
func givenHere(c *cli.Context, name string) bool {
	if !setHere(c, name) {
		return false
	}
	var f cli.Flag
	for _, x := range c.Command.Flags {
		if declares([]cli.Flag{x}, name) {
			f = x
		}
	}
	if f == nil || !f.IsSet() {
		return true // set, and not from the environment
	}
	if ev, ok := f.(interface{ GetEnvVars() []string }); ok {
		for _, k := range ev.GetEnvVars() {
			if v, ok := os.LookupEnv(k); ok {
				// From the environment, unless this level's value differs from it.
				return fmt.Sprint(c.Value(name)) != v
			}
		}
	}
	return true
}

func declares(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// setHere reports whether name was given on the command line at this level (or
// by its environment variable).
func setHere(c *cli.Context, name string) bool {
	if c.Command == nil { // the empty context urfave puts above the app's
		return false
	}
	for _, n := range c.LocalFlagNames() {
		if n == name {
			return true
		}
	}
	return false
}

// storeFlagsShown are the global flags a suggested command repeats so that it
// opens the same stores. Secrets are never printed: they come from the
// environment variables the flags name.
var storeFlagsShown = []string{"data-dir", "metadata", "ledgers", "at-zxid", "at-time", "revision",
	"etcd-cacert", "etcd-cert", "etcd-key", "etcd-user", "zk-session-timeout", "timeout"}

// globalArgs are the global flags of the current invocation that a suggested
// command needs to open the same stores, shell-quoted, in a fixed order.
func globalArgs(c *cli.Context) []string {
	var out []string
	for _, name := range storeFlagsShown {
		if c == nil || !c.IsSet(name) {
			continue
		}
		v := fmt.Sprint(c.Value(name))
		if v == "" || v == "0" || v == "0s" {
			continue
		}
		if name == "data-dir" {
			out = append(out, "-d", shellQuote(v))
			continue
		}
		out = append(out, "--"+name, shellQuote(v))
	}
	return out
}

// commandFor formats a runnable command line for the current stores:
// `ledgermedic -d DIR [--metadata URL ...] ARGS...`. Args are quoted for a POSIX shell.
func commandFor(c *cli.Context, args ...string) string {
	parts := append([]string{"ledgermedic"}, globalArgs(c)...)
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// commandNames are the words that follow "ledgermedic " in a suggested command.
var commandNames = func() []string {
	names := []string{"check", "inspect", "schema", "index", "journal", "import", "report", "schemaid", "fixtures", "demo"}
	sort.Strings(names)
	return names
}()

var suggestedCommand = regexp.MustCompile(`\bledgermedic (` + strings.Join(commandNames, "|") + `)\b`)

// commandRewriter rewrites every suggested command in a text ("ledgermedic
// inspect node P", written by the feature packages, which do not know the
// stores) into one that runs as printed here: the global store flags in use are
// inserted. The flags are looked up once per invocation, not per text: a check of
// 10k topics has tens of thousands of findings, and looking them up for each took
// 6 of its 11 s.
type commandRewriter struct {
	repl string // the replacement for suggestedCommand; "" when no flag is set
}

func newCommandRewriter(c *cli.Context) commandRewriter {
	g := globalArgs(c)
	if len(g) == 0 {
		return commandRewriter{}
	}
	prefix := "ledgermedic " + strings.Join(g, " ") + " "
	return commandRewriter{repl: strings.ReplaceAll(prefix, "$", "$$") + "$1"}
}

func (r commandRewriter) apply(text string) string {
	if r.repl == "" || !strings.Contains(text, "ledgermedic ") {
		return text
	}
	return suggestedCommand.ReplaceAllString(text, r.repl)
}

// runnableDoc rewrites the suggested commands of every hint, message and note of
// a document (commandRewriter).
func runnableDoc(c *cli.Context, doc *report.Document) {
	r := newCommandRewriter(c)
	for i := range doc.Findings {
		doc.Findings[i].Hint = r.apply(doc.Findings[i].Hint)
		doc.Findings[i].Message = r.apply(doc.Findings[i].Message)
	}
	if doc.FindingStream != nil {
		s := doc.FindingStream.Map(func(f report.Finding) report.Finding {
			f.Hint, f.Message = r.apply(f.Hint), r.apply(f.Message)
			return f
		})
		doc.FindingStream = &s
	}
	for i := range doc.Notes {
		doc.Notes[i] = r.apply(doc.Notes[i])
	}
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+~", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// globalString reads a global flag from the innermost level that set it, else its
// default. Commands whose own flag shares a global flag's name (`schema capture
// -o FILE`) do not declare the global one, so c.String would read an outer level's
// default instead of the value given there.
func globalString(c *cli.Context, name string) string {
	for _, ctx := range c.Lineage() {
		if givenHere(ctx, name) {
			return fmt.Sprint(ctx.Value(name))
		}
	}
	for _, ctx := range c.Lineage() {
		if setHere(ctx, name) {
			return fmt.Sprint(ctx.Value(name))
		}
	}
	for _, f := range globalFlags() {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == name {
			return sf.Value
		}
	}
	return ""
}

// globalBool is globalString for a bool flag.
func globalBool(c *cli.Context, name string) bool {
	return globalString(c, name) == "true"
}
