package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/ledgermedic/ledgermedic/store"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/inspect"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/repair"
	"github.com/ledgermedic/ledgermedic/report"
)

// schemaCommand is `ledgermedic schema`: capture schema versions, repair lost ones.
func (e *env) schemaCommand() *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "capture schema versions and restore lost schema ledgers",
		Subcommands: []*cli.Command{
			{
				Name:  "capture",
				Usage: "export every readable schema version as JSON Lines (run it on a healthy copy)",
				Description: "Writes one JSON object per (schema key, version): schema_key, version, type, definition\n" +
					"(text, or base64 for binary types, see definition_encoding), properties, timestamp, user, deleted,\n" +
					"hash (hex SHA-256 of the definition), ledger_id, entry_id, captured_at. Unreadable versions are\n" +
					"skipped and listed; the exit code is then 1.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: flagOut, Aliases: []string{"o"}, Required: true, Usage: "capture file to write (- for stdout)"},
					&cli.StringFlag{Name: flagTopic, Usage: "only this topic's schema (persistent://tenant/ns/topic or tenant/ns/topic)"},
					&cli.BoolFlag{Name: flagForce, Usage: "overwrite --out if it exists"},
				},
				Action: e.schemaCapture,
			},
			{
				Name:  "repair",
				Usage: "restore lost schema versions from captures or pulsar-admin output (dry run unless --apply)",
				Description: "For each schema version whose ledger or entry is gone, finds an input whose definition's\n" +
					"SHA-256 equals the hash the schema locator holds for that version, writes it to a new ledger\n" +
					"(an id used nowhere in the data dir) and repoints the locator, keeping versions and hashes.\n" +
					"With --ledgers bk: and the live --metadata store, the new ledger goes to the cluster's bookies (id from\n" +
					"its generator; created OPEN, entry 0 added to every bookie of the write set, closed, read back, then\n" +
					"the locator), sized like a sibling schema ledger unless --ensemble-size/--write-quorum/--ack-quorum.\n" +
					"Lost delete markers (tombstones) are rebuilt without input. Inputs (--from, a file or a folder):\n" +
					"`ledgermedic schema capture` files; what `pulsar-admin schemas get TOPIC [--version N]` prints;\n" +
					"REST GetSchemaResponse JSON; `pulsar-admin schemas upload` files. Exit 1 while any lost version\n" +
					"stays unresolved.\n" +
					"A schema key whose locator is gone (the broker deleted the history) or does not decode is rebuilt\n" +
					"from a capture: every version 0..n, each proven by its recorded SHA-256, refused unless the capture\n" +
					"holds every version stored messages use. A key whose locator holds other schemas than the capture\n" +
					"under the same version numbers is a collision: nothing is written until --resolve-collision.",
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: flagFrom, Usage: "input file or directory (repeatable)"},
					&cli.StringFlag{Name: flagTopic, Usage: "only this topic's schema; inputs naming no topic are taken to be its"},
					&cli.BoolFlag{Name: flagApply, Usage: "write the repair (journaled; undo with: ledgermedic journal undo --apply RUN)"},
					&cli.BoolFlag{Name: flagAllowHashMismatch, Usage: "DANGEROUS: use an input naming the exact topic and version even though its SHA-256 differs"},
					&cli.StringFlag{Name: flagBackup, Usage: "with --apply: write a metadata backup to this new file first"},
					&cli.BoolFlag{Name: flagCountUsage, Usage: "also count the stored messages that need each lost version (reads every topic entry)"},
					&cli.StringFlag{Name: flagResolveCollision, Usage: "when the current schema history holds other schemas than the capture " +
						"under the same versions: old (rebuild the captured history over it) or new (keep it); refused without it"},
					&cli.IntFlag{Name: flagEnsembleSize, Usage: "with --ledgers bk:: ensemble size of the new ledgers (default: a sibling schema ledger's, else 2)"},
					&cli.IntFlag{Name: flagWriteQuorum, Usage: "with --ledgers bk:: write quorum of the new ledgers (default: a sibling's, else 2)"},
					&cli.IntFlag{Name: flagAckQuorum, Usage: "with --ledgers bk:: ack quorum of the new ledgers (default: a sibling's, else 2)"},
				},
				Action: e.schemaRepair,
			},
		},
	}
}

