package app

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// bashCompletionFlag is the argument urfave/cli looks for, last, to complete a
// command line instead of running it.
const bashCompletionFlag = "--generate-bash-completion"

// flagsFirst moves the flags of the command args name (and their values) before
// its positional arguments, so that every command takes its flags anywhere:
// `journal show RUN -o json` is `journal show -o json RUN`. urfave/cli v2 parses
// with Go's flag package, which stops at the first argument that is not a flag
// (flag.FlagSet.Parse), so a flag after a positional would otherwise be read as
// one more positional. A `--` ends the flags: what follows it stays positional,
// whatever it looks like. The command is found by walking the command tree as
// urfave does (flags of each level, then a sub-command name); anything else,
// such as an unknown command, is left as given for urfave to refuse.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var tail []string
	if args[len(args)-1] == bashCompletionFlag {
		args, tail = args[:len(args)-1], []string{bashCompletionFlag}
	}
	out := []string{args[0]}
	rest := args[1:]
	flags, cmds := app.Flags, app.Commands
	for {
		n := leadingFlags(flags, rest)
		out, rest = append(out, rest[:n]...), rest[n:]
		if len(rest) == 0 || rest[0] == "--" {
			break
		}
		c := findCommand(cmds, rest[0])
		if c == nil {
			break // a positional of a command group, or an unknown command: urfave's to judge
		}
		out, rest = append(out, rest[0]), rest[1:]
		if len(c.Subcommands) == 0 {
			return append(append(out, reorder(c.Flags, rest)...), tail...)
		}
		flags, cmds = c.Flags, c.Subcommands
	}
	return append(append(out, rest...), tail...)
}

// leadingFlags counts the arguments at the start of args that are flags of this
// level or their values.
func leadingFlags(flags []cli.Flag, args []string) int {
	i := 0
	for i < len(args) && isFlagArg(args[i]) {
		i += flagWidth(flags, args, i)
	}
	return min(i, len(args))
}

// reorder puts a command's flags and their values first, then "--" when one was
// given, then the positional arguments in their order.
func reorder(flags []cli.Flag, args []string) []string {
	var fl, pos []string
	dashdash := false
	for i := 0; i < len(args); {
		a := args[i]
		switch {
		case a == "--":
			pos, dashdash = append(pos, args[i+1:]...), true
			i = len(args)
		case isFlagArg(a):
			w := min(flagWidth(flags, args, i), len(args)-i)
			fl = append(fl, args[i:i+w]...)
			i += w
		default:
			pos = append(pos, a)
			i++
		}
	}
	if dashdash {
		fl = append(fl, "--")
	}
	return append(fl, pos...)
}

// isFlagArg reports whether Go's flag package reads a as a flag ("-" alone is an
// argument: stdin, by convention).
func isFlagArg(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

// flagWidth is how many arguments the flag at args[i] spans: 2 when it takes a
// value given as the next argument (--out FILE, -o json, --offset -5), else 1
// (--apply, --out=FILE, or a flag the command does not declare, which urfave
// then refuses by name).
func flagWidth(flags []cli.Flag, args []string, i int) int {
	name := strings.TrimLeft(args[i], "-")
	if strings.Contains(name, "=") {
		return 1
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if tv, ok := f.(interface{ TakesValue() bool }); ok && tv.TakesValue() {
				return 2
			}
			return 1
		}
	}
	return 1
}

// findCommand is the command named name (or one of its aliases), or nil.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
