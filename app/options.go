package app

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
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

// newBackupFile checks a --backup FILE: it must not exist yet ("" is none).
func newBackupFile(path string) error {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err == nil {
		return report.BadInputf("--backup %s already exists; name a new file", path)
	}
	return nil
}
