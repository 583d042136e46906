package datadir

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/badgerdir"
)

// Files an import leaves beside the databases of the data dir it creates: where
// the copy came from, and each node's version in the source store.
const (
	ImportRecordFile = "import.json"
	ImportNodesFile  = "import-nodes.jsonl"
)

// ImportRecord says where a data dir made by Import came from.
type ImportRecord struct {
	CreatedAt time.Time          `json:"created_at"`
	Prefix    string             `json:"prefix,omitempty"`
	Sources   []store.SourceInfo `json:"sources"` // metadata store, then ledger store
	Nodes     int64              `json:"nodes"`
	NodeBytes int64              `json:"node_bytes"`
	Ledgers   int64              `json:"ledgers"`
	Entries   int64              `json:"entries"`
	// LedgersCopied is false when the entries were not asked for (metadata only).
	LedgersCopied bool `json:"ledgers_copied"`
}

// ImportedNode is one line of ImportNodesFile.
type ImportedNode struct {
	Path          string `json:"path"`
	SourceVersion uint64 `json:"source_version"` // store version (native version + 1 on ZooKeeper)
	Size          int    `json:"size"`
}

// ImportOptions tune Import.
type ImportOptions struct {
	Prefix      string // copy only nodes whose path starts with it ("" all)
	CopyLedgers bool   // copy every entry of src's ledger store too
	// Progress, when set, is called now and then with the nodes and entries copied so far.
	Progress func(nodes, entries int64)
}

// Import copies src's metadata (and, with CopyLedgers, its entries) into a new
// data dir at out: the forensic working copy. It writes ImportRecordFile and
// ImportNodesFile beside the databases. out must not hold a data dir yet. The
// copy goes through a sorting Loader (runs in out, tables written once each), as
// fixtures generate does: Badger's write path would hold more memory the larger
// the source.
func Import(ctx context.Context, src *DataDir, out string, opts ImportOptions) (*ImportRecord, error) {
	l, err := badgerdir.CreateLoader(out, badgerdir.LoaderOptions{})
	if err != nil {
		return nil, err
	}
	rec := &ImportRecord{CreatedAt: time.Now().UTC(), Prefix: opts.Prefix, Sources: src.Sources, LedgersCopied: opts.CopyLedgers}
	err = importInto(ctx, src, l, out, rec, opts)
	if err == nil {
		err = l.Commit(ctx, nil)
	}
	if cerr := l.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("import into %s: %w", out, err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(out, ImportRecordFile), append(b, '\n'), 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("import into %s: write %s: %w", out, ImportRecordFile, err)
	}
	return rec, nil
}

