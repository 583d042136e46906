package app

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/report"
)

// schemaUsageCommand is `inspect schema-usage`: which schema versions and ids the
// stored messages use, and which of those the registry can no longer serve.
func (e *env) schemaUsageCommand() *cli.Command {
	return &cli.Command{
		Name:  "schema-usage",
		Usage: "count stored messages per schema version/id and flag versions that are lost or deleted",
		Description: "Reads every stored entry of the topics' ledgers once (partitions together under the\n" +
			"base topic) and counts messages (batch sizes included) and entries per schema_version and\n" +
			"schema_id, with the first and last position and publish time. Registry versions are joined\n" +
			"with the topic's schema locator: a version whose schema ledger is lost is the one a repair\n" +
			"must restore first. Exits 1 when there are error or warning findings.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagTopic, Usage: "only this topic (a partitioned topic's base name takes every partition)"},
			&cli.IntFlag{Name: flagWorkers, Usage: "decoder goroutines (0: one per CPU)"},
		},
		Action: e.schemaUsage,
	}
}

// parseUsageOptions reads schema-usage's flags.
func parseUsageOptions(c *cli.Context) (inspect.UsageOptions, error) {
	if c.NArg() > 0 {
		return inspect.UsageOptions{}, report.BadInputf("schema-usage takes no arguments (use --topic), got %q", c.Args().First())
	}
	opts := inspect.UsageOptions{Workers: c.Int(flagWorkers)}
	if opts.Workers < 0 {
		return opts, report.BadInputf("--workers %d: want 0 or more", opts.Workers)
	}
	topic, err := topicOption(c)
	if err != nil {
		return opts, err
	}
	if topic != nil && topic.Domain != formats.DomainPersistent {
		return opts, report.BadInputf("topic %s: only persistent topics store messages", topic)
	}
	opts.Topic = topic
	return opts, nil
}

func (e *env) schemaUsage(c *cli.Context) error {
	opts, err := parseUsageOptions(c)
	if err != nil {
		return err
	}
	dd, err := e.openReadOnly(c)
	if err != nil {
		return err
	}
	defer dd.Close()
	r, err := inspect.RunSchemaUsage(c.Context, dd, opts, e.progress(c))
	if errors.Is(err, inspect.ErrNoSuchTopic) {
		return report.BadInput(err)
	}
	if err != nil {
		return fmt.Errorf("schema usage: %w", err)
	}
	defer r.Close()
	counts := r.Counts()
	all := report.FindingStream{Count: counts.Total(), Each: func(yield func(report.Finding) error) error {
		return r.Findings(c.Context, yield)
	}}
	doc := &report.Document{FindingStream: &all, Extra: map[string]any{
		"entries":     r.Entries,
		"bad_entries": r.BadEntries,
	}}
	doc.Add(r.TopicsTable(c.Context), r.Table(c.Context))
	return e.printFindingsCounted(c, doc, counts)
}