// The schema commands' own flags.
const (
	flagForce             = "force"
	flagFrom              = "from"
	flagAllowHashMismatch = "allow-hash-mismatch"
	flagCountUsage        = "count-usage"
	flagResolveCollision  = "resolve-collision"
	flagEnsembleSize      = "ensemble-size"
	flagWriteQuorum       = "write-quorum"
	flagAckQuorum         = "ack-quorum"
)

// captureOptions are schema capture's flags.
type captureOptions struct {
	Out string // - for stdout
	Key string // only this schema key; "" for all
}

func parseCaptureOptions(c *cli.Context) (captureOptions, error) {
	topic, err := topicOption(c)
	if err != nil {
		return captureOptions{}, err
	}
	o := captureOptions{Out: c.String(flagOut)}
	if topic != nil {
		o.Key = topic.SchemaKey()
	}
	if o.Out != "-" {
		if _, err := os.Stat(o.Out); err == nil && !c.Bool(flagForce) {
			return o, report.BadInputf("%s exists; use --force to overwrite it", o.Out)
		}
	}
	return o, nil
}

// repairOptions are schema repair's flags.
type repairOptions struct {
	From              []string
	Topic             *formats.TopicName // nil: every schema
	Apply             bool
	AllowHashMismatch bool
	Backup            string
	CountUsage        bool
	ResolveCollision  string // "", repair.ResolveOld or repair.ResolveNew
	Quorums           repair.Quorums
}

func parseRepairOptions(c *cli.Context) (repairOptions, error) {
	topic, err := topicOption(c)
	if err != nil {
		return repairOptions{}, err
	}
	o := repairOptions{From: c.StringSlice(flagFrom), Topic: topic, Apply: c.Bool(flagApply),
		AllowHashMismatch: c.Bool(flagAllowHashMismatch), Backup: c.String(flagBackup),
		CountUsage: c.Bool(flagCountUsage), ResolveCollision: c.String(flagResolveCollision)}
	// Refused before anything is planned or journaled, as back-fill does.
	if err := newBackupFile(c, o.Backup, o.Apply); err != nil {
		return o, err
	}
	if r := o.ResolveCollision; r != "" && r != repair.ResolveOld && r != repair.ResolveNew {
		return o, report.BadInputf("--resolve-collision %q: want %s or %s", r, repair.ResolveOld, repair.ResolveNew)
	}
	o.Quorums = repair.Quorums{Ensemble: c.Int(flagEnsembleSize), Write: c.Int(flagWriteQuorum), Ack: c.Int(flagAckQuorum)}
	if err := o.Quorums.Check(); err != nil {
		return o, report.BadInput(err)
	}
	if so, err := storeOptions(c, true); err == nil && o.Quorums.Set() && (so.Ledgers == nil || so.Ledgers.Scheme != store.SchemeBK) {
		return o, report.BadInputf("--%s, --%s and --%s size the ledgers a repair writes to live bookies: give --ledgers bk:",
			flagEnsembleSize, flagWriteQuorum, flagAckQuorum)
	}
	return o, nil
}

// key is the schema key --topic names, or "".
func (o repairOptions) key() string {
	if o.Topic == nil {
		return ""
	}
	return o.Topic.SchemaKey()
}

func (e *env) schemaCapture(c *cli.Context) error {
	o, err := parseCaptureOptions(c)
	if err != nil {
		return err
	}
	key, out := o.Key, o.Out
	dd, err := e.openReadOnly(c)
	if err != nil {
		return err
	}
	defer dd.Close()
	if out == "-" {
		return e.captureToStdout(c, dd, key)
	}

	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return report.CannotOpen(fmt.Errorf("capture file: %w", err))
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	st, err := repair.Capture(c.Context, dd, key, tmp)
	defer st.Close()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	if err != nil {
		return report.CannotOpen(fmt.Errorf("capture to %s: %w", out, err))
	}

	doc := &report.Document{}
	doc.Add(report.Rows("capture", "Schema capture", []captureSummary{{File: out, SchemaKeys: st.SchemaKeys,
		Written: st.Written, Skipped: st.Skipped}}))
	if st.Skipped > 0 {
		doc.Add(repair.SkippedTable(c.Context, &st))
		fmt.Fprintf(e.Stderr, "ledgermedic: %d schema version(s) could not be read and are not in %s\n", st.Skipped, out)
	}
	if err := e.print(c, doc); err != nil {
		return err
	}
	if st.Skipped > 0 {
		return report.ErrFindings
	}
	return nil
}

