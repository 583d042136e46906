package bookkeeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkwirepb"
	"github.com/ledgermedic/ledgermedic/store"
)

// Defaults of a store opened without --timeout / --read-concurrency.
const (
	defaultTimeout  = 10 * time.Second
	defaultInflight = 64 // requests outstanding per bookie connection
	ledgerCacheMax  = 1 << 16
	// LedgerIDs holds ledgerPage ledgers at a time and reads the LAC of
	// lacConcurrency open ones at once.
	ledgerPage     = 4096
	lacConcurrency = 64
)

// errBadEntry: a bookie returned an entry whose ids or digest are wrong.
var errBadEntry = errors.New("bad entry")

// errNoReplica: no bookie of an entry's write set could serve it (down, slow,
// refusing, garbage); each was reported as unavailable.
var errNoReplica = errors.New("no bookie of its write set could serve it")

func init() { store.RegisterLedgerBackend(store.SchemeBK, Open) }

// Store is the read-only ledger store of a running BookKeeper cluster
// (--ledgers bk:): each ledger's metadata from the metadata store, entries read
// from its bookies over the v3 protocol. It never fences or recovers a ledger:
// reads carry no FENCE_LEDGER flag, and an open ledger is read up to the last add
// confirmed its bookies report (READ_LAC), so a live writer keeps writing.
type Store struct {
	u        store.URL
	meta     store.MetadataStore
	ownMeta  io.Closer // the metadata store a bk:<metadataServiceUri> opened; nil: the caller's
	root     string
	timeout  time.Duration
	inflight int
	limiter  *rate.Limiter // nil: no cap
	logger   io.Writer

	mu       sync.Mutex
	conns    map[string]*conn // bookie id -> its one connection
	ledgers  map[int64]*ledger
	problems []*problem
	byKey    map[problemKey]*problem
	down     map[string]downMark // bookies that failed lately: skipped until the mark passes
	unread   map[int64]int64     // ledger -> first entry a scan could not read from any bookie
}

// problem is one kind of failure of one bookie on one ledger, counted.
type problem struct {
	problemKey
	firstEntry int64
	count      int
	err        error
}

type problemKey struct {
	kind, bookie string
	ledgerID     int64
}

type downMark struct {
	until time.Time
	err   error
}

// downFor is how long a bookie that refused a connection or timed out is
// skipped (the next replica is read at once) before it is tried again.
const downFor = 5 * time.Second

// Open opens bk: (ledger metadata in meta, the --metadata store) or
// bk:<metadataServiceUri> (its own metadata store).
func Open(u store.URL, meta store.MetadataStore, opts store.Options) (store.LedgerBackend, error) {
	s := &Store{u: u, meta: meta, root: u.Chroot, timeout: opts.Remote.Timeout, inflight: opts.Remote.Concurrency,
		logger: opts.Logger, conns: map[string]*conn{}, ledgers: map[int64]*ledger{}, byKey: map[problemKey]*problem{},
		down: map[string]downMark{}, unread: map[int64]int64{}}
	if s.timeout <= 0 {
		s.timeout = defaultTimeout
	}
	if s.inflight <= 0 {
		s.inflight = defaultInflight
	}
	s.limiter = opts.Remote.Limiter()
	if opts.Remote.BKRoot != "" {
		s.root = opts.Remote.BKRoot
	}
	if s.root == "" {
		s.root = formats.LedgersRoot
	}
	if u.Meta != nil {
		mb, err := store.OpenMetadata(*u.Meta, store.Options{ReadOnly: true, Remote: opts.Remote, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("bk: ledger metadata store %s: %w", u.Meta, err)
		}
		s.meta, s.ownMeta = mb, mb
	}
	if s.meta == nil {
		return nil, fmt.Errorf("%w %q: bk: needs the metadata store that holds %s (--metadata) or bk:<metadataServiceUri>", store.ErrBadURL, u.Raw, s.root)
	}
	// A ledgers root is a BookKeeper cluster only when it holds its LAYOUT
	// (BookKeeper's AbstractZkLedgerManagerFactory reads it first).
	if _, err := s.meta.Get(s.root + "/LAYOUT"); err != nil {
		s.Close()
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("bk: %s/LAYOUT not found: %s is not the ledgers root of a BookKeeper cluster (see --bk-root)", s.root, s.root)
		}
		return nil, fmt.Errorf("bk: %s/LAYOUT: %w", s.root, err)
	}
	return s, nil
}

