package bookie

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkdisk"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
)

// Store is the read-only ledger store of bookie dirs (--ledgers bookie:DIR,...):
// entries read from entry logs and journals, replicas merged across the dirs, each
// entry's BookKeeper digest checked, and the payload (what the data dir's Badger
// ledger store holds) served from a replica whose digest verifies.
//
// It reads the bookies' files through an index built by one scan and kept in a
// Badger database in the user's cache dir (index.go); the bookie dirs are
// never written.
type Store struct {
	u       store.URL
	bookies []string // the dirs as given
	index   *indexDB
	notes   []string

	mu       sync.Mutex
	handles  map[uint32]*os.File
	meta     func(ledgerID int64) (LedgerMeta, bool)
	lastID   int64
	lastMeta LedgerMeta
	lastOK   bool
	lastSet  bool
}

// LedgerMeta is what the bookie store needs from a ledger's BookKeeper
// metadata (docs/formats.md §6).
type LedgerMeta struct {
	DigestType   string // CRC32, HMAC, CRC32C, DUMMY
	Password     []byte // HMAC only
	WriteQuorum  int
	EnsembleSize int
}

// Open opens bookie dirs as a read-only ledger store.
func Open(u store.URL, opts store.Options) (*Store, error) {
	if len(u.Paths) == 0 {
		return nil, fmt.Errorf("%w %q: no bookie dir", store.ErrBadURL, u.Raw)
	}
	idx, notes, err := openBookieIndex(u.Paths, opts)
	if err != nil {
		return nil, err
	}
	return &Store{u: u, bookies: u.Paths, index: idx, notes: notes, handles: map[uint32]*os.File{}}, nil
}

// SetLedgerMeta gives the store each ledger's digest type, password and write
// quorum (from the metadata store: LedgerMetaFromStore). Without it, or for a
// ledger it does not know, a replica is good when its digest verifies under any
// known type, and under-replication is not judged.
func (s *Store) SetLedgerMeta(fn func(ledgerID int64) (LedgerMeta, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meta, s.lastSet = fn, false
}

// LedgerMetaFromStore reads BookieLedgerMeta from the ledgers' /ledgers/... nodes.
func LedgerMetaFromStore(ms store.MetadataStore) func(int64) (LedgerMeta, bool) {
	return func(id int64) (LedgerMeta, bool) {
		n, err := ms.Get(formats.LedgerPath(id))
		if err != nil {
			return LedgerMeta{}, false
		}
		md, err := formats.DecodeLedgerMetadata(n.Value)
		if err != nil || md.DigestType == nil {
			return LedgerMeta{}, false
		}
		return LedgerMeta{
			DigestType:   md.GetDigestType().String(),
			Password:     md.GetPassword(),
			WriteQuorum:  int(md.GetQuorumSize()),
			EnsembleSize: int(md.GetEnsembleSize()),
		}, true
	}
}

// ledgerMeta returns the ledger's metadata, remembering the last ledger asked
// (scans ask ledger by ledger).
func (s *Store) ledgerMeta(id int64) (LedgerMeta, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta == nil {
		return LedgerMeta{}, false
	}
	if !s.lastSet || s.lastID != id {
		s.lastMeta, s.lastOK = s.meta(id)
		s.lastID, s.lastSet = id, true
	}
	return s.lastMeta, s.lastOK
}

func (s *Store) Source() store.SourceInfo {
	return store.SourceInfo{URL: s.u.String(), Kind: store.SchemeBookie, ReadOnly: true, Notes: s.notes}
}

func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, f := range s.handles {
		errs = append(errs, f.Close())
	}
	s.handles = nil
	if s.index != nil {
		errs = append(errs, s.index.db.Close())
		s.index = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close bookie store %s: %w", s.u.String(), err)
	}
	return nil
}

func (s *Store) PutEntry(ledgerID, entryID int64, _ []byte) error {
	return fmt.Errorf("put ledger %d entry %d into %s: %w", ledgerID, entryID, s.u.String(), store.ErrReadOnly)
}

func (s *Store) DeleteLedgerEntries(ledgerID int64) error {
	return fmt.Errorf("delete ledger %d entries from %s: %w", ledgerID, s.u.String(), store.ErrReadOnly)
}