// captureSummary is what schema capture wrote.
type captureSummary struct {
	File       string `json:"file" table:"FILE"`
	SchemaKeys int    `json:"schema_keys" table:"SCHEMA KEYS"`
	Written    int    `json:"versions_written" table:"VERSIONS WRITTEN"`
	Skipped    int    `json:"versions_skipped" table:"VERSIONS SKIPPED"`
}

func (e *env) schemaRepair(c *cli.Context) error {
	ro, err := parseRepairOptions(c)
	if err != nil {
		return err
	}
	apply := ro.Apply
	cands, inputErrs, err := repair.LoadCandidatesContext(c.Context, ro.From)
	if errors.Is(err, context.Canceled) {
		return err // interrupted while reading the inputs: nothing was opened or written
	}
	if err != nil {
		return report.BadInput(err)
	}
	opts := repair.Options{KeyFilter: ro.key(), AllowHashMismatch: ro.AllowHashMismatch, Args: commandLine(c),
		ResolveCollision: ro.ResolveCollision, TakeLedgerIDs: apply, Quorums: ro.Quorums}
	if opts.AllowHashMismatch {
		fmt.Fprintln(e.Stderr, "WARNING: --allow-hash-mismatch: inputs whose SHA-256 differs from the locator's may be "+
			"written; consumers may then decode old messages with the wrong schema")
	}

	doc := &report.Document{Extra: map[string]any{"dry_run": !apply}}
	dd, eng, err := e.openForRepair(c, apply)
	if err != nil {
		return err
	}
	defer dd.Close()
	if ro.Topic != nil {
		if err := checkTopicKnown(c.Context, dd, *ro.Topic); err != nil {
			return err
		}
	}
	if opts.Usage, err = e.usageFunc(c, ro, dd); err != nil {
		return err
	}
	opts.Scan = messageScan(dd)
	rp, err := repair.Plan(c.Context, dd, cands, opts)
	if errors.Is(err, repair.ErrBadQuorums) {
		return report.BadInput(err)
	}
	if err != nil {
		return report.CannotOpen(err)
	}
	return e.finishRepair(c, ro, doc, rp, inputErrs, eng, dd.Sources[0].Live())
}

// openForRepair opens the data dir read-only for a dry run; for --apply it opens
// it writable and first rolls back any run a crash left unfinished, so the plan
// is made against a data dir that is whole.
func (e *env) openForRepair(c *cli.Context, apply bool) (*datadir.DataDir, *mutate.Engine, error) {
	if !apply {
		dd, err := e.openDryRun(c)
		return dd, nil, err
	}
	dd, err := e.openWritable(c)
	if err != nil {
		return nil, nil, err
	}
	eng, err := mutate.New(dd)
	if err != nil {
		dd.Close()
		return nil, nil, report.CannotOpen(err)
	}
	recovered, err := eng.Recover(c.Context)
	if err != nil {
		dd.Close()
		return nil, nil, report.CannotOpen(fmt.Errorf("recover unfinished runs: %w", err))
	}
	for _, r := range recovered {
		fmt.Fprintf(e.Stderr, "note: unfinished run %s (%s) was %s\n", r.RunID, r.Command, r.State)
	}
	return dd, eng, nil
}