func (s *Store) Source() store.SourceInfo {
	return store.SourceInfo{URL: s.u.String(), Kind: store.SchemeBK, ReadOnly: true, Notes: []string{
		"entries are read from the bookies without fencing: an OPEN ledger is read up to the last add confirmed its bookies report",
	}}
}

func (s *Store) Close() error {
	s.mu.Lock()
	for _, c := range s.conns {
		c.close()
	}
	s.conns = map[string]*conn{}
	s.mu.Unlock()
	if s.ownMeta != nil {
		return s.ownMeta.Close()
	}
	return nil
}

func (s *Store) PutEntry(ledgerID, entryID int64, _ []byte) error {
	return fmt.Errorf("put ledger %d entry %d into %s: %w", ledgerID, entryID, s.u.String(), store.ErrReadOnly)
}

func (s *Store) DeleteLedgerEntries(ledgerID int64) error {
	return fmt.Errorf("delete ledger %d entries from %s: %w", ledgerID, s.u.String(), store.ErrReadOnly)
}

// ReplicaFindings are the replica problems met by the reads so far, one per
// bookie, ledger and kind: bookies that could not serve and bad copies.
func (s *Store) ReplicaFindings(context.Context) ([]store.ReplicaFinding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.ReplicaFinding, 0, len(s.problems))
	for _, p := range s.problems {
		detail := fmt.Sprintf("%v; read from the next bookie of the write set", p.err)
		if p.count > 1 {
			detail = fmt.Sprintf("%d reads of this ledger from entry %d on failed (first: %v); each was read from the next bookie of the write set",
				p.count, p.firstEntry, p.err)
		}
		first, unread := s.unread[p.ledgerID]
		unread = unread && p.kind == store.FindingBookieUnavailable
		if unread {
			detail = fmt.Sprintf("%v; no bookie of the write set could serve ledger %d from entry %d on: those entries were not read",
				p.err, p.ledgerID, first)
		}
		out = append(out, store.ReplicaFinding{Kind: p.kind, LedgerID: p.ledgerID, EntryID: p.firstEntry, Bookie: p.bookie,
			Offset: -1, Detail: detail, NoGoodReplica: unread})
	}
	return out, nil
}

// ledger returns a ledger's metadata (cached; an open ledger's LAC is asked once
// per open of the store). store.ErrNotFound when the ledger has no metadata node.
func (s *Store) ledger(ctx context.Context, id int64) (*ledger, error) {
	s.mu.Lock()
	l, ok := s.ledgers[id]
	s.mu.Unlock()
	if ok {
		return l, nil
	}
	p := ledgerPath(s.root, id)
	n, err := s.meta.Get(p)
	if err != nil {
		return nil, fmt.Errorf("ledger %d: metadata %s: %w", id, p, err)
	}
	return s.addLedger(ctx, id, n.Value)
}

func (s *Store) addLedger(ctx context.Context, id int64, value []byte) (*ledger, error) {
	l, err := s.parseLedger(id, value)
	if err != nil {
		return nil, err
	}
	return s.finishLedger(ctx, l)
}

func (s *Store) parseLedger(id int64, value []byte) (*ledger, error) {
	md, err := formats.DecodeLedgerMetadata(value)
	if err != nil {
		return nil, fmt.Errorf("ledger %d: metadata %s: %w", id, ledgerPath(s.root, id), err)
	}
	return newLedger(id, md)
}

// finishLedger asks an open ledger's bookies for its last add confirmed and
// caches the ledger.
func (s *Store) finishLedger(ctx context.Context, l *ledger) (*ledger, error) {
	if l.open {
		var err error
		if l.last, err = s.readLAC(ctx, l); err != nil {
			return nil, err
		}
	}
	s.cache(l)
	return l, nil
}

