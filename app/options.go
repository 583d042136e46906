package app

import (
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// Flag names shared by several commands. Each command's flags are parsed into
// its options struct (checkOptions, repairOptions, ...) by one parse function,
// before any store is opened: bad usage exits 2 having touched nothing.
const (
	flagApply           = "apply"
	flagBackup          = "backup"
	flagOut             = "out"
	flagTopic           = "topic"
	flagSkipMessageScan = "skip-message-scan"
	flagWorkers         = "workers"
	flagPayload         = "payload"
	flagHex             = "hex"
	// flagIndexKey is the LedgerInfo property key holding a ledger's first
	// broker index, on every command that reads or writes it (indexKeyFlag).
	flagIndexKey = "index-key"
	// Global store flags (stores.go, global.go).
	flagDataDir  = "data-dir"
	flagMetadata = "metadata"
	flagLedgers  = "ledgers"
)

// indexKeyOf is the LedgerInfo property key a command was given (--index-key;
// urfave/cli resolves its deprecated aliases).
func indexKeyOf(c *cli.Context) string { return c.String(flagIndexKey) }

// indexKeyFlag is the one flag, on every command that reads or writes it, for the
// LedgerInfo property holding a ledger's first broker index. Its old names stay
// as deprecated aliases so existing scripts still work: --key (index backfill,
// index find, inspect entries) and --first-entry-index-key (check, inspect
// topics, report).
func indexKeyFlag() cli.Flag {
	return hiddenAliases{&cli.StringFlag{Name: flagIndexKey, Aliases: []string{"key", "first-entry-index-key"}, Value: cluster.FirstEntryIndexKey,
		Usage: "LedgerInfo property holding a ledger's first broker index (e.g. kafka.base.offset); --key and --first-entry-index-key are deprecated aliases"}}
}

// hiddenAliases is a string flag whose aliases work but are not listed in help
// (its usage names them), so the help's flag column stays narrow.
type hiddenAliases struct{ *cli.StringFlag }

func (f hiddenAliases) String() string {
	shown := *f.StringFlag
	shown.Aliases = nil
	return shown.String()
}

// topicOption parses an optional --topic (nil when not given).
func topicOption(c *cli.Context) (*formats.TopicName, error) {
	s := c.String(flagTopic)
	if s == "" {
		return nil, nil
	}
	t, err := topicArg(s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// newBackupFile checks a --backup FILE before anything is planned: it goes with
// --apply, it must not exist yet ("" is none), and the metadata store must be the data dir's own: the
// backup is a Badger backup of that database (datadir.DataDir.BackupMetadata). A
// live store's copy is an import, taken before the command.
func newBackupFile(c *cli.Context, path string, apply bool) error {
	if path == "" {
		return nil
	}
	if !apply {
		return report.BadInputf("--backup needs --apply (a dry run writes nothing, a backup neither)")
	}
	if u, err := store.ParseMetadataURL(c.String(flagMetadata)); err == nil && c.String(flagMetadata) != "" && u.Writable() {
		return report.BadInputf("--backup %s: --metadata %s is a live store, and --backup writes a backup of the data dir's own "+
			"metadata store only; copy the live store first, then run without --backup: %s", path, u,
			commandFor(c, "import", "--out", "BACKUP-DIR"))
	}
	if _, err := os.Stat(path); err == nil {
		return report.BadInputf("--backup %s already exists; name a new file", path)
	}
	return nil
}

// timeSyntax is how every time flag (--time, --at-time) is written, for their help.
const timeSyntax = "RFC 3339 (2024-06-10T06:13:20Z), epoch with its unit (1718000000s, 1718000000000ms) " +
	"or relative to now (-1h, -30m); a bare number is refused as ambiguous"

// timeFlagMillis is the time flag name as milliseconds since the epoch (parseTime).
func timeFlagMillis(c *cli.Context, name string) (int64, error) {
	t, err := parseTime(name, c.String(name), time.Now())
	return t.UnixMilli(), err
}

// parseTime reads the value s of the time flag name, the one parser of every
// time flag (timeSyntax): an RFC 3339 time, an epoch number with its unit
// (1718000000s, 1718000000000ms, ...us, ...ns), or a time relative to now (-1h,
// -90m). A bare number is refused: seconds read as milliseconds answer in 1970,
// and nothing says so.
func parseTime(name, s string, now time.Time) (time.Time, error) {
	if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return timeInRange(name, s, tm)
	}
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Time{}, report.BadInputf("--%s %s is ambiguous: give the unit (%ss for seconds, %sms for milliseconds) "+
			"or an RFC 3339 time (2024-06-10T06:13:20Z)", name, s, s, s)
	}
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return time.Time{}, report.BadInputf("--%s %q: a time relative to now is a signed duration (-1h, -30m, -90s)", name, s)
		}
		return timeInRange(name, s, now.Add(d))
	}
	for _, u := range []struct {
		suffix string
		at     func(int64) time.Time
		max    int64 // the last value before the year 10000
	}{
		{"ms", time.UnixMilli, maxEpochSeconds*1e3 + 999},
		{"us", time.UnixMicro, maxEpochSeconds*1e6 + 999999},
		{"ns", func(v int64) time.Time { return time.Unix(0, v) }, math.MaxInt64}, // 2262 at most
		{"s", func(v int64) time.Time { return time.Unix(v, 0) }, maxEpochSeconds},
	} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			if v, err := strconv.ParseInt(num, 10, 64); err == nil {
				if v > u.max {
					return time.Time{}, report.BadInputf("--%s %s is after the year 9999", name, s)
				}
				return timeInRange(name, s, u.at(v))
			}
		}
	}
	return time.Time{}, report.BadInputf("--%s %q: want an RFC 3339 time (2024-06-10T06:13:20Z), an epoch time with its unit "+
		"(1718000000s, 1718000000000ms) or a time relative to now (-1h, -30m)", name, s)
}

// maxEpochSeconds is 9999-12-31T23:59:59Z: later times overflow epoch milliseconds' printing.
const maxEpochSeconds = 253402300799

// timeInRange refuses a time before 1970 (Pulsar's and ZooKeeper's times are epoch
// milliseconds, never negative) or after the year 9999.
func timeInRange(name, s string, t time.Time) (time.Time, error) {
	switch {
	case t.Before(time.Unix(0, 0)):
		return time.Time{}, report.BadInputf("--%s %s is before 1970", name, s)
	case t.After(time.Unix(maxEpochSeconds, 999999999)):
		return time.Time{}, report.BadInputf("--%s %s is after the year 9999", name, s)
	}
	return t.UTC(), nil
}