// usageFunc scans the topics' messages once when --count-usage is set, so the
// plan can say how many stored messages need each lost version.
func (e *env) usageFunc(c *cli.Context, o repairOptions, dd *datadir.DataDir) (repair.UsageFunc, error) {
	if !o.CountUsage {
		return nil, nil
	}
	r, err := inspect.SchemaUsage(c.Context, dd, inspect.UsageOptions{Topic: o.Topic}, e.progress(c))
	if errors.Is(err, inspect.ErrNoSuchTopic) {
		return nil, nil // a schema without a managed ledger: no stored messages to count
	}
	if err != nil {
		return nil, report.CannotOpen(fmt.Errorf("count schema usage: %w", err))
	}
	return func(key string, version int64) (int64, bool) { return r.MessagesNeeding(key, version), true }, nil
}

// finishRepair prints the plan, applies it when eng is set, and picks the exit code.
//
// live says the metadata store is a live cluster's: the locators written there
// point brokers at the new ledgers at once.
func (e *env) finishRepair(c *cli.Context, o repairOptions, doc *report.Document, rp *repair.RepairPlan, inputErrs []*repair.InputError, eng *mutate.Engine, live bool) error {
	for _, w := range rp.Warnings {
		fmt.Fprintf(e.Stderr, "WARNING: %s\n", w)
	}
	doc.Add(repair.PlanTable(rp, o.CountUsage))
	if len(rp.Refusals) > 0 {
		doc.Add(repair.RefusalTable(rp.Refusals))
	}
	if len(rp.Collisions) > 0 {
		doc.Add(repair.CollisionTable(rp.Collisions))
		if rp.UnresolvedCollisions > 0 {
			fmt.Fprintf(e.Stderr, "ledgermedic: %d schema key(s) have a version collision: nothing is written until "+
				"--resolve-collision old|new (see docs/runbook-lost-schema-ledger.md)\n", rp.UnresolvedCollisions)
		}
	}
	if len(inputErrs) > 0 {
		doc.Add(repair.InputErrorTable(inputErrs))
		fmt.Fprintf(e.Stderr, "ledgermedic: %d input record(s) could not be used (see the table)\n", len(inputErrs))
	}
	doc.Notes = append(doc.Notes, rp.Notes...)
	doc.Note("%d schema key(s), %d version(s) checked: %d lost, %d restorable, %d unresolved",
		rp.SchemaKeys, rp.VersionsChecked, len(rp.Versions), rp.Restored(), rp.Unresolved())
	if rp.UnusedInputs > 0 {
		doc.Note("%d input record(s) were not needed (their versions are readable or their hashes match no lost version)", rp.UnusedInputs)
	}
	for _, n := range orphanedByRepair(rp) {
		doc.Note("%s", n)
	}
	doc.Extra["unresolved"] = rp.Unresolved()
	doc.Extra["restored"] = rp.Restored()
	if rp.Plan != nil {
		e.noteLedgersNotOnBookies(doc, mutate.NewLedgers(rp.Plan.Items), live)
	}

	var applyErr error
	switch {
	case rp.Plan == nil:
		doc.Note("nothing to write")
	case eng == nil:
		doc.Note("dry run: nothing was changed; run again with --apply to write these %d change(s)", len(rp.Plan.Items))
	default:
		res, err := repair.Apply(c.Context, eng, rp, mutate.ApplyOptions{Backup: o.Backup})
		if res != nil {
			doc.Add(ResultTable(res))
			doc.Extra["run_id"] = res.RunID
			doc.Note("run %s: %s, verified: %v", res.RunID, res.State, res.Verified)
			if res.Backup != "" {
				doc.Note("metadata backup: %s", res.Backup)
			}
			if err == nil {
				doc.Note("undo with: %s (without --apply it shows what it would restore)",
					commandFor(c, "journal", "undo", "--apply", res.RunID))
			}
		}
		applyErr = err
	}
	if err := e.print(c, doc); err != nil {
		return err
	}
	if applyErr != nil {
		if errors.Is(applyErr, mutate.ErrInvalidPlan) {
			return report.BadInput(applyErr)
		}
		return report.CannotOpen(fmt.Errorf("schema repair not applied: %w", applyErr))
	}
	if rp.Unresolved() > 0 {
		return report.ErrFindings
	}
	return nil
}