func importInto(ctx context.Context, src *DataDir, l *badgerdir.Loader, out string, rec *ImportRecord, opts ImportOptions) error {
	f, err := os.Create(filepath.Join(out, ImportNodesFile))
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	progress := func() {
		if opts.Progress != nil {
			opts.Progress(rec.Nodes, rec.Entries)
		}
	}
	err = src.Metadata.Walk(ctx, opts.Prefix, func(n store.Node) error {
		if err := l.PutNode(n.Path, n.Value); err != nil {
			return err
		}
		rec.Nodes++
		rec.NodeBytes += int64(len(n.Value))
		if rec.Nodes%10000 == 0 {
			progress()
		}
		return enc.Encode(ImportedNode{Path: n.Path, SourceVersion: n.Version, Size: len(n.Value)})
	})
	if err != nil {
		return fmt.Errorf("copy metadata from %s: %w", src.Sources[0].URL, err)
	}
	if opts.CopyLedgers {
		err = src.Ledgers.LedgerIDs(ctx, func(ledgerID, _ int64) error {
			rec.Ledgers++
			return src.Ledgers.Entries(ctx, ledgerID, 0, -1, func(entryID int64, value []byte) error {
				rec.Entries++
				if rec.Entries%100000 == 0 {
					progress()
				}
				return l.PutEntry(ledgerID, entryID, value)
			})
		})
		if err != nil {
			return fmt.Errorf("copy ledgers from %s: %w", src.Sources[len(src.Sources)-1].URL, err)
		}
	}
	progress()
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// LoadOptions tune LoadNodes.
type LoadOptions struct {
	Prefix string
	Skip   string // a subtree not loaded: this node and every node below it ("" none)
	Batch  int    // nodes per compare-and-set batch (0: 64)
}

// LoadNodes creates every node of src (under Prefix) in dst, which must not hold
// any of them: each batch is one compare-and-set that expects every node absent,
// so nothing already in dst is overwritten. It returns the nodes created. It puts
// a generated cluster into a live store for drills and tests.
//
// A node never shares a batch with its ancestor: a live store creates missing
// parents itself, which would collide with the ancestor's own create. So each
// node goes in the first batch with room after every batch that holds one of
// its ancestors, and batches are written in order: a managed ledger's cursors
// wait in later batches while its siblings fill this one (cutting the batch at
// each of them made batches of 6 nodes on average).
func LoadNodes(ctx context.Context, src store.MetadataStore, dst store.NodeBatcher, opts LoadOptions) (int64, error) {
	size := opts.Batch
	if size <= 0 {
		size = 64
	}
	l := &levelLoader{dst: dst, size: size, level: map[string]int64{}}
	err := src.Walk(ctx, opts.Prefix, func(n store.Node) error {
		if opts.Skip != "" && (n.Path == opts.Skip || strings.HasPrefix(n.Path, opts.Skip+"/")) {
			return nil
		}
		return l.add(store.NodeWrite{Path: n.Path, Value: append([]byte{}, n.Value...), Expect: 0})
	})
	for err == nil && len(l.batches) > 0 {
		err = l.writeFirst()
	}
	return l.created, err
}

// loadPending is how many batches LoadNodes holds before it writes the first,
// full or not: what it holds stays bounded under a node with many children.
const loadPending = 8

// levelLoader holds the batches LoadNodes has not written yet: batches[i] is
// batch number base+i, and level maps each node in them to its batch number.
type levelLoader struct {
	dst     store.NodeBatcher
	size    int
	base    int64
	batches [][]store.NodeWrite
	level   map[string]int64
	created int64
}

// add puts w in the first batch with room after those of its unwritten
// ancestors, then writes batches from the first while it is full or too many
// are held.
func (l *levelLoader) add(w store.NodeWrite) error {
	b := l.base
	for p := w.Path; ; {
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			break
		}
		p = p[:i]
		if n, ok := l.level[p]; ok && n >= b {
			b = n + 1
		}
	}
	for ; b < l.base+int64(len(l.batches)) && len(l.batches[b-l.base]) >= l.size; b++ {
	}
	if b == l.base+int64(len(l.batches)) { // b is at most one past the last batch
		l.batches = append(l.batches, make([]store.NodeWrite, 0, l.size))
	}
	l.batches[b-l.base] = append(l.batches[b-l.base], w)
	l.level[w.Path] = b
	for len(l.batches) > 0 && (len(l.batches[0]) >= l.size || len(l.batches) > loadPending) {
		if err := l.writeFirst(); err != nil {
			return err
		}
	}
	return nil
}

// writeFirst writes the first batch held.
func (l *levelLoader) writeFirst() error {
	batch := l.batches[0]
	if _, err := compareAndSetSplitting(l.dst, batch); err != nil {
		return err
	}
	l.created += int64(len(batch))
	for _, w := range batch {
		delete(l.level, w.Path)
	}
	l.batches[0], l.batches = nil, l.batches[1:]
	l.base++
	return nil
}

// compareAndSetSplitting writes a batch, halving it while the store says it is too big.
func compareAndSetSplitting(dst store.NodeBatcher, batch []store.NodeWrite) ([]uint64, error) {
	v, err := dst.CompareAndSetNodes(batch)
	if !errors.Is(err, store.ErrBatchTooBig) || len(batch) == 1 {
		return v, err
	}
	half := len(batch) / 2
	a, err := compareAndSetSplitting(dst, batch[:half])
	if err != nil {
		return nil, err
	}
	b, err := compareAndSetSplitting(dst, batch[half:])
	return append(a, b...), err
}
