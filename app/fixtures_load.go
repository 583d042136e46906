package app

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// loadFixture puts the metadata of the data dir just generated at out into the
// live store that the global --metadata names, so every scenario runs on
// ZooKeeper and etcd too: the ledgers stay in out/ledgers, and commands then run
// with `-d OUT --metadata URL`. Nodes that already exist there are never
// overwritten: the load fails instead.
func (e *env) loadFixture(c *cli.Context, out string, bk *store.URL) (string, error) {
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
	src, err := datadir.Open(out, store.Options{ReadOnly: true})
	if err != nil {
		return "", report.CannotOpen(err)
	}
	defer src.Close()
	if bk != nil {
		return e.loadFixtureOnBookies(c, out, src, u, *bk, remote)
	}
	dst, err := datadir.OpenMetadata(u, store.Options{Remote: remote})
	if err != nil {
		return "", report.CannotOpen(err)
	}
	defer dst.Close()
	n, err := datadir.LoadNodes(c.Context, src.Metadata, dst, datadir.LoadOptions{})
	if err != nil {
		return "", report.CannotOpen(fmt.Errorf("load the fixture's metadata into %s (after %d nodes): %w", u, n, err))
	}
	return fmt.Sprintf("loaded %d metadata nodes into %s; run commands with: ledgermedic -d %s --metadata %s ...", n, u, out, u), nil
}

// loadFixtureOnBookies puts the generated cluster on a live cluster: its ledgers
// on the bookies (fixtures.WriteLive), then every other metadata node, so no
// managed ledger or locator ever names a ledger that is not there yet. The
// generated /ledgers nodes are not loaded as they are: their ensembles name the
// generator's made-up bookies, and the live cluster has its own /ledgers.
func (e *env) loadFixtureOnBookies(c *cli.Context, out string, src *datadir.DataDir, mu, lu store.URL,
	remote store.RemoteOptions) (string, error) {
	dd, err := datadir.Open(out, store.Options{Metadata: &mu, Ledgers: &lu, Remote: remote})
	if err != nil {
		return "", report.CannotOpen(err)
	}
	defer dd.Close()
	bw, ok := dd.Ledgers.(store.BookieWriter)
	nb, ok2 := dd.Metadata.(store.NodeBatcher)
	if !ok || !ok2 {
		return "", report.BadInputf("fixtures generate --ledgers %s: the stores cannot write to bookies", lu.String())
	}
	res, err := fixtures.WriteLive(c.Context, src.Metadata, src.Ledgers, dd.Metadata, bw)
	if err != nil {
		return "", report.CannotOpen(fmt.Errorf("write the fixture's ledgers to the bookies of %s (after %d ledgers): %w", mu.String(), res.Ledgers, err))
	}
	n, err := datadir.LoadNodes(c.Context, src.Metadata, nb, datadir.LoadOptions{Skip: formats.LedgersRoot})
	if err != nil {
		return "", report.CannotOpen(fmt.Errorf("load the fixture's metadata into %s (after %d nodes): %w", mu.String(), n, err))
	}
	return fmt.Sprintf("wrote %d ledgers (%d entries, %d left open, %d without entries) to the bookies and loaded %d other "+
		"metadata nodes into %s; the ledger id generator is past %d; run commands with: ledgermedic --metadata %s --ledgers %s ...",
		res.Ledgers, res.Entries, res.Open, res.Empty, n, mu.String(), res.MaxID, mu.String(), lu.String()), nil
}
