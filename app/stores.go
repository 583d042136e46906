package app

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
	_ "github.com/ledgermedic/ledgermedic/store/bookkeeper" // registers bk: (live bookies)
)

// storeFlags pick the stores a command reads, beside --data-dir: a live ZooKeeper or
// etcd, their files read offline, or bookie dirs. Without them, the data dir's own.
func storeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagMetadata, EnvVars: []string{"LEDGERMEDIC_METADATA"},
			Usage: "metadata store URL: zk://h1:2181,h2:2181[/chroot], zk-data:DIR[?chroot=/CHROOT] (a ZooKeeper dataDir, offline), " +
				"etcd://h1:2379,h2:2379, etcd-db:PATH (an etcd member/snap/db, offline); Pulsar's metadataStoreUrl " +
				"forms (zk:h1:2181/chroot, etcd:http://h1:2379) work too. The chroot (usually /pulsar) is where the cluster's " +
				"/managed-ledgers, /schemas and /admin are; etcd has none. Default: DATA-DIR/metadata"},
		&cli.StringFlag{Name: flagLedgers, EnvVars: []string{"LEDGERMEDIC_LEDGERS"},
			Usage: "ledger store URL: bookie:DIR[,bookie:DIR...] (bookie dirs, offline, one per bookie), bk: (live bookies of the " +
				"cluster whose ledger metadata is in --metadata), bk:zk+hierarchical://h1:2181/ledgers or " +
				"bk:metadata-store:zk:h1:2181/ledgers (bookkeeper.conf's metadataServiceUri). Default: DATA-DIR/ledgers"},
		&cli.StringFlag{Name: "bk-root", Usage: "bk: the ledgers root in the metadata store (default /ledgers)"},
		&cli.Float64Flag{Name: "read-rate", Usage: "live stores: at most N reads per second (0: no limit)"},
		&cli.IntFlag{Name: "read-concurrency", Usage: "live stores: reads in flight at once (0: the backend's default)"},
		&cli.DurationFlag{Name: "timeout", Usage: "live stores: connect and request timeout (0: the backend's default)"},
		&cli.StringFlag{Name: "zk-digest", EnvVars: []string{"LEDGERMEDIC_ZK_DIGEST"}, Usage: "ZooKeeper digest auth, user:password"},
		&cli.DurationFlag{Name: "zk-session-timeout", Usage: "ZooKeeper session timeout (0: 10s)"},
		&cli.StringFlag{Name: "etcd-cacert", Usage: "etcd: CA certificate file (TLS)"},
		&cli.StringFlag{Name: "etcd-cert", Usage: "etcd: client certificate file (TLS)"},
		&cli.StringFlag{Name: "etcd-key", Usage: "etcd: client key file (TLS)"},
		&cli.StringFlag{Name: "etcd-user", Usage: "etcd: user name"},
		&cli.StringFlag{Name: "etcd-password", EnvVars: []string{"LEDGERMEDIC_ETCD_PASSWORD"}, Usage: "etcd: password"},
		&cli.StringFlag{Name: flagAtZxid, Usage: "zk-data: show the tree as it was after this zxid (decimal, or hex as ZooKeeper prints it: 0x5c); " +
			"one of --at-zxid, --at-time, --revision"},
		&cli.StringFlag{Name: flagAtTime, Usage: "zk-data: show the store as it was at this time: " + timeSyntax},
		&cli.StringFlag{Name: flagRevision, Usage: "etcd-db: show the store as it was at this revision (decimal, or 0x hex)"},
	}
}

// storeOptions turns the store flags into store.Options. Bad URLs and flags that do
// not fit the store are bad usage (exit 2), found before anything is opened.
func storeOptions(c *cli.Context, readOnly bool) (store.Options, error) {
	opts := store.Options{ReadOnly: readOnly, FullVerify: verifiesFully(c)}
	if s := c.String("metadata"); s != "" {
		u, err := store.ParseMetadataURL(s)
		if err != nil {
			return opts, report.BadInput(err)
		}
		opts.Metadata = &u
	}
	if s := c.String("ledgers"); s != "" {
		u, err := store.ParseLedgersURL(s)
		if err != nil {
			return opts, report.BadInput(err)
		}
		opts.Ledgers = &u
	}
	var err error
	if opts.Remote, err = remoteOptions(c); err != nil {
		return opts, err
	}
	return opts, checkPointInTime(opts)
}

