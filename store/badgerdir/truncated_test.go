package badgerdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
)

const (
	damagedKeys      = 100
	damagedLedger    = 5
	damagedValueSize = 1000
)

func damagedPath(i int) string { return fmt.Sprintf("/n/%03d", i) }

// damagedDataDir returns a read-only data dir of damagedKeys nodes and entries
// (ledger damagedLedger) whose value logs were cut in half. The values were
// written even keys first, so the cut loses odd keys: bad values sit between
// good ones in key order.
func damagedDataDir(t *testing.T) *Dir {
	t.Helper()
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	var order []int
	for i := 0; i < damagedKeys; i += 2 {
		order = append(order, i)
	}
	for i := 1; i < damagedKeys; i += 2 {
		order = append(order, i)
	}
	for _, name := range []string{MetadataDirName, LedgersDirName} {
		opts := badgerOptions(filepath.Join(dir, name), false).WithValueThreshold(64).WithSyncWrites(false)
		db, err := badger.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		// One transaction per key, so the value log holds the values in write order.
		for _, i := range order {
			k := []byte(damagedPath(i))
			if name == LedgersDirName {
				k = EntryKey(damagedLedger, int64(i))
			}
			err := db.Update(func(txn *badger.Txn) error {
				return txn.Set(k, bytes.Repeat([]byte{byte(i)}, damagedValueSize))
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		truncateLargestVlog(t, filepath.Join(dir, name))
	}
	return mustOpen(t, dir, store.Options{ReadOnly: true})
}

// lostKeys asks the point reads which keys are lost, checking each error's fields.
func lostKeys(t *testing.T, d *Dir) (nodes []string, entries []int64) {
	t.Helper()
	for i := range damagedKeys {
		path := damagedPath(i)
		n, err := d.Metadata.Get(path)
		if err == nil {
			if !bytes.Equal(n.Value, bytes.Repeat([]byte{byte(i)}, damagedValueSize)) {
				t.Fatalf("Get(%s): %d bytes served as good", path, len(n.Value))
			}
			continue
		}
		checkTruncated(t, "Get", err, path, -1, -1)
		nodes = append(nodes, path)
	}
	for i := range int64(damagedKeys) {
		v, err := d.Ledgers.Entry(damagedLedger, i)
		if err == nil {
			if len(v) != damagedValueSize {
				t.Fatalf("Entry(%d): %d bytes served as good", i, len(v))
			}
			continue
		}
		checkTruncated(t, "Entry", err, "", damagedLedger, i)
		entries = append(entries, i)
	}
	keys := make([][2]int64, damagedKeys)
	for i := range keys {
		keys[i] = [2]int64{damagedLedger, int64(i)}
	}
	storetest.CheckEntryReader(t, d.Ledgers, keys)
	// The cut must leave good keys after bad ones, or resuming is not tested.
	if len(nodes) < 10 || len(entries) < 10 || nodes[0] > damagedPath(damagedKeys-10) || entries[0] > damagedKeys-10 {
		t.Fatalf("lost nodes %v, entries %v: want bad keys between good ones", nodes, entries)
	}
	return nodes, entries
}

// checkTruncated asserts err is a *TruncatedError for the node path (or, when path
// is "", the entry) with plausible sizes, whose text names the key and the sizes.
func checkTruncated(t *testing.T, what string, err error, path string, ledgerID, entryID int64) *store.TruncatedError {
	t.Helper()
	var te *store.TruncatedError
	if !errors.As(err, &te) || !errors.Is(err, store.ErrTruncatedValue) {
		t.Fatalf("%s: err = %v, want a *TruncatedError", what, err)
	}
	if te.Path != path || te.LedgerID != ledgerID || te.EntryID != entryID {
		t.Errorf("%s: truncated key %q ledger %d entry %d, want %q ledger %d entry %d",
			what, te.Path, te.LedgerID, te.EntryID, path, ledgerID, entryID)
	}
	if te.Read >= te.Size || te.Size < damagedValueSize-valueSizeSlack || te.Size > damagedValueSize+valueSizeSlack {
		t.Errorf("%s: read %d of %d bytes, want less than about %d", what, te.Read, te.Size, damagedValueSize)
	}
	key := fmt.Sprintf("ledger %d entry %d", ledgerID, entryID)
	if path != "" {
		key = fmt.Sprintf("%q", path)
	}
	sizes := fmt.Sprintf("read %d of about %d bytes", te.Read, te.Size)
	if msg := err.Error(); !strings.Contains(msg, key) || !strings.Contains(msg, sizes) || strings.Count(msg, key) != 1 {
		t.Errorf("%s: error %q should name %s once and say %q", what, msg, key, sizes)
	}
	return te
}

// TestTruncatedErrors: every read of a truncated value returns a *TruncatedError
// naming its key, and the scans stop at the first one.
func TestTruncatedErrors(t *testing.T) {
	d := damagedDataDir(t)
	ctx := context.Background()
	nodes, entries := lostKeys(t, d)

	_, err := d.Metadata.(store.NodeBatcher).GetNodes([]string{damagedPath(0), nodes[1], nodes[0]})
	checkTruncated(t, "GetNodes", err, nodes[1], -1, -1)

	var walked []string
	err = d.Metadata.Walk(ctx, "/n/", func(n store.Node) error {
		walked = append(walked, n.Path)
		return nil
	})
	checkTruncated(t, "Walk", err, nodes[0], -1, -1)
	if len(walked) == 0 || walked[len(walked)-1] >= nodes[0] {
		t.Errorf("Walk visited %v before stopping at %s", walked, nodes[0])
	}

	var read []int64
	err = d.Ledgers.Entries(ctx, damagedLedger, 0, -1, func(e int64, _ []byte) error {
		read = append(read, e)
		return nil
	})
	checkTruncated(t, "Entries", err, "", damagedLedger, entries[0])
	if !slices.Equal(read, seq(0, entries[0]-1)) {
		t.Errorf("Entries read %v before stopping at %d", read, entries[0])
	}

	err = d.RawLedgerIteration(ctx, func(k, v []byte) error { return nil })
	checkTruncated(t, "RawLedgerIteration", err, "", damagedLedger, entries[0])
}

// TestResumeAfterTruncated: WalkFrom and Entries from the next id resume past a
// truncated value, and RawLedgerIterationSkipping goes on by itself: every good
// key is read once, in order, and every lost key is reported once.
func TestResumeAfterTruncated(t *testing.T) {
	d := damagedDataDir(t)
	ctx := context.Background()
	lostNodes, lostEntries := lostKeys(t, d)

	var good, bad []string
	for start := ""; ; {
		err := d.Metadata.WalkFrom(ctx, "/n/", start, func(n store.Node) error {
			good = append(good, n.Path)
			return nil
		})
		if err == nil {
			break
		}
		te := checkTruncated(t, "WalkFrom", err, lostNodes[min(len(bad), len(lostNodes)-1)], -1, -1)
		bad = append(bad, te.Path)
		start = te.Path + "\x00"
	}
	var all []string
	for i := range damagedKeys {
		if p := damagedPath(i); !slices.Contains(lostNodes, p) {
			all = append(all, p)
		}
	}
	if !slices.Equal(good, all) || !slices.Equal(bad, lostNodes) {
		t.Errorf("walk resumed: good %v, bad %v; want good %v, bad %v", good, bad, all, lostNodes)
	}

	var goodIDs, badIDs []int64
	for from := int64(0); ; {
		err := d.Ledgers.Entries(ctx, damagedLedger, from, -1, func(e int64, v []byte) error {
			goodIDs = append(goodIDs, e)
			return nil
		})
		if err == nil {
			break
		}
		te := checkTruncated(t, "Entries", err, "", damagedLedger, lostEntries[min(len(badIDs), len(lostEntries)-1)])
		badIDs = append(badIDs, te.EntryID)
		from = te.EntryID + 1
	}
	wantGood := slices.DeleteFunc(seq(0, damagedKeys-1), func(e int64) bool { return slices.Contains(lostEntries, e) })
	if !slices.Equal(goodIDs, wantGood) || !slices.Equal(badIDs, lostEntries) {
		t.Errorf("entries resumed: good %v, bad %v; want good %v, bad %v", goodIDs, badIDs, wantGood, lostEntries)
	}

	goodIDs, badIDs = nil, nil
	err := d.RawLedgerIterationSkipping(ctx, func(k, v []byte) error {
		_, e, err := ParseEntryKey(k)
		if len(v) != damagedValueSize || v[0] != byte(e) {
			t.Errorf("entry %d: %d bytes served as good", e, len(v))
		}
		goodIDs = append(goodIDs, e)
		return err
	}, func(te *store.TruncatedError) error {
		checkTruncated(t, "RawLedgerIterationSkipping", te, "", damagedLedger, te.EntryID)
		badIDs = append(badIDs, te.EntryID)
		return nil
	})
	if err != nil || !slices.Equal(goodIDs, wantGood) || !slices.Equal(badIDs, lostEntries) {
		t.Errorf("raw iteration: good %v, bad %v, err %v; want good %v, bad %v", goodIDs, badIDs, err, wantGood, lostEntries)
	}

	// skipped's error stops the iteration with it.
	stop := errors.New("stop")
	n := 0
	err = d.RawLedgerIterationSkipping(ctx, func(k, v []byte) error { n++; return nil },
		func(*store.TruncatedError) error { return stop })
	if !errors.Is(err, stop) || int64(n) != lostEntries[0] {
		t.Errorf("raw iteration with failing skipped: err %v after %d entries; want stop after %d", err, n, lostEntries[0])
	}
}

func TestWalkFrom(t *testing.T) {
	nodes := map[string]string{"/a": "1", "/a/b": "2", "/a/c/d": "3", "/ab": "4", "/b": "5"}
	d := mustOpen(t, filledDataDir(t, nodes, nil), store.Options{ReadOnly: true})
	cases := []struct {
		prefix, start string
		want          []string
	}{
		{"", "", []string{"/a", "/a/b", "/a/c/d", "/ab", "/b"}},
		{"", "/a/b", []string{"/a/b", "/a/c/d", "/ab", "/b"}},
		{"", "/a/b\x00", []string{"/a/c/d", "/ab", "/b"}},
		{"/a/", "", []string{"/a/b", "/a/c/d"}},
		{"/a/", "/", []string{"/a/b", "/a/c/d"}}, // start before the prefix
		{"/a/", "/a/c", []string{"/a/c/d"}},
		{"/a/", "/ab", nil}, // start past the prefix
		{"/a", "/a\x00", []string{"/a/b", "/a/c/d", "/ab"}},
		{"/z", "", nil},
	}
	for _, c := range cases {
		var got []string
		err := d.Metadata.WalkFrom(context.Background(), c.prefix, c.start, func(n store.Node) error {
			if nodes[n.Path] != string(n.Value) {
				t.Errorf("node %q: value %q", n.Path, n.Value)
			}
			got = append(got, n.Path)
			return nil
		})
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("WalkFrom(%q, %q) = %q, %v; want %q", c.prefix, c.start, got, err, c.want)
		}
	}
}

func TestTruncatedErrorText(t *testing.T) {
	cases := []struct {
		err  *store.TruncatedError
		want string
	}{
		{&store.TruncatedError{Path: "/ledgers/00/0000/L0007", LedgerID: -1, EntryID: -1, Read: 0, Size: 2097150},
			`metadata node "/ledgers/00/0000/L0007": value truncated (value log damaged): data lost (read 0 of about 2097150 bytes)`},
		{&store.TruncatedError{LedgerID: 70, EntryID: 1, Read: 12, Size: 1000},
			`ledger 70 entry 1: value truncated (value log damaged): data lost (read 12 of about 1000 bytes)`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		wrapped := fmt.Errorf("scan: %w", c.err)
		var te *store.TruncatedError
		if !errors.Is(wrapped, store.ErrTruncatedValue) || !errors.As(wrapped, &te) || te != c.err {
			t.Errorf("%v: errors.Is/As through a wrap failed", c.err)
		}
	}
}
