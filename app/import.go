package app

import (
	"errors"
	"fmt"
	"github.com/ledgermedic/ledgermedic/store"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/repair"
	"github.com/ledgermedic/ledgermedic/report"
)

// importCommand copies a store into a new data dir: the forensic working copy.
func (e *env) importCommand() *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "copy a metadata store (--metadata URL, else the data dir's) and the entries of bookie dirs (--ledgers) into a new data dir (read-only on the source)",
		Description: "Every command opens a metadata store and a ledger store; a store no URL names is the data dir's,\n" +
			"so --data-dir is needed unless both --metadata and --ledgers are given. Entries are copied when\n" +
			"--ledgers is given (or with --copy-ledgers); a metadata-only copy gets an empty ledger store.\n" +
			"The copy records where it came from (" + datadir.ImportRecordFile + ": the URLs, the zxid or revision\n" +
			"the view reflects) and each node's version in the source (" + datadir.ImportNodesFile + ").\n" +
			"Repair the copy, then replay the reviewed run onto the live store with `journal push`.\n\n" +
			"  ledgermedic --metadata zk://zk1:2181/pulsar --ledgers bookie:/b1,bookie:/b2 import --out /incident/copy\n" +
			"  ledgermedic -d /incident/work --metadata zk://zk1:2181/pulsar import --out /incident/meta-only\n" +
			"  ledgermedic --metadata zk-data:/var/lib/zookeeper --ledgers bookie:/b1,bookie:/b2 import --out /incident/copy",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagOut, Required: true, Usage: "new data dir to create (must not exist or be empty)"},
			&cli.StringFlag{Name: flagPrefix, Usage: "copy only the nodes whose path starts with this (e.g. /schemas)"},
			&cli.BoolFlag{Name: flagCopyLedgers, Usage: "copy the ledger store's entries too (default: only when --ledgers is given)"},
		},
		Action: e.importStores,
	}
}

// import's own flags.
const (
	flagPrefix      = "prefix"
	flagCopyLedgers = "copy-ledgers"
)

// importOptions are import's flags (the stores it reads are the global store flags).
type importOptions struct {
	Out         string
	Prefix      string
	CopyLedgers bool // entries too: --copy-ledgers, or --ledgers given
}

func parseImportOptions(c *cli.Context) (importOptions, error) {
	if !c.IsSet(flagMetadata) && !c.IsSet(flagLedgers) && c.String(flagDataDir) == "" {
		return importOptions{}, report.BadInputf("import: name what to copy with --metadata URL and --ledgers bookie:DIR, or --data-dir for the stores no URL names")
	}
	o := importOptions{Out: c.String(flagOut), Prefix: c.String(flagPrefix),
		CopyLedgers: c.IsSet(flagLedgers) || c.Bool(flagCopyLedgers)}
	return o, checkEmptyDir(o.Out)
}

func (e *env) importStores(c *cli.Context) error {
	o, err := parseImportOptions(c)
	if err != nil {
		return err
	}
	out, copyLedgers := o.Out, o.CopyLedgers
	// A store named by URL is a cluster's, whose chroot must be right; a data dir
	// (or its ledgers alone) is copied as it is.
	src, err := e.openStores(c, true, c.IsSet(flagMetadata))
	if err != nil {
		return err
	}
	defer src.Close()
	bar := e.progress(c)
	bar.Start("import", 0)
	var last int64
	rec, err := datadir.Import(c.Context, src, out, datadir.ImportOptions{
		Prefix: o.Prefix, CopyLedgers: copyLedgers,
		Progress: func(nodes, entries int64) { bar.Add(nodes + entries - last); last = nodes + entries },
	})
	bar.Done()
	if err != nil {
		return report.CannotOpen(err)
	}
	sources := make([]importSource, len(rec.Sources))
	for i, s := range rec.Sources {
		sources[i] = importSource{Kind: s.Kind, URL: s.URL, Zxid: optionalInt(s.Zxid), Revision: optionalInt(s.Revision),
			AsOf: report.At(s.AsOf)}
	}
	doc := &report.Document{}
	doc.Add(report.Rows("sources", "Imported into "+out, sources),
		report.Rows("totals", "Copied", []importTotals{{Nodes: rec.Nodes, NodeBytes: rec.NodeBytes, Ledgers: rec.Ledgers,
			Entries: rec.Entries, LedgersCopied: rec.LedgersCopied}}))
	if !copyLedgers {
		doc.Note("entries were not copied (give --ledgers bookie:DIR... or --copy-ledgers); %s/ledgers is empty", out)
	}
	doc.Note("source versions of every node: %s/%s", out, datadir.ImportNodesFile)
	return e.print(c, doc)
}

// importSource is one store an import read.
type importSource struct {
	Kind     string      `json:"kind" table:"STORE"`
	URL      string      `json:"url" table:"URL"`
	Zxid     *int64      `json:"zxid,omitempty" table:"ZXID"`
	Revision *int64      `json:"revision,omitempty" table:"REVISION"`
	AsOf     report.Time `json:"as_of,omitzero" table:"AS OF"`
}