// remoteOptions reads the flags that tune live and offline stores.
func remoteOptions(c *cli.Context) (store.RemoteOptions, error) {
	var r store.RemoteOptions
	r.Rate, r.Concurrency, r.Timeout = c.Float64("read-rate"), c.Int("read-concurrency"), c.Duration("timeout")
	r.ZKDigest, r.SessionTimeout = c.String("zk-digest"), c.Duration("zk-session-timeout")
	r.EtcdCACert, r.EtcdCert, r.EtcdKey = c.String("etcd-cacert"), c.String("etcd-cert"), c.String("etcd-key")
	r.EtcdUser, r.EtcdPassword = c.String("etcd-user"), c.String("etcd-password")
	if r.BKRoot = c.String("bk-root"); r.BKRoot != "" && (!strings.HasPrefix(r.BKRoot, "/") || path.Clean(r.BKRoot) != r.BKRoot || r.BKRoot == "/") {
		return r, report.BadInputf("--bk-root %q: want an absolute path such as /ledgers", r.BKRoot)
	}
	var err error
	if r.AtZxid, r.AtTime, r.Revision, err = pointInTime(c, time.Now()); err != nil {
		return r, err
	}
	if r.Rate < 0 || r.Concurrency < 0 || r.Timeout < 0 || r.SessionTimeout < 0 {
		return r, report.BadInputf("--read-rate, --read-concurrency, --timeout and --zk-session-timeout must not be negative")
	}
	return r, nil
}

// The point-in-time flags: which past state of an offline store to show.
const (
	flagAtZxid   = "at-zxid"
	flagAtTime   = "at-time"
	flagRevision = "revision"
)

// pointInTime reads the point-in-time flags, the one parser of them: at most
// one is given (each names a different point); a zxid or revision is a positive
// decimal or 0x hex number (ZooKeeper prints zxids in hex: srvr's "Zxid: 0x5c",
// log.5c), a time is any form parseTime reads. Zero values: not given.
func pointInTime(c *cli.Context, now time.Time) (zxid int64, at time.Time, rev int64, err error) {
	var given []string
	for _, n := range []string{flagAtZxid, flagAtTime, flagRevision} {
		if c.String(n) != "" {
			given = append(given, "--"+n)
		}
	}
	if len(given) > 1 {
		return 0, at, 0, report.BadInputf("%s name different points in time: give one", strings.Join(given, " and "))
	}
	if zxid, err = pointNumber(flagAtZxid, c.String(flagAtZxid)); err != nil {
		return 0, at, 0, err
	}
	if rev, err = pointNumber(flagRevision, c.String(flagRevision)); err != nil {
		return 0, at, 0, err
	}
	if s := c.String(flagAtTime); s != "" {
		at, err = parseTime(flagAtTime, s, now)
	}
	return zxid, at, rev, err
}

// pointNumber parses a zxid or revision: decimal, or hex after 0x; 0 when s is "".
func pointNumber(name, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	digits, base := s, 10
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		digits, base = h, 16
	}
	v, err := strconv.ParseInt(digits, base, 64)
	if err != nil || v <= 0 || strings.HasPrefix(digits, "+") || strings.HasPrefix(digits, "-") {
		return 0, report.BadInputf("--%s %q: want a positive number, decimal (92) or hex (0x5c)", name, s)
	}
	return v, nil
}

// checkPointInTime refuses point-in-time flags that the chosen metadata store cannot honour.
func checkPointInTime(opts store.Options) error {
	r := opts.Remote
	scheme := ""
	if opts.Metadata != nil {
		scheme = opts.Metadata.Scheme
	}
	if (r.AtZxid != 0 || !r.AtTime.IsZero() && scheme != store.SchemeEtcdDB) && scheme != store.SchemeZKData {
		return report.BadInputf("--at-zxid and --at-time need --metadata zk-data:DIR (a ZooKeeper dataDir read offline)")
	}
	if r.Revision != 0 && scheme != store.SchemeEtcdDB {
		return report.BadInputf("--revision needs --metadata etcd-db:PATH (an etcd db read offline)")
	}
	return nil
}