// replica is one copy of an entry as the index records it.
type replica struct {
	bookie uint16
	loc    location
}

func (s *Store) Entry(ledgerID, entryID int64) ([]byte, error) {
	var out []byte
	err := s.peek(ledgerID, entryID, nil, func(v []byte) error {
		out = bytes.Clone(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EntryReader reads through the index as Entry does, reusing one buffer for
// the payloads.
func (s *Store) EntryReader() store.EntryReader { return &bookieEntryReader{s: s} }

type bookieEntryReader struct {
	s   *Store
	buf []byte
}

func (r *bookieEntryReader) Peek(ledgerID, entryID int64, fn func([]byte) error) error {
	return r.s.peek(ledgerID, entryID, &r.buf, fn)
}

func (r *bookieEntryReader) Close() {}

// peek serves one entry's good copy to fn (in *buf's memory when buf is not nil)
// and returns fn's error; read errors name the entry.
func (s *Store) peek(ledgerID, entryID int64, buf *[]byte, fn func([]byte) error) error {
	found := false
	var fnErr error
	err := s.groups(context.Background(), ledgerKeyFrom(ledgerID, entryID), ledgerEntryPrefix(ledgerID, entryID),
		func(_, _ int64, reps []replica) error {
			var b []byte
			if buf != nil {
				b = *buf
			}
			v, err := s.serve(ledgerID, entryID, reps, b)
			if err != nil {
				return err
			}
			if buf != nil {
				*buf = v[:0]
			}
			found = true
			fnErr = fn(v)
			return nil
		})
	if err == nil && !found {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	return fnErr
}

func (s *Store) Entries(ctx context.Context, ledgerID, from, to int64, fn func(entryID int64, value []byte) error) error {
	from = max(from, 0)
	if to >= 0 && to < from {
		return nil
	}
	var buf []byte
	return s.groups(ctx, ledgerKeyFrom(ledgerID, from), ledgerPrefix(ledgerID), func(_, entryID int64, reps []replica) error {
		if to >= 0 && uint64(entryID) > uint64(to) {
			return errStopGroups
		}
		v, err := s.serve(ledgerID, entryID, reps, buf)
		if err != nil {
			return err
		}
		buf = v[:0]
		return fn(entryID, v)
	})
}

// ScanEntries passes every entry's good copy to fn in (ledger, entry) order; an
// entry with no good copy goes to skipped as a *TruncatedError (its data is lost
// as far as these dirs tell).
func (s *Store) ScanEntries(ctx context.Context, fn func(ledgerID, entryID int64, value []byte) error, skipped func(*store.TruncatedError) error) error {
	var buf []byte
	return s.groups(ctx, []byte{replicaKeyPrefix}, []byte{replicaKeyPrefix}, func(ledgerID, entryID int64, reps []replica) error {
		v, err := s.serve(ledgerID, entryID, reps, buf)
		var te *store.TruncatedError
		if errors.As(err, &te) && skipped != nil {
			return skipped(te)
		}
		if err != nil {
			return err
		}
		buf = v[:0]
		return fn(ledgerID, entryID, v)
	})
}

func (s *Store) LastEntry(ledgerID int64) (int64, error) {
	var last int64 = -1
	err := s.index.db.View(func(txn *badger.Txn) error {
		return badgerdir.LastKey(txn, ledgerPrefix(ledgerID), replicaKeyLen, func(key []byte) error {
			_, last, _ = parseReplicaKey(key)
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("ledger %d last entry: %w", ledgerID, err)
	}
	return last, nil
}

func (s *Store) LedgerIDs(ctx context.Context, fn func(ledgerID int64, entries int64) error) error {
	var cur, count int64
	err := s.keys(ctx, []byte{replicaKeyPrefix}, func(ledgerID, entryID int64, newEntry bool) error {
		if !newEntry {
			return nil
		}
		if count > 0 && ledgerID != cur {
			if err := fn(cur, count); err != nil {
				return err
			}
			count = 0
		}
		cur = ledgerID
		count++
		return nil
	})
	if err == nil && count > 0 {
		err = fn(cur, count)
	}
	return err
}

// errStopGroups ends a walk early without an error.
var errStopGroups = errors.New("stop")

// groups calls fn once per entry from seek on, with all of its replicas.
func (s *Store) groups(ctx context.Context, seek, prefix []byte, fn func(ledgerID, entryID int64, reps []replica) error) error {
	var (
		reps             []replica
		curL, curE       int64
		have             bool
		errFromCallbacks error
	)
	flush := func() error {
		if !have {
			return nil
		}
		have = false
		return fn(curL, curE, reps)
	}
	err := s.index.db.View(func(txn *badger.Txn) error {
		err := badgerdir.Iterate(ctx, txn, badgerdir.ScanOptions(prefix), seek, func(item *badger.Item) error {
			l, e, b := parseReplicaKey(item.Key())
			if have && (l != curL || e != curE) {
				if err := flush(); err != nil {
					return err
				}
			}
			if !have {
				reps, curL, curE, have = reps[:0], l, e, true
			}
			var loc location
			if err := item.Value(func(v []byte) error { return loc.decode(v) }); err != nil {
				return fmt.Errorf("bookie index: ledger %d entry %d: %w", l, e, err)
			}
			reps = append(reps, replica{bookie: b, loc: loc})
			return nil
		})
		if err != nil {
			return err
		}
		return flush()
	})
	if errors.Is(err, errStopGroups) {
		return errFromCallbacks
	}
	return err
}

// keys walks replica keys only (no values), telling when a new entry starts.
func (s *Store) keys(ctx context.Context, prefix []byte, fn func(ledgerID, entryID int64, newEntry bool) error) error {
	return s.index.db.View(func(txn *badger.Txn) error {
		var (
			prevL, prevE int64
			n            int
		)
		return badgerdir.Iterate(ctx, txn, badgerdir.ScanOptions(prefix), nil, func(item *badger.Item) error {
			l, e, _ := parseReplicaKey(item.Key())
			if err := fn(l, e, n == 0 || l != prevL || e != prevE); err != nil {
				return err
			}
			prevL, prevE = l, e
			n++
			return nil
		})
	})
}

// serve reads the replicas in order of trust (digest verified when indexed first)
// and returns the payload of the first whose digest verifies now, in buf's memory.
func (s *Store) serve(ledgerID, entryID int64, reps []replica, buf []byte) ([]byte, error) {
	meta, known := s.ledgerMeta(ledgerID)
	var firstErr error
	for pass := range 2 {
		for _, r := range reps {
			if (s.trusted(r, meta, known) == verdictGood) != (pass == 0) {
				continue
			}
			b, err := s.readReplica(r, ledgerID, entryID, buf)
			if err != nil {
				firstErr = firstOf(firstErr, err)
				continue
			}
			buf = b[:0]
			t := bkdisk.DigestType(meta.DigestType)
			if !known {
				t = r.loc.detected()
			}
			if t == "" || !bkdisk.Verify(b, t, meta.Password) {
				continue
			}
			w, _ := t.Width()
			return b[bkdisk.FrameHeaderSize+w:], nil
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	r := reps[0]
	return nil, fmt.Errorf("%s offset %d (%d replicas): %w", s.index.files[r.loc.file].Path, r.loc.offset, len(reps),
		&store.TruncatedError{LedgerID: ledgerID, EntryID: entryID, Size: int64(r.loc.length), Cause: store.ErrBadDigest})
}

func firstOf(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

type verdict int

const (
	verdictBad verdict = iota
	verdictGood
	verdictReread // HMAC with a password: the index could not check it
)

// trusted judges a replica from what the index recorded at build time, when the
// digest was tried under each type with an empty password.
func (s *Store) trusted(r replica, meta LedgerMeta, known bool) verdict {
	det := r.loc.detected()
	switch {
	case !known:
		if det == "" {
			return verdictBad
		}
		return verdictGood
	case meta.DigestType == string(bkdisk.DigestDummy):
		return verdictGood
	case meta.DigestType == string(bkdisk.DigestHMAC) && len(meta.Password) > 0:
		return verdictReread
	case string(det) == meta.DigestType:
		return verdictGood
	}
	return verdictBad
}

// readReplica reads a replica's stored bytes and checks they are still the entry
// the index says (the files may have changed since it was built).
func (s *Store) readReplica(r replica, ledgerID, entryID int64, buf []byte) ([]byte, error) {
	f, path, err := s.handle(r.loc.file)
	if err != nil {
		return nil, err
	}
	n := int(r.loc.length)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := f.ReadAt(buf, r.loc.offset); err != nil {
		return nil, fmt.Errorf("%s offset %d: read %d bytes: %w", path, r.loc.offset, n, err)
	}
	if n < 16 || int64(binary.BigEndian.Uint64(buf)) != ledgerID || int64(binary.BigEndian.Uint64(buf[8:])) != entryID {
		return nil, fmt.Errorf("%s offset %d: not ledger %d entry %d any more: the bookie files changed after the index was built; open again to rebuild it",
			path, r.loc.offset, ledgerID, entryID)
	}
	return buf, nil
}

func (s *Store) handle(file uint32) (*os.File, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(file) >= len(s.index.files) {
		return nil, "", fmt.Errorf("bookie index: file %d of %d: index damaged", file, len(s.index.files))
	}
	path := s.index.files[file].Path
	if f, ok := s.handles[file]; ok {
		return f, path, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, err
	}
	s.handles[file] = f
	return f, path, nil
}

// ReplicaFindings compares every entry's replicas with its ledger's write quorum and
// digest type, and adds the damage the index build met in the files. Order: file
// damage in scan order, then entries in (ledger, entry) order, then bookie order.
func (s *Store) ReplicaFindings(ctx context.Context) ([]store.ReplicaFinding, error) {
	out := append([]store.ReplicaFinding(nil), s.index.damage...)
	var buf []byte
	err := s.groups(ctx, []byte{replicaKeyPrefix}, []byte{replicaKeyPrefix}, func(l, e int64, reps []replica) error {
		meta, known := s.ledgerMeta(l)
		var good []replica
		firstCorrupt := len(out)
		for _, r := range reps {
			v := s.trusted(r, meta, known)
			if v == verdictReread {
				b, err := s.readReplica(r, l, e, buf)
				if err != nil {
					return err
				}
				buf = b[:0]
				v = verdictBad
				if bkdisk.Verify(b, bkdisk.DigestHMAC, meta.Password) {
					v = verdictGood
				}
			}
			if v == verdictGood {
				good = append(good, r)
				continue
			}
			out = append(out, s.finding(store.FindingReplicaCorrupt, l, e, r, corruptDetail(r, meta, known)))
		}
		if len(good) == 0 {
			for i := firstCorrupt; i < len(out); i++ {
				out[i].NoGoodReplica = true
			}
		}
		if known && len(reps) < meta.WriteQuorum {
			out = append(out, store.ReplicaFinding{Kind: store.FindingUnderReplicated, LedgerID: l, EntryID: e,
				Detail: fmt.Sprintf("%d of %d replicas (write quorum) found: %s", len(reps), meta.WriteQuorum, s.bookieList(reps))})
		}
		for _, r := range good[min(1, len(good)):] {
			if r.loc.hash != good[0].loc.hash || r.loc.length != good[0].loc.length {
				out = append(out, s.finding(store.FindingReplicasDiffer, l, e, r, fmt.Sprintf(
					"%d bytes (CRC32C %08x) here, %d bytes (CRC32C %08x) on %s; both digests verify",
					r.loc.length, r.loc.hash, good[0].loc.length, good[0].loc.hash, s.bookies[good[0].bookie])))
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) finding(kind string, l, e int64, r replica, detail string) store.ReplicaFinding {
	return store.ReplicaFinding{Kind: kind, LedgerID: l, EntryID: e, Bookie: s.bookies[r.bookie],
		File: s.index.files[r.loc.file].Path, Offset: r.loc.offset, Detail: detail}
}

func corruptDetail(r replica, meta LedgerMeta, known bool) string {
	if !known {
		return "the digest verifies under no digest type (CRC32C, CRC32, HMAC with an empty password); the ledger has no metadata"
	}
	if det := r.loc.detected(); det != "" {
		return fmt.Sprintf("the digest is %s, the ledger's metadata says %s", det, meta.DigestType)
	}
	return fmt.Sprintf("the %s digest does not match the bytes", meta.DigestType)
}

func (s *Store) bookieList(reps []replica) string {
	var b bytes.Buffer
	for i, r := range reps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.bookies[r.bookie])
	}
	if len(reps) == 0 {
		return "none"
	}
	return b.String()
}
