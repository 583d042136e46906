package app

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// openReadOnly opens the stores for inspection and tells the user anything
// they must know about how they were opened (for example, a sandbox copy).
func (e *env) openReadOnly(c *cli.Context) (*store.DataDir, error) {
	return e.openStores(c, true)
}

// openWritable opens the stores for a command that may write.
func (e *env) openWritable(c *cli.Context) (*store.DataDir, error) {
	return e.openStores(c, false)
}

// print renders a document in the format the user asked for.
func (e *env) print(c *cli.Context, doc *report.Document) error {
	if err := report.Print(e.Stdout, doc, c.Bool("json")); err != nil {
		return report.CannotOpen(fmt.Errorf("write output: %w", err))
	}
	return nil
}

// progress returns a bar on a TTY stderr (unless --json), nothing otherwise.
func (e *env) progress(c *cli.Context) report.Progress {
	return report.NewProgress(e.Stderr, e.StderrIsTTY && !c.Bool("json"))
}

// topicArg parses a topic given as persistent://tenant/ns/topic or tenant/ns/topic.
func topicArg(s string) (formats.TopicName, error) {
	t, err := formats.ParseTopic(s)
	if err != nil {
		return formats.TopicName{}, report.BadInputf("topic %q: %v", s, err)
	}
	return t, nil
}

// optionalTopic parses --topic when it is given, else returns nil.
func optionalTopic(c *cli.Context) (*formats.TopicName, error) {
	s := c.String("topic")
	if s == "" {
		return nil, nil
	}
	t, err := topicArg(s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// printFindings prints a document that carries findings and ends the command
// with exit 1 when any of them is an error or a warning.
func (e *env) printFindings(c *cli.Context, doc *report.Document) error {
	if doc.Findings == nil {
		doc.Findings = []report.Finding{}
	}
	if err := e.print(c, doc); err != nil {
		return err
	}
	if report.Actionable(doc.Findings) {
		return report.ErrFindings
	}
	return nil
}

// commandLine is the command as the journal records it: the command path and
// every flag the user set, in the order the command declares them.
func commandLine(c *cli.Context) []string {
	var args []string
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != ctx.App.Name {
			args = append([]string{ctx.Command.Name}, args...)
		}
	}
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if !c.IsSet(name) {
			continue
		}
		switch v := c.Value(name).(type) {
		case bool:
			if v {
				args = append(args, "--"+name)
			}
		case cli.StringSlice:
			for _, s := range v.Value() {
				args = append(args, "--"+name, s)
			}
		case []string:
			for _, s := range v {
				args = append(args, "--"+name, s)
			}
		default:
			args = append(args, "--"+name, fmt.Sprint(v))
		}
	}
	return args
}
