// Package store is the contract every store of ledgermedic keeps: a metadata
// store (node path -> node bytes, MetadataStore) and a ledger store (ledger,
// entry -> entry bytes, LedgerStore), the capabilities some of them add
// (NodeBatcher, EntryBatcher, ReadBackWriter, NodeSizeLimiter, RangeScanner,
// KeyScanner, LedgerScanner, Backuper, ReplicaReporter, ReplicaProber), Node,
// the errors, store URLs and their schemes, Options, SourceInfo, and the
// mechanisms built on the interfaces alone (ScanLedgerRange's resume past a
// truncated value, ReadAhead). It imports no backend: each lives in a folder
// below (badgerdir, zk, zkdata, etcd, etcddb, bookie, bookkeeper) and package
// datadir opens them by URL scheme.
//
// Only the mutation engine and the fixture generator write; inspection opens read-only.
package store

import (
	"context"
	"errors"
	"fmt"
)

// Sentinel errors. Each backend maps its own errors to these (Badger's in
// store/badgerdir, ZooKeeper's in store/zk, etcd's in store/etcd).
var (
	ErrNotFound        = errors.New("not found")
	ErrVersionMismatch = errors.New("version mismatch (node changed since it was read)")
	ErrReadOnly        = errors.New("store opened read-only")
	ErrLocked          = errors.New("data dir is in use by another process")
	ErrNotDataDir      = errors.New("not a ledgermedic data dir")
	// ErrTruncatedValue: Badger returned fewer bytes than the value's recorded size
	// (a truncated value log); the key's data is lost.
	ErrTruncatedValue = errors.New("value truncated (value log damaged): data lost")
)

// TruncatedError is the error of every read that meets a truncated value: Badger
// returned fewer bytes than the value's recorded size because the value log is
// damaged. errors.Is(err, ErrTruncatedValue) holds for it, and errors.As recovers
// the key, so a scan can report it and resume past it (MetadataStore.WalkFrom,
// LedgerStore.Entries from EntryID+1, DataDir.RawLedgerIterationSkipping).
type TruncatedError struct {
	Path              string // the metadata node; "" for a ledger entry
	LedgerID, EntryID int64  // the ledger entry; -1 for a node
	// Read is how many bytes Badger returned; Size is the value's recorded size,
	// approximate by up to 16 bytes (Badger estimates its entry header's length).
	Read, Size int64
	// Cause is why the bytes are lost in a store that is not Badger (bookie dirs:
	// ErrBadDigest); nil when Badger's value log is damaged.
	Cause error
}

func (e *TruncatedError) Error() string {
	key := fmt.Sprintf("ledger %d entry %d", e.LedgerID, e.EntryID)
	if e.Path != "" {
		key = fmt.Sprintf("metadata node %q", e.Path)
	}
	return fmt.Sprintf("%s: %s", key, e.Detail())
}

// Detail says what was lost and why, without the key.
func (e *TruncatedError) Detail() string {
	if e.Cause != nil {
		return fmt.Sprintf("%v: data lost (%d bytes)", e.Cause, e.Size)
	}
	return fmt.Sprintf("%v (read %d of about %d bytes)", ErrTruncatedValue, e.Read, e.Size)
}

func (e *TruncatedError) Unwrap() []error {
	if e.Cause != nil {
		return []error{ErrTruncatedValue, e.Cause}
	}
	return []error{ErrTruncatedValue}
}

// Node is one metadata-store node.
type Node struct {
	Path    string
	Value   []byte
	Version uint64 // opaque; changes on every write; used for compare-and-set
}

// MetadataStore holds nodes keyed by path.
type MetadataStore interface {
	// Get returns ErrNotFound when the node does not exist, and a *TruncatedError
	// when its value is truncated.
	Get(path string) (Node, error)
	// Walk calls fn for every node whose path starts with prefix, in path order.
	// Values are only valid during fn; copy to keep. Stops at the first error fn
	// returns, and at the first truncated value with a *TruncatedError.
	Walk(ctx context.Context, prefix string, fn func(Node) error) error
	// WalkFrom is Walk over the paths that are >= start. After a *TruncatedError
	// for path p, WalkFrom(ctx, prefix, p+"\x00", fn) resumes with the next node.
	WalkFrom(ctx context.Context, prefix, start string, fn func(Node) error) error
	// CompareAndSet writes value when the node's current version equals expect;
	// expect 0 means the node must not exist. Returns the new version, or
	// ErrVersionMismatch (wrapped with the path) and writes nothing.
	CompareAndSet(path string, expect uint64, value []byte) (uint64, error)
	// CompareAndDelete deletes the node when its version equals expect.
	CompareAndDelete(path string, expect uint64) error
}

