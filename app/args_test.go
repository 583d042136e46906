package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// leafCommandsOf walks the whole command tree: each command that runs something,
// with the path of names that reaches it.
func leafCommandsOf(cmds []*cli.Command, path []string, fn func(path []string, c *cli.Command)) {
	for _, c := range cmds {
		p := append(append([]string(nil), path...), c.Name)
		if len(c.Subcommands) == 0 {
			fn(p, c)
			continue
		}
		leafCommandsOf(c.Subcommands, p, fn)
	}
}

// sampleValue is a value each flag type parses, as typed on a command line ("" for
// a bool flag, which takes none), and how the parsed value reads back.
func sampleValue(f cli.Flag) (arg, want string) {
	switch f.(type) {
	case *cli.BoolFlag:
		return "", "true"
	case *cli.IntFlag, *cli.Int64Flag, *cli.Uint64Flag:
		return "3", "3"
	case *cli.Float64Flag:
		return "1.5", "1.5"
	case *cli.DurationFlag:
		return "2s", "2s"
	case *cli.StringSliceFlag:
		return "v-1", "[v-1]"
	}
	return "-v 1", "-v 1" // a string value that starts with a dash, as --time -1h does
}

// readBack is the value of flag name as the action sees it.
func readBack(c *cli.Context, f cli.Flag, name string) string {
	switch f.(type) {
	case *cli.StringSliceFlag:
		return fmt.Sprint(c.StringSlice(name))
	case *cli.BoolFlag:
		return fmt.Sprint(c.Bool(name))
	}
	return fmt.Sprint(c.Value(name))
}

// Every flag of every command works before, between and after the command's
// positional arguments, under each of its names; a `--` ends the flags. The
// actions are replaced by a recorder: this tests the parsing alone, for the
// whole command tree, through the argument rewriting Run does.
func TestEveryFlagWorksAnywhere(t *testing.T) {
	app := New(Env{Stdout: &strings.Builder{}, Stderr: &strings.Builder{}})
	var got *cli.Context
	record := func(c *cli.Context) error { got = c; return nil }
	leaves := 0
	leafCommandsOf(app.Commands, nil, func(path []string, cmd *cli.Command) {
		cmd.Action = record
		leaves++
	})
	if leaves < 20 {
		t.Fatalf("walked %d commands; the tree has more", leaves)
	}
	run := func(args []string) (*cli.Context, error) {
		got = nil
		err := app.RunContext(context.Background(), flagsFirst(app, append([]string{"ledgermedic"}, args...)))
		return got, err
	}
	leafCommandsOf(app.Commands, nil, func(path []string, cmd *cli.Command) {
		for _, f := range cmd.Flags {
			arg, want := sampleValue(f)
			for _, name := range f.Names() {
				flag := []string{"--" + name}
				if len(name) == 1 {
					flag = []string{"-" + name}
				}
				if arg != "" {
					flag = append(flag, arg)
				}
				for _, place := range []struct {
					name string
					args []string
				}{
					{"after", append([]string{"P1", "P2"}, flag...)},
					{"between", append(append([]string{"P1"}, flag...), "P2")},
					{"before", append(append([]string{}, flag...), "P1", "P2")},
				} {
					args := append(append([]string{}, path...), place.args...)
					c, err := run(args)
					if err != nil || c == nil {
						t.Errorf("%q: %v (action ran: %v)", args, err, c != nil)
						continue
					}
					if pos := c.Args().Slice(); !reflect.DeepEqual(pos, []string{"P1", "P2"}) {
						t.Errorf("%q: positional arguments %q, want [P1 P2]", args, pos)
					}
					if v := readBack(c, f, f.Names()[0]); v != want {
						t.Errorf("%q: --%s reads %q, want %q", args, f.Names()[0], v, want)
					}
				}
			}
		}
		// After `--` nothing is a flag.
		args := append(append([]string{}, path...), "P1", "--", "-q", "--json")
		c, err := run(args)
		if err != nil || c == nil {
			t.Errorf("%q: %v", args, err)
			return
		}
		if pos := c.Args().Slice(); !reflect.DeepEqual(pos, []string{"P1", "-q", "--json"}) || c.Bool("json") {
			t.Errorf("%q: positional arguments %q (--json set: %v), want [P1 -q --json] and no flag", args, pos, c.Bool("json"))
		}
	})
}

// The commands of the README given with their flags last run, from the real
// binary, as they do with their flags first.
func TestFlagsAfterArgumentsFromTheBinary(t *testing.T) {
	dir, _ := testutil.Fixture(t, fixtures.Options{Seed: 7, LoseSchemaLedgers: 1})
	if _, errOut, code := runBin(t, "-d", dir, "index", "backfill", "--apply"); code > 1 {
		t.Fatalf("backfill: exit %d: %s", code, errOut)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout
	}{
		{[]string{"-d", dir, "journal", "show", "last", "-o", "json"}, 0, `"items": [`},
		{[]string{"-d", dir, "journal", "show", "last", "--json"}, 0, `"items": [`},
		{[]string{"journal", "show", "last", "-d", dir, "--json"}, 0, `"items": [`},
		{[]string{"-d", dir, "journal", "undo", "--command", "last", "-o", "json"}, 0, `"dry_run": true`},
		{[]string{"-d", dir, "journal", "undo", "--command", "--apply", "last", "-q"}, 0, ""},
		{[]string{"-d", dir, "inspect", "node", "/managed-ledgers/acme/orders/persistent/orders-partition-0", "--json"}, 0, `"kind": "managed-ledger"`},
		{[]string{"-d", missing, "journal", "show", "last", "--", "-o"}, 2, ""},
	} {
		out, errOut, code := runBin(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%q: exit %d, stdout %.300q, stderr %q; want exit %d with %q", tc.args, code, out, errOut, tc.code, tc.out)
		}
		if tc.code == 0 && strings.Contains(errOut, "expected one argument") {
			t.Errorf("%q: %s", tc.args, errOut)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("%s was created", missing)
	}
}