// importTotals is what an import copied.
type importTotals struct {
	Nodes         int64 `json:"nodes" table:"NODES"`
	NodeBytes     int64 `json:"node_bytes" table:"NODE BYTES"`
	Ledgers       int64 `json:"ledgers" table:"LEDGERS"`
	Entries       int64 `json:"entries" table:"ENTRIES"`
	LedgersCopied bool  `json:"ledgers_copied"`
}

// optionalInt is absent (nil) for 0, the value a store leaves unset.
func optionalInt(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// pushStep is one item of a push dry run.
type pushStep struct {
	Kind          mutate.ItemKind `json:"kind" table:"KIND"`
	Path          string          `json:"path" table:"PATH"`
	ExpectVersion uint64          `json:"expect_version" table:"EXPECT VERSION"`
	Bytes         int             `json:"bytes" table:"BYTES"`
}

// journalPush replays a committed run of the working copy onto another metadata store.
// pushOptions are journal push's argument and flags.
type pushOptions struct {
	Run   string // an id, a prefix, or last
	Apply bool
}

func parsePushOptions(c *cli.Context) (pushOptions, error) {
	run, err := oneArg(c, "RUN")
	if err != nil {
		return pushOptions{}, err
	}
	if !c.IsSet(flagMetadata) {
		return pushOptions{}, report.BadInputf("journal push: --metadata URL names the store to push to (zk://... or etcd://...)")
	}
	return pushOptions{Run: run, Apply: c.Bool(flagApply)}, nil
}

func (e *env) journalPush(c *cli.Context) error {
	o, err := parsePushOptions(c)
	if err != nil {
		return err
	}
	runID := o.Run
	p, err := dataDirPath(c)
	if err != nil {
		return err
	}
	if runID, err = resolveRun(p, runID); err != nil { // an id, a unique prefix, or last
		return err
	}
	rec, err := mutate.Show(mutate.JournalDir(p), runID)
	if err != nil {
		return journalError(err)
	}
	if rec.MetadataStore != "" {
		return report.BadInputf("journal push: run %s was applied to %s, not to this data dir's own metadata store", runID, rec.MetadataStore)
	}
	apply := o.Apply
	dd, err := e.openForWriting(c, apply)
	if err != nil {
		return err
	}
	defer dd.Close()
	var plan *mutate.Plan
	_, toBookies := dd.Ledgers.(store.BookieWriter)
	if toBookies {
		// --ledgers bk:: the run's new ledgers go to the bookies, with ids from
		// the cluster's generator (placeholders in the dry run).
		plan, err = repair.PushToBookies(c.Context, rec, dd, apply, repair.Quorums{})
	} else {
		plan, err = mutate.PushPlan(rec, dd.Metadata)
	}
	if errors.Is(err, mutate.ErrPushConflict) {
		fmt.Fprintf(e.Stderr, "ledgermedic: %v\n", err)
		fmt.Fprintf(e.Stderr, "nothing was written; import the store again and redo the repair on the new copy\n")
		return report.ErrFindings
	}
	if err != nil {
		return journalError(err)
	}
	plan.Args = commandLine(c)
	doc := &report.Document{Extra: map[string]any{"dry_run": !apply}}
	var runItems []mutate.Item
	for _, ji := range rec.Items {
		runItems = append(runItems, ji.Item)
	}
	if !toBookies {
		e.noteLedgersNotOnBookies(doc, mutate.NewLedgers(runItems), true)
	}
	if !apply {
		steps := make([]pushStep, len(plan.Items))
		for i, it := range plan.Items {
			steps[i] = pushStep{Kind: it.Kind, Path: it.Path, ExpectVersion: it.Expect, Bytes: len(it.After)}
		}
		doc.Add(report.Rows("plan", "Push plan for "+dd.Sources[0].URL+" (dry run: nothing written)", steps))
		for _, n := range plan.Notes {
			doc.Note("%s", n)
		}
		doc.Note("dry run: nothing was written; add --apply to push run %s", runID)
		return e.print(c, doc)
	}
	eng, err := mutate.New(dd)
	if err != nil {
		return report.CannotOpen(err)
	}
	res, err := eng.Apply(c.Context, plan, mutate.ApplyOptions{})
	if res != nil {
		doc.Add(ResultTable(res))
		for _, n := range plan.Notes {
			doc.Note("%s", n)
		}
		doc.Note("push of run %s is run %s: %s; undo it with: ledgermedic -d %s --metadata %s journal undo --apply %s",
			runID, res.RunID, res.State, p, dd.Sources[0].URL, res.RunID)
		if perr := e.print(c, doc); perr != nil {
			return perr
		}
	}
	if err != nil {
		return journalError(err)
	}
	return nil
}
