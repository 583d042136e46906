// Package app builds the ledgermedic command line: one urfave/cli app whose
// commands are thin wrappers over the feature packages. Exit codes are decided
// here, in one place (exitCode), from the errors the commands return.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/internal/gcpace"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// Env is what the app talks to. Tests pass buffers; main passes the process's files.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader
	// StderrIsTTY turns on progress bars.
	StderrIsTTY bool
	Getenv      func(string) string
	// TermWidth is the width of the terminal stdout is, 0 when it is none; tables
	// are fitted to it (else to $COLUMNS) unless -o wide.
	TermWidth int
}

// ProcessEnv is the Env of the running process.
func ProcessEnv() Env {
	return Env{
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		Stdin:       os.Stdin,
		StderrIsTTY: isatty.IsTerminal(os.Stderr.Fd()),
		Getenv:      os.Getenv,
		TermWidth:   terminalWidth(os.Stdout),
	}
}

// env is shared by every command's action.
type env struct {
	Env
	// storeNotes are what the stores said when opened (printed on stderr), for
	// the JSON document too: "store_notes".
	storeNotes []string
}

const exitCodesHelp = `EXIT CODES:
   0    clean: nothing found, or the action succeeded
   1    findings: something is wrong (or left unresolved); see the output
   2    bad usage or bad input
   3    could not open or could not write the data dir (or another file)
   130  interrupted (Ctrl-C or SIGTERM): writes already made stay journaled`

// New builds the app.
func New(e Env) *cli.App {
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	en := &env{Env: e}
	app := &cli.App{
		Name:  "ledgermedic",
		Usage: "inspect and safely repair the on-disk state of an Apache Pulsar cluster",
		Description: "ledgermedic reads a data dir (metadata/ and ledgers/, both Badger v4) holding a Pulsar\n" +
			"cluster's metadata store and ledger store. Inspection never changes a byte; commands that\n" +
			"write are dry-run unless --apply is given, and every write is journaled and can be undone.\n" +
			"Flags go anywhere, after a command's arguments too; a -- ends them.\n\n" +
			exitCodesHelp,
		Version:   Version(),
		Writer:    e.Stdout,
		ErrWriter: e.Stderr,
		Reader:    e.Stdin,
		// Global flags work before and after the command (addGlobalFlags).
		Flags:                     globalFlags(),
		Commands:                  en.commands(),
		EnableBashCompletion:      true,
		Suggest:                   true,
		DisableSliceFlagSeparator: true,                         // --from 'cap,2024.jsonl' is one file
		ExitErrHandler:            func(*cli.Context, error) {}, // exit codes are decided by Run, not by urfave
		OnUsageError:              usageError,
		Action:                    unknownCommand,
		CustomAppHelpTemplate:     cli.AppHelpTemplate,
	}
	addGlobalFlags(app.Commands)
	setUsageErrors(app.Commands)
	return app
}

// commands lists every top-level command, in help order.
func (e *env) commands() []*cli.Command {
	return []*cli.Command{
		e.inspectCommand(), e.checkCommand(), e.mergeCommand(),
		e.schemaCommand(),
		e.fixturesCommand(),
		e.indexCommand(),
		e.schemaidCommand(),
		e.journalCommand(),
		e.importCommand(),
		e.demoCommand(),
		e.reportCommand(),
	}
}

// usageError makes a flag the parser refuses exit 2, with urfave's did-you-mean.
func usageError(c *cli.Context, err error, _ bool) error {
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok && cli.SuggestFlag != nil {
		var flags []cli.Flag
		if c.Command != nil {
			flags = c.Command.Flags
		}
		if s := cli.SuggestFlag(flags, name, false); s != "" {
			return report.BadInputf("%v. Did you mean %q?", err, s)
		}
	}
	return report.BadInput(err)
}

// setUsageErrors makes flag errors of every sub-command exit 2, and makes a
// command group name the unknown sub-command instead of urfave's "No help topic".
func setUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = usageError
		}
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = unknownSubcommand
		}
		setUsageErrors(c.Subcommands)
	}
}

// unknownCommand runs when no command, or an unknown one, is given.
func unknownCommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowAppHelp(c)
	}
	return report.BadInputf("unknown command %q (see ledgermedic --help)%s", c.Args().First(),
		didYouMean(c.App.Commands, c.Args().First()))
}

// unknownSubcommand runs when a command group gets no sub-command (help, exit 0)
// or one it does not have (exit 2).
func unknownSubcommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowSubcommandHelp(c)
	}
	var names []string
	for _, sc := range c.Command.Subcommands {
		if sc.Name != "help" {
			names = append(names, sc.Name)
		}
	}
	return report.BadInputf("%s: unknown command %q (commands: %s)%s", c.Command.FullName(), c.Args().First(),
		strings.Join(names, ", "), didYouMean(c.Command.Subcommands, c.Args().First()))
}

// didYouMean is urfave's ". Did you mean "X"?" for the command nearest to name, or "".
func didYouMean(cmds []*cli.Command, name string) string {
	if cli.SuggestCommand == nil {
		return ""
	}
	if s := cli.SuggestCommand(cmds, name); s != "" {
		return ". " + s
	}
	return ""
}

// Run runs the app with args (args[0] is the program name) and returns the exit code.
func Run(ctx context.Context, args []string, e Env) int {
	app := New(e)
	// Collections wait for a fixed headroom of garbage (internal/gcpace): a
	// small live heap would otherwise be collected every few megabytes.
	defer gcpace.Start()()
	// Every run this invocation journals records the version and the invocation id.
	runCtx := mutate.WithInvocation(ctx, mutate.Invocation{ID: newInvocationID(), ToolVersion: Version()})
	err := app.RunContext(runCtx, flagsFirst(app, args)) // flags anywhere: flagsFirst
	if ctx.Err() != nil {
		// Interrupted (Ctrl-C, SIGTERM): whatever the command returned, it did not finish.
		msg := "interrupted"
		if err != nil && !errors.Is(err, report.ErrFindings) && err.Error() != "" {
			msg += ": " + err.Error()
		}
		fmt.Fprintf(e.Stderr, "ledgermedic: %s\n", msg)
		return report.ExitInterrupted
	}
	if err == nil {
		return report.ExitClean
	}
	code := exitCode(err)
	// ErrFindings carries no message: the findings were already printed.
	if msg := err.Error(); !errors.Is(err, report.ErrFindings) && msg != "" {
		fmt.Fprintf(e.Stderr, "ledgermedic: %s\n", msg)
	}
	return code
}

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	var ee *report.ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	switch {
	case errors.Is(err, store.ErrBadURL), errors.Is(err, store.ErrNeedsDataDir), errors.Is(err, datadir.ErrEtcdNoTime):
		return report.ExitBadInput
	case errors.Is(err, store.ErrLocked), errors.Is(err, store.ErrNotDataDir),
		errors.Is(err, store.ErrReadOnly), errors.Is(err, os.ErrPermission), errors.Is(err, os.ErrNotExist):
		return report.ExitCannotOpen
	case errors.Is(err, context.Canceled):
		return report.ExitInterrupted
	}
	// Flag errors are typed by usageError and required flags by withGlobals; what
	// is left could not be read or written.
	return report.ExitCannotOpen
}

// newInvocationID names one command invocation: its start time and 4 random bytes.
func newInvocationID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
