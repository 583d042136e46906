package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/store"
)

// countingMetadata is a real metadata store that counts how often each node's
// value is read, by Get or by Walk.
type countingMetadata struct {
	store.MetadataStore
	reads map[string]int
}

func (c *countingMetadata) Get(path string) (store.Node, error) {
	c.reads[path]++
	return c.MetadataStore.Get(path)
}

func (c *countingMetadata) Walk(ctx context.Context, prefix string, fn func(store.Node) error) error {
	return c.MetadataStore.Walk(ctx, prefix, func(n store.Node) error {
		c.reads[n.Path]++
		return fn(n)
	})
}

// countReads returns a copy of dd whose metadata reads are counted.
func countReads(dd *datadir.DataDir) (*datadir.DataDir, *countingMetadata) {
	cm := &countingMetadata{MetadataStore: dd.Metadata, reads: map[string]int{}}
	c := *dd
	c.Metadata = cm
	return &c, cm
}

// TestLedgersViewReadsEachNodeOnce: the ledgers view reads each managed-ledger
// node and each ledger node once, for a plain and for a partitioned topic.
func TestLedgersViewReadsEachNodeOnce(t *testing.T) {
	dd := openRO(t, buildTestDir(t))
	tests := []struct {
		topic string
		nodes []string // every node the view must read, once
	}{
		{"persistent://public/default/orders", []string{ordersPath,
			formats.LedgerPath(10), formats.LedgerPath(11), formats.LedgerPath(12)}},
		{"persistent://acme/ns/events", []string{events0Path, events1Path,
			formats.LedgerPath(20), formats.LedgerPath(21), formats.LedgerPath(30)}},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			cdd, cm := countReads(dd)
			if _, err := Ledgers(context.Background(), cdd, topic(t, tt.topic)); err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.nodes {
				if cm.reads[p] != 1 {
					t.Errorf("%s read %d times, want once", p, cm.reads[p])
				}
			}
		})
	}
}

// TestEntriesViewReadsLedgerNodeOnce: the entries view reads the ledger's node
// once, also to tell an empty ledger (open, node only) from an unknown one.
func TestEntriesViewReadsLedgerNodeOnce(t *testing.T) {
	dd := openRO(t, buildTestDir(t))
	tests := []struct {
		ledger   int64
		notFound bool
	}{
		{10, false}, // entries
		{12, false}, // open last ledger: a node, no entries
		{999, true}, // neither
	}
	for _, tt := range tests {
		cdd, cm := countReads(dd)
		tbl, _, err := Entries(context.Background(), cdd, EntriesOptions{Ledger: tt.ledger, To: -1})
		if got := errors.Is(err, store.ErrNotFound); got != tt.notFound || (err != nil && !got) {
			t.Errorf("ledger %d: error %v, want not-found %v", tt.ledger, err, tt.notFound)
		}
		if err == nil && tt.ledger == 12 && len(tbl.Rows) != 0 {
			t.Errorf("ledger 12: rows %v, want none", tbl.Rows)
		}
		if p := formats.LedgerPath(tt.ledger); cm.reads[p] != 1 {
			t.Errorf("ledger %d: node read %d times, want once", tt.ledger, cm.reads[p])
		}
	}
}

// failingEntries is a real ledger store whose point reads fail as a disk
// would: neither not-found nor a damaged value.
type failingEntries struct {
	store.LedgerStore
	err error
}

func (f failingEntries) Entry(ledgerID, entryID int64) ([]byte, error) {
	return nil, fmt.Errorf("ledger %d entry %d: %w", ledgerID, entryID, f.err)
}

func (f failingEntries) EntryReader() store.EntryReader { return f }

func (f failingEntries) Peek(ledgerID, entryID int64, _ func([]byte) error) error {
	_, err := f.Entry(ledgerID, entryID)
	return err
}

func (failingEntries) Close() {}

// TestSchemaReadErrorIsNotAFinding: an entry that cannot be read for an I/O
// reason fails the views; it is not reported as an undecodable schema (whose
// hint is a repair) nor shown as a topic without an index. Check reads every
// schema entry in its one pass over the ledger store, never by a point read:
// failing point reads change nothing of it.
func TestSchemaReadErrorIsNotAFinding(t *testing.T) {
	dd := openRO(t, buildTestDir(t))
	ioErr := errors.New("input/output error")
	fdd := *dd
	fdd.Ledgers = failingEntries{dd.Ledgers, ioErr}
	ctx := context.Background()
	want, _, err := Check(ctx, dd, CheckOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fs, _, err := Check(ctx, &fdd, CheckOptions{}, nil); err != nil || !slices.Equal(got(fs), got(want)) {
		t.Errorf("check with failing point reads: error %v, findings %v; want %v", err, got(fs), got(want))
	}
	if tbl, err := Schemas(ctx, &fdd, nil); !errors.Is(err, ioErr) {
		t.Errorf("schemas view: error %v, table %v; want the read error", err, tbl)
	}
	// The topics view reads entry 0 of an unindexed topic's ledgers.
	if tbl, err := Topics(ctx, &fdd, ""); !errors.Is(err, ioErr) {
		t.Errorf("topics view: error %v, table %v; want the read error", err, tbl)
	}
}
