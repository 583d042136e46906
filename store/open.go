package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/time/rate"
)

// MetadataBackend is a metadata store opened from a URL: a live ZooKeeper or etcd,
// or the files of one read offline. Read-only
// backends return ErrReadOnly from every write.
type MetadataBackend interface {
	MetadataStore
	NodeBatcher
	io.Closer
	// Source says what the view reflects (URL, zxid or revision, time).
	Source() SourceInfo
}

// LedgerBackend is a ledger store opened from a URL: bookie dirs.
type LedgerBackend interface {
	LedgerStore
	io.Closer
	// Source says what the view reflects.
	Source() SourceInfo
}

// ReplicaReporter is a ledger store that knows of problems with the replicas of
// entries (bookie dirs; live bookies: the reads so far): check reports them.
type ReplicaReporter interface {
	ReplicaFindings(ctx context.Context) ([]ReplicaFinding, error)
}

// LedgerScanner is a LedgerBackend that can pass every entry of the store to fn in
// (ledger, entry) order, as DataDir.RawLedgerIterationSkipping does for Badger.
type LedgerScanner interface {
	// skipped receives entries whose value is known to be damaged (nil: stop there).
	ScanEntries(ctx context.Context, fn func(ledgerID, entryID int64, value []byte) error, skipped func(*TruncatedError) error) error
}

// SourceInfo describes one opened store for output, journals and reports.
type SourceInfo struct {
	URL      string    `json:"url"`                // redacted (URL.String)
	Kind     string    `json:"kind"`               // a Scheme* constant
	ReadOnly bool      `json:"read_only"`          // writes are refused
	Zxid     int64     `json:"zxid,omitempty"`     // ZooKeeper: the last zxid the view includes
	Revision int64     `json:"revision,omitempty"` // etcd: the revision the view reflects
	AsOf     time.Time `json:"as_of,omitzero"`     // the time of that zxid or revision, when known
	Notes    []string  `json:"notes,omitempty"`    // things the user must be told
}

// Live reports whether the store is a live cluster's (a ZooKeeper ensemble or etcd
// cluster), which brokers read as ledgermedic writes it.
func (s SourceInfo) Live() bool { return liveScheme(s.Kind) }

// RemoteOptions tune stores that are not the data dir's own Badger databases.
// Zero values mean the backend's defaults.
type RemoteOptions struct {
	// Rate caps reads per second against a live server (0: no cap); Concurrency
	// bounds reads in flight.
	Rate        float64
	Concurrency int
	// Timeout bounds connecting and each request.
	Timeout time.Duration
	// ZooKeeper: session timeout and digest auth ("user:password"; also ?digest= in the URL).
	SessionTimeout time.Duration
	ZKDigest       string
	// etcd: TLS files and user/password auth (also ?cacert=&cert=&key=&user=&password=).
	EtcdCACert, EtcdCert, EtcdKey string
	EtcdUser, EtcdPassword        string
	// Point in time of an offline view: ZooKeeper zxid or time; etcd revision or time.
	// Zero: the newest state the files hold.
	AtZxid   int64
	AtTime   time.Time
	Revision int64
	// BKRoot is the ledgers root of bk: ("": the URL's path, else /ledgers).
	BKRoot string
}

// Limiter is the --read-rate cap as a token bucket (nil: no cap), with the
// burst ZooKeeper's reader uses: a tenth of a second's reads.
func (r RemoteOptions) Limiter() *rate.Limiter {
	return NewReadLimiter(r.Rate)
}

// NewReadLimiter caps reads at perSecond (nil: no cap), with bursts of a tenth of
// a second's reads.
func NewReadLimiter(perSecond float64) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)/10))
}

// LedgerOpener opens a ledger backend that lives in a package of its own (it
// imports store, so store cannot import it); meta is the opened metadata store.
type LedgerOpener func(u URL, meta MetadataStore, opts Options) (LedgerBackend, error)

var ledgerOpeners = map[string]LedgerOpener{}

// RegisterLedgerBackend makes the data dir's opener open scheme with open; the
// backend's package calls it from init (store/bookkeeper: bk:).
func RegisterLedgerBackend(scheme string, open LedgerOpener) { ledgerOpeners[scheme] = open }

// ErrNeedsDataDir: a writing command on a remote store still needs a data dir for its journal.
var ErrNeedsDataDir = errors.New("a data dir is needed")

// RegisteredLedgerBackend returns the opener a backend registered for scheme.
func RegisteredLedgerBackend(scheme string) (LedgerOpener, bool) {
	open, ok := ledgerOpeners[scheme]
	return open, ok
}

// MetadataOpener opens the metadata store a URL names.
type MetadataOpener func(u URL, opts Options) (MetadataBackend, error)

var metadataOpener MetadataOpener

// SetMetadataOpener names the one function that opens metadata stores by URL
// (package datadir, which imports every backend, sets it from init).
func SetMetadataOpener(open MetadataOpener) { metadataOpener = open }

// OpenMetadata opens the metadata store a URL names, for a backend that needs a
// second store of its own (bk:<metadataServiceUri>), through the opener
// SetMetadataOpener named.
func OpenMetadata(u URL, opts Options) (MetadataBackend, error) {
	if metadataOpener == nil {
		return nil, fmt.Errorf("%w %q: no metadata store opener (import package datadir)", ErrBadURL, u.Raw)
	}
	return metadataOpener(u, opts)
}
