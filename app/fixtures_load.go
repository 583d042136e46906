package app

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// loadFixture puts the metadata of the data dir just generated at out into the
// live store that the global --metadata names, so every scenario runs on
// ZooKeeper and etcd too: the ledgers stay in out/ledgers, and commands then run
// with `-d OUT --metadata URL`. Nodes that already exist there are never
// overwritten: the load fails instead.
func (e *env) loadFixture(c *cli.Context, out string) (string, error) {
	u, err := store.ParseMetadataURL(c.String(flagMetadata))
	if err != nil {
		return "", report.BadInput(err)
	}
	if !u.Writable() {
		return "", report.BadInputf("fixtures generate --metadata %s: only a live store (zk:// or etcd://) can be loaded", u)
	}
	remote, err := remoteOptions(c)
	if err != nil {
		return "", err
	}
	dst, err := datadir.OpenMetadata(u, store.Options{Remote: remote})
	if err != nil {
		return "", report.CannotOpen(err)
	}
	defer dst.Close()
	src, err := datadir.Open(out, store.Options{ReadOnly: true})
	if err != nil {
		return "", report.CannotOpen(err)
	}
	defer src.Close()
	n, err := datadir.LoadNodes(c.Context, src.Metadata, dst, datadir.LoadOptions{})
	if err != nil {
		return "", report.CannotOpen(fmt.Errorf("load the fixture's metadata into %s (after %d nodes): %w", u, n, err))
	}
	return fmt.Sprintf("loaded %d metadata nodes into %s; run commands with: ledgermedic -d %s --metadata %s ...", n, u, out, u), nil
}