// cache keeps a ledger's metadata for the reads of its entries; the cache is
// emptied when full, so memory stays bounded on clusters of any size.
func (s *Store) cache(l *ledger) {
	s.mu.Lock()
	if len(s.ledgers) >= ledgerCacheMax {
		s.ledgers = map[int64]*ledger{}
	}
	s.ledgers[l.id] = l
	s.mu.Unlock()
}

// conn returns the bookie's connection, dialling it (through the registry) the
// first time or after it died.
func (s *Store) conn(ctx context.Context, bookie string) (*conn, error) {
	s.mu.Lock()
	c, ok := s.conns[bookie]
	d, isDown := s.down[bookie]
	s.mu.Unlock()
	if isDown && time.Now().Before(d.until) {
		return nil, d.err
	}
	if ok && c.dead() == nil {
		return c, nil
	}
	addr, err := resolveBookie(s.meta, s.root, bookie)
	if err != nil {
		s.markDown(bookie, err)
		return nil, err
	}
	c, err = dial(ctx, bookie, addr, s.timeout, s.inflight)
	if err != nil {
		s.markDown(bookie, err)
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.conns[bookie]; ok && old != c && old.dead() == nil {
		c.close() // another reader dialled first
		return old, nil
	}
	s.conns[bookie] = c
	return c, nil
}

func (s *Store) wait(ctx context.Context) error {
	if s.limiter == nil {
		return nil
	}
	return s.limiter.Wait(ctx)
}

// readFrom reads one stored entry from one bookie and verifies it.
func (s *Store) readFrom(ctx context.Context, bookie string, l *ledger, entryID int64) ([]byte, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	c, err := s.conn(ctx, bookie)
	if err != nil {
		return nil, err
	}
	resp, err := c.call(ctx, s.timeout, func(txn uint64) *bkwirepb.Request { return readEntryRequest(txn, l.id, entryID) })
	if err != nil {
		if ctx.Err() == nil {
			s.markDown(bookie, err)
		}
		return nil, err
	}
	st := resp.GetStatus()
	if st == bkwirepb.StatusCode_EOK {
		st = resp.GetReadResponse().GetStatus()
	}
	if st != bkwirepb.StatusCode_EOK {
		return nil, fmt.Errorf("bookie %s: %w", bookie, &StatusError{Status: st})
	}
	f, err := l.verify(resp.GetReadResponse().GetBody(), entryID)
	if err != nil {
		return nil, fmt.Errorf("bookie %s: %w", bookie, err)
	}
	return f.Payload, nil
}

// readEntry reads entry e from its write set in order; a bookie that fails is
// reported and the next one tried.
func (s *Store) readEntry(ctx context.Context, l *ledger, e int64) ([]byte, error) {
	ws := l.writeSet(e)
	var errs []error
	missing, bad := 0, 0
	for _, b := range ws {
		p, err := s.readFrom(ctx, b, l, e)
		if err == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var se *StatusError
		switch {
		case errors.As(err, &se) && se.Missing():
			missing++
		case errors.Is(err, errBadEntry):
			bad++
			s.report(store.FindingReplicaCorrupt, l.id, e, b, err)
		default:
			s.report(store.FindingBookieUnavailable, l.id, e, b, err)
		}
		errs = append(errs, err)
	}
	where := fmt.Sprintf("ledger %d entry %d", l.id, e)
	switch {
	case len(ws) == 0:
		return nil, fmt.Errorf("%s: no ensemble: %w", where, store.ErrNotFound)
	case missing == len(ws):
		return nil, fmt.Errorf("%s: no bookie of its write set %v holds it: %w", where, ws, store.ErrNotFound)
	case bad+missing == len(ws) && bad > 0:
		return nil, fmt.Errorf("%s: %w (%d of %d replicas bad): %w: %w", where, store.ErrBadDigest, bad, len(ws),
			errors.Join(errs...), &store.TruncatedError{LedgerID: l.id, EntryID: e})
	}
	return nil, fmt.Errorf("%s: %w: %w", where, errNoReplica, errors.Join(errs...))
}

// report records a replica problem and logs a bookie's first failure.
func (s *Store) report(kind string, ledgerID, entryID int64, bookie string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := problemKey{kind, bookie, ledgerID}
	if p, ok := s.byKey[k]; ok {
		p.count++
		p.firstEntry = min(p.firstEntry, entryID)
		return
	}
	p := &problem{problemKey: k, firstEntry: entryID, count: 1, err: err}
	s.byKey[k] = p
	s.problems = append(s.problems, p)
	if s.logger != nil {
		fmt.Fprintf(s.logger, "bk: bookie %s: ledger %d entry %d: %v; reading from the next replica\n", bookie, ledgerID, entryID, err)
	}
}

// markUnread records that a scan could not read ledgerID from entry on.
func (s *Store) markUnread(ledgerID, entry int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unread[ledgerID] = entry
}

// markDown makes reads skip a bookie for downFor after it could not be reached
// or did not answer, so a dead bookie costs one timeout, not one per entry.
func (s *Store) markDown(bookie string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down[bookie] = downMark{until: time.Now().Add(downFor), err: err}
}

// readLAC asks every bookie of an open ledger's last ensemble for its last add
// confirmed (READ_LAC) and takes the highest, as the Java client's
// readLastAddConfirmed does; no bookie holding the ledger means -1.
func (s *Store) readLAC(ctx context.Context, l *ledger) (int64, error) {
	lac, answered := int64(-1), 0
	var errs []error
	for _, b := range l.lastEnsemble() {
		v, err := s.readLACFrom(ctx, b, l)
		if err != nil {
			var se *StatusError
			if errors.As(err, &se) && se.Missing() {
				answered++
				continue
			}
			if ctx.Err() == nil {
				s.report(store.FindingBookieUnavailable, l.id, max(l.last, 0), b, fmt.Errorf("last add confirmed: %w", err))
			}
			errs = append(errs, err)
			continue
		}
		answered++
		lac = max(lac, v)
	}
	if answered == 0 && len(errs) > 0 {
		return 0, fmt.Errorf("ledger %d (open): last add confirmed: %w", l.id, errors.Join(errs...))
	}
	return lac, nil
}

func (s *Store) readLACFrom(ctx context.Context, bookie string, l *ledger) (int64, error) {
	if err := s.wait(ctx); err != nil {
		return 0, err
	}
	c, err := s.conn(ctx, bookie)
	if err != nil {
		return 0, err
	}
	resp, err := c.call(ctx, s.timeout, func(txn uint64) *bkwirepb.Request { return readLACRequest(txn, l.id) })
	if err != nil {
		return 0, err
	}
	r := resp.GetReadLacResponse()
	st := resp.GetStatus()
	if st == bkwirepb.StatusCode_EOK {
		st = r.GetStatus()
	}
	if st != bkwirepb.StatusCode_EOK {
		return 0, fmt.Errorf("bookie %s: %w", bookie, &StatusError{Status: st})
	}
	lac := int64(-1)
	// lacBody: ledgerId | lac | digest, from a writer's WRITE_LAC (explicit LAC).
	if b := r.GetLacBody(); len(b) >= 16 && be64(b) == l.id {
		lac = max(lac, be64(b[8:]))
	}
	// lastEntryBody: the last entry the bookie holds; its header carries the LAC
	// the writer knew when it sent it.
	if b := r.GetLastEntryBody(); len(b) > 0 {
		f, err := l.verify(b, be64(b[min(8, len(b)):]))
		if err != nil {
			return 0, fmt.Errorf("bookie %s: last entry: %w", bookie, err)
		}
		lac = max(lac, f.LastAddConfirmed)
	}
	return lac, nil
}

func be64(b []byte) int64 {
	if len(b) < 8 {
		return -1
	}
	return int64(uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7]))
}
