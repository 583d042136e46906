package inspect

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/store"
)

// truncateVlogs cuts cut bytes off the end of every value-log file under dir/sub
// that is bigger than cut: the big values stored there lose their tails, as when
// a disk fills or a copy is interrupted.
func truncateVlogs(t *testing.T, dir, sub string, cut int64) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, sub, "*.vlog"))
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 2*cut {
			if err := os.Truncate(f, st.Size()-cut); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCheckTruncatedValues damages the value log under a node in the middle of
// the metadata and an entry in the middle of a ledger: both are reported where
// they are, and everything after them is still checked.
func TestCheckTruncatedValues(t *testing.T) {
	dir := buildTestDir(t)
	big := bytes.Repeat([]byte("x"), 2<<20)
	edit(t, dir, func(b *testBuilder) {
		b.node(formats.LedgerPath(10), big)
		b.node(formats.LedgerPath(70), ledgerMeta(t, 2, 100, true))
		b.entry(70, 0, []byte("small"))
		b.entry(70, 1, big)
		b.entry(70, 2, []byte("small"))
	})
	truncateVlogs(t, dir, store.MetadataDirName, 1<<20)
	truncateVlogs(t, dir, store.LedgersDirName, 1<<20)
	dd := openRO(t, dir)
	fs, stats, err := Check(context.Background(), dd, CheckOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := got(fs)
	w := []want{{KindValueTruncated, "node " + formats.LedgerPath(10)}, {KindValueTruncated, "ledger 70 entry 1"}}
	if !slices.Equal(g, w) {
		t.Fatalf("got %v, want %v; all %+v", g, w, fs)
	}
	if stats.Entries != 21+3 {
		t.Errorf("entries read %d, want 24: the scan must go on after the damaged entry", stats.Entries)
	}
	if stats.ManagedLedgers != 3 || stats.SchemaLocators != 2 {
		t.Errorf("stats %+v: the walk must go on after the damaged node", stats)
	}

	rows, more, err := Entries(context.Background(), dd, EntriesOptions{Ledger: 70, To: -1})
	if err != nil || more || len(rows.Rows) != 3 {
		t.Fatalf("entries view: %v, more %v, rows %v", err, more, rows)
	}
	if msg := rows.Rows[1][len(rows.Rows[1])-1].(string); !strings.Contains(msg, "truncated") {
		t.Errorf("entry 1 row error %q", msg)
	}
}
