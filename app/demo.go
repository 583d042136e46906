package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/report"
)

// demoStep is one command the demo runs, with what it shows a newcomer.
type demoStep struct {
	say  string
	args []string
	// want is the exit code the step should end with; the demo stops when it does not.
	want int
}

// demo's flags.
const (
	flagDemoDir  = "dir"
	flagDemoSeed = "seed"
)

// demoCommand builds a broken cluster in a temp dir and walks through finding and
// fixing it with the same commands an SRE would type. Each step runs through the
// real command line in this process, so what the demo shows is what the tool does.
func (e *env) demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "generate a broken cluster in a temp dir and walk through finding and fixing it",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagDemoDir, Usage: "work in DIR (must not exist) instead of a new temp dir, and keep it"},
			&cli.Int64Flag{Name: flagDemoSeed, Value: 42, Usage: "fixture seed"},
		},
		Action: func(c *cli.Context) error {
			dir, seed := c.String(flagDemoDir), c.Int64(flagDemoSeed)
			keep := dir != ""
			if dir == "" {
				d, err := os.MkdirTemp("", "ledgermedic-demo-")
				if err != nil {
					return report.CannotOpen(fmt.Errorf("demo: temp dir: %w", err))
				}
				dir = d
			} else if _, err := os.Stat(dir); err == nil {
				return report.BadInputf("demo: --dir %s already exists", dir)
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			return e.runDemo(c, dir, seed, keep)
		},
	}
}

func (e *env) runDemo(c *cli.Context, dir string, seed int64, keep bool) error {
	healthy := filepath.Join(dir, "last-week")
	broken := filepath.Join(dir, "cluster")
	capture := filepath.Join(dir, "schemas-last-week.jsonl")
	s := fmt.Sprint(seed)
	steps := demoSteps(healthy, broken, capture, s)
	fmt.Fprintf(e.Stdout, "ledgermedic demo — working in %s\n", dir)
	for i, st := range steps {
		fmt.Fprintf(e.Stdout, "\n=== %d/%d  %s\n$ ledgermedic %s\n", i+1, len(steps), st.say, strings.Join(st.args, " "))
		code := Run(c.Context, append([]string{"ledgermedic"}, st.args...), e.Env)
		fmt.Fprintf(e.Stdout, "(exit %d)\n", code)
		if code != st.want {
			return fmt.Errorf("demo: step %d (ledgermedic %s) exited %d, expected %d", i+1, strings.Join(st.args, " "), code, st.want)
		}
	}
	if !keep {
		// The temp dir is removed when the demo returns: name nothing in it.
		fmt.Fprintf(e.Stdout, "\nDone. The temp dir is removed now; to keep the data dirs, the journal and the report, run: ledgermedic demo --dir DIR\n")
		return nil
	}
	fmt.Fprintf(e.Stdout, "\nDone. Every write above is in the journal of %s; `%s` shows the runs.\n",
		broken, commandFor(nil, "--data-dir", broken, "journal", "list"))
	return nil
}

// demoSteps is the story: a capture taken on a healthy day, then an incident.
func demoSteps(healthy, broken, capture, seed string) []demoStep {
	return []demoStep{
		{"Last week: a healthy cluster (generated fixture, same seed as today's)",
			[]string{"fixtures", "generate", "--out", healthy, "--seed", seed}, 0},
		{"Last week: the schema capture an SRE runs regularly on healthy clusters",
			[]string{"--data-dir", healthy, "schema", "capture", "--out", capture}, 0},
		{"Today: the same cluster after an incident lost two schema ledgers",
			[]string{"fixtures", "generate", "--out", broken, "--seed", seed, "--lose-schema-ledgers", "2"}, 0},
		{"First thing to run: check (read-only) finds the lost schema ledgers",
			[]string{"--data-dir", broken, "check"}, 1},
		{"Which schema versions do stored messages still need?",
			[]string{"--data-dir", broken, "inspect", "schema-usage"}, 1},
		{"Plan the repair from last week's capture (dry run: nothing is written)",
			[]string{"--data-dir", broken, "schema", "repair", "--from", capture}, 0},
		{"Apply it: journaled, compare-and-set, verified",
			[]string{"--data-dir", broken, "schema", "repair", "--from", capture, "--apply"}, 0},
		{"check again: the schema findings are gone",
			[]string{"--data-dir", broken, "check"}, 0},
		{"Back-fill firstEntryIndex on indexed topics (dry run first; warnings make it exit 1)",
			[]string{"--data-dir", broken, "index", "backfill"}, 1},
		{"Apply the back-fill, verifying continuity (exit 1: one offloaded ledger cannot be inferred, and says so)",
			[]string{"--data-dir", broken, "index", "backfill", "--apply", "--verify"}, 1},
		{"Find a message by offset: the indexed search against the legacy one",
			[]string{"--data-dir", broken, "index", "find", "--topic", "persistent://public/default/events", "--offset", "100", "--compare"}, 0},
		{"The journal: every write, undoable",
			[]string{"--data-dir", broken, "journal", "list"}, 0},
		{"The incident report: one HTML page to look at and attach to the postmortem (kept with --dir)",
			[]string{"--data-dir", broken, "report", "--out", filepath.Join(filepath.Dir(broken), "incident-report.html")}, 0},
	}
}