// messageScan lets repair read which schema versions a topic's stored messages
// use (to rebuild a deleted history, and to split colliding ones).
func messageScan(dd *datadir.DataDir) repair.MessageScan {
	return func(ctx context.Context, key string, splitMs map[int64]int64) ([]repair.VersionUse, bool, error) {
		t, ok := formats.ParseSchemaLocatorPath(formats.SchemasRoot + "/" + key)
		if !ok {
			return nil, false, fmt.Errorf("schema key %q is not tenant/namespace/topic", key)
		}
		splits, err := inspect.SplitVersionUsage(ctx, dd, t, splitMs)
		if errors.Is(err, inspect.ErrNoSuchTopic) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		out := make([]repair.VersionUse, len(splits))
		for i, s := range splits {
			out[i] = repair.VersionUse{Version: s.Version, Before: repairSpan(s.Before), After: repairSpan(s.After)}
		}
		return out, true, nil
	}
}

func repairSpan(s inspect.MessageSpan) repair.MessageSpan {
	return repair.MessageSpan{Messages: s.Messages, Entries: s.Entries,
		First: s.First, Last: s.Last,
		FirstPublishMs: int64(s.FirstPublishMs), LastPublishMs: int64(s.LastPublishMs)}
}

// orphanedByRepair says which old ledgers a repair leaves referenced by nothing:
// a version whose entry was lost but whose ledger node (or other entries)
// remain gets a new ledger, and the old one becomes an orphan that check
// reports as a warning. The repair says so, so that check's exit 1 afterwards
// is no surprise.
func orphanedByRepair(rp *repair.RepairPlan) []string {
	stillUsed := map[int64]bool{}
	for _, v := range rp.Versions {
		if v.NewLedgerID == 0 {
			stillUsed[v.OldLedgerID] = true
		}
	}
	var out []string
	seen := map[int64]bool{}
	for _, v := range rp.Versions {
		id := v.OldLedgerID
		if v.NewLedgerID == 0 || id <= 0 || v.State == repair.StateLostLedger || stillUsed[id] || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, fmt.Sprintf("ledger %d, the old ledger of %s version %d (%s), is referenced by nothing once "+
			"this repair is written: check then reports it as orphan-ledger (a warning, exit 1; orphan-schema-ledger, info, on live bookies); keep it while it may be "+
			"evidence (its node: %s)", id, v.SchemaKey, v.Version, v.State, formats.LedgerPath(id)))
	}
	return out
}

// captureToStdout writes the capture to stdout (--out -); the summary, and the
// skipped versions, go to stderr so stdout is the capture alone.
func (e *env) captureToStdout(c *cli.Context, dd *datadir.DataDir, key string) error {
	st, err := repair.Capture(c.Context, dd, key, e.Stdout)
	defer st.Close()
	if err != nil {
		return report.CannotOpen(fmt.Errorf("capture to stdout: %w", err))
	}
	fmt.Fprintf(e.Stderr, "ledgermedic: captured %d version(s) of %d schema key(s) to stdout\n", st.Written, st.SchemaKeys)
	if st.Skipped > 0 {
		if err := report.PrintWith(e.Stderr, &report.Document{Tables: []*report.Table{repair.SkippedTable(c.Context, &st)}},
			report.Options{Format: report.FormatTable, Width: e.width()}); err != nil {
			return report.CannotOpen(err)
		}
		return report.ErrFindings
	}
	return nil
}

// noteLedgersNotOnBookies tells where the new ledgers' entries of a plan are
// (mutate.LedgersNotOnBookies): a note, and a warning on stderr when the metadata
// store the run writes is one brokers read (a live store, or a push to one). JSON
// lists the ids as ledgers_not_on_bookies.
func (e *env) noteLedgersNotOnBookies(doc *report.Document, ids []int64, live bool) {
	msg := mutate.LedgersNotOnBookies(ids)
	if msg == "" {
		return
	}
	doc.Extra["ledgers_not_on_bookies"] = ids
	doc.Note("%s", msg)
	if live {
		fmt.Fprintf(e.Stderr, "WARNING: %s\n", msg)
	}
}