// checkWritable refuses, before any plan is made, a writing command on stores it
// cannot write: files of another program are never written.
func checkWritable(opts store.Options) error {
	if u := opts.Metadata; u != nil && !u.Writable() {
		return report.BadInputf("--metadata %s is read-only (ledgermedic never writes another program's files); "+
			"write to the live store (zk:// or etcd://), or import it into a data dir and write there", u)
	}
	if u := opts.Ledgers; u != nil && !(u.Scheme == store.SchemeBK && u.Meta == nil && opts.Metadata != nil) {
		// bk: with the live --metadata store: new ledgers go to the bookies
		// (store.BookieWriter), their metadata into that store.
		return report.BadInputf("--ledgers %s is read-only; a writing command writes ledgers into the data dir's own "+
			"ledger store (import the bookie dirs first: ledgermedic import --ledgers ... --out DIR), or to live bookies "+
			"with --ledgers bk: and the live --metadata store", u)
	}
	if opts.Remote.AtZxid != 0 || opts.Remote.Revision != 0 || !opts.Remote.AtTime.IsZero() {
		return report.BadInputf("--at-zxid, --at-time and --revision show the past; a writing command works on the present")
	}
	return nil
}

// openStores opens the data dir and the stores the flags name; pulsar: the
// metadata must hold a Pulsar cluster's nodes at its root (store.Options.Pulsar).
func (e *env) openStores(c *cli.Context, readOnly, pulsar bool) (*datadir.DataDir, error) {
	opts, err := storeOptions(c, readOnly)
	if err != nil {
		return nil, err
	}
	opts.Pulsar = pulsar
	if !readOnly {
		if err := checkWritable(opts); err != nil {
			return nil, err
		}
	}
	p := c.String("data-dir")
	if p == "" && (opts.Metadata == nil || opts.Ledgers == nil || !readOnly) {
		what := "metadata/ and ledgers/"
		switch {
		case opts.Metadata != nil && opts.Ledgers == nil:
			what = "ledgers/ (or give --ledgers)"
		case opts.Metadata == nil && opts.Ledgers != nil:
			what = "metadata/ (or give --metadata)"
		case !readOnly:
			what = "the write journal"
		}
		return nil, report.BadInputf("--data-dir (or LEDGERMEDIC_DATA_DIR) is required: it holds %s", what)
	}
	dd, err := datadir.Open(p, opts)
	if err != nil {
		if errors.Is(err, store.ErrBadURL) || errors.Is(err, store.ErrNeedsDataDir) || errors.Is(err, datadir.ErrEtcdNoTime) ||
			errors.Is(err, datadir.ErrNoPulsarMetadata) {
			return nil, report.BadInput(err)
		}
		return nil, report.CannotOpen(err)
	}
	if readOnly {
		notes := uncleanOnce(dd)
		for _, s := range dd.Sources {
			for _, n := range s.Notes {
				notes = append(notes, s.URL+": "+n)
			}
		}
		for _, n := range notes {
			fmt.Fprintf(e.Stderr, "note: %s\n", n)
		}
		e.storeNotes = append(e.storeNotes, notes...)
	}
	return dd, nil
}

// uncleanOnce is the data dir's notes with those of its databases read from
// sandbox copies said once, and with what ends them: each read copies the
// databases again until a writing command opens the data dir, which lets Badger
// recover its log in place.
func uncleanOnce(dd *datadir.DataDir) []string {
	var out, dbs []string
	for _, n := range dd.Notes {
		if db, ok := datadir.SandboxNoteDB(n); ok {
			dbs = append(dbs, db)
			continue
		}
		out = append(out, n)
	}
	if len(dbs) == 0 {
		return out
	}
	return append(out, fmt.Sprintf("unclean shutdown: %s not closed cleanly (a writer was killed); read from a sandbox copy in %s, "+
		"the original not written. Every read copies it again until a writing command opens the data dir: "+
		"run the interrupted command again (or any command with --apply) to recover it in place and end this note",
		strings.Join(dbs, " and "), dd.SandboxPath))
}

// dataDirPath returns --data-dir or a usage error.
func dataDirPath(c *cli.Context) (string, error) {
	p := c.String("data-dir")
	if p == "" {
		return "", report.BadInputf("--data-dir (or LEDGERMEDIC_DATA_DIR) is required")
	}
	return p, nil
}