// LedgerStore holds ledger entries keyed by (ledger id, entry id).
type LedgerStore interface {
	// Entry returns ErrNotFound when the entry does not exist, and a
	// *TruncatedError when its value is truncated.
	Entry(ledgerID, entryID int64) ([]byte, error)
	// EntryReader opens a reader for a run of point reads (entry 0 of a topic's
	// ledgers): one snapshot of the store for all of them, each value lent to a
	// callback instead of copied. Entry is one read through it. Close it when done.
	EntryReader() EntryReader
	// Entries calls fn for entries from..to inclusive (to < 0: to the end) of one ledger, in order.
	// Values are only valid during fn. Stops at the first error fn returns, and at
	// the first truncated value with a *TruncatedError: Entries from its EntryID+1
	// resumes past it.
	Entries(ctx context.Context, ledgerID, from, to int64, fn func(entryID int64, value []byte) error) error
	// LastEntry returns the highest entry id stored for the ledger, or ErrNotFound.
	LastEntry(ledgerID int64) (int64, error)
	// LedgerIDs calls fn once per ledger id that has at least one entry, ascending,
	// with the count of its entries.
	LedgerIDs(ctx context.Context, fn func(ledgerID int64, entries int64) error) error
	// PutEntry writes one entry (writable stores only).
	PutEntry(ledgerID, entryID int64, value []byte) error
	// DeleteLedgerEntries removes every entry of the ledger (writable stores only).
	DeleteLedgerEntries(ledgerID int64) error
}

// EntryReader reads single entries of a LedgerStore (LedgerStore.EntryReader).
// It is not safe for concurrent use.
type EntryReader interface {
	// Peek calls fn with the value of one entry, valid only during fn, and returns
	// fn's error. Errors as Entry's (fn is then not called): ErrNotFound, a
	// *TruncatedError, both naming the entry.
	Peek(ledgerID, entryID int64, fn func(value []byte) error) error
	// Close releases the reader's snapshot.
	Close()
}

// ErrUncleanShutdown: a Badger database in the data dir was not closed cleanly (a crash, a
// kill -9, or a copy taken while it was open); Badger must truncate its write-ahead log before
// it can be read, which a read-only open may not do. Open read-only inspects a sandbox copy
// instead unless Options.NoSandbox is set.
var ErrUncleanShutdown = errors.New("data dir was not shut down cleanly (Badger must truncate its log before reading)")

// ReplicaProber is a ledger store whose replicas can each be asked for an entry
// (live bookies): check asks every bookie of a write set, where a read stops at
// the first that answers, to find entries fewer bookies hold than the write
// quorum and ledgers no bookie holds.
type ReplicaProber interface {
	// ProbeEntry asks each bookie of the entry's write set for it.
	ProbeEntry(ctx context.Context, ledgerID, entryID int64) (EntryProbe, error)
}

// EntryProbe is what each bookie of one entry's write set answered. A bookie
// that could not answer or returned a bad copy is also a ReplicaReporter finding.
type EntryProbe struct {
	WriteSet    []string // the bookies that should hold the entry, in order
	Holding     []string // returned a copy whose ids and digest verify
	Missing     []string // answered that it holds no such ledger or entry
	Corrupt     []string // returned a copy that does not verify
	Unavailable []string // down, slow, refused or answering garbage
}

// SequentialCreator is a metadata store that makes ZooKeeper's sequential nodes,
// which BookKeeper's ledger id generator takes ids from (ZkLedgerIdGenerator).
type SequentialCreator interface {
	// CreateSequential creates the node prefix followed by the parent's 10-digit
	// sequence number, ephemeral when asked (gone with this store's session), its
	// missing parents as empty persistent nodes, and returns the created path.
	CreateSequential(prefix string, ephemeral bool) (string, error)
	// Children returns the names of a node's children (ErrNotFound: no node).
	Children(path string) ([]string, error)
}

// BookieWriter is a ledger store whose ledgers brokers read (live bookies) and
// that can put a new ledger on them. The caller (the mutation engine) writes the
// ledger's metadata node; the writer only talks to bookies and the generator.
type BookieWriter interface {
	// NewLedgerID takes a ledger id from the cluster's own generator.
	NewLedgerID(ctx context.Context) (int64, error)
	// WritableBookies lists the bookies registered as writable, sorted.
	WritableBookies(ctx context.Context) ([]string, error)
	// LedgerNode is the metadata node path of ledger id.
	LedgerNode(id int64) string
	// AddEntries adds entries (entry id = index) of the ledger whose metadata node
	// value is md to every bookie of each entry's write set, and fails unless
	// every one answers EOK; done is called after each bookie's answer.
	AddEntries(ctx context.Context, ledgerID int64, md []byte, entries [][]byte, done func(entryID int64, bookie string)) error
	// ReadBack reads every entry from every bookie of its write set and fails
	// unless each copy's ids, digest and payload are the given ones.
	ReadBack(ctx context.Context, ledgerID int64, md []byte, entries [][]byte) error
}

// CtxCheckEvery is how many iterated keys pass between context checks of a scan.
const CtxCheckEvery = 64
