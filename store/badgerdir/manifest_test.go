package badgerdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

func TestDamageCovers(t *testing.T) {
	d := Damage{DB: LedgersDirName, RangeKnown: true, Smallest: EntryKey(13, 5), Biggest: EntryKey(17, 0)}
	for id, want := range map[int64]bool{12: false, 13: true, 15: true, 17: true, 18: false} {
		if got := d.CoversLedger(id, ""); got != want {
			t.Errorf("ledger %d: covered %v, want %v", id, got, want)
		}
	}
	if got := d.KeyRange(); got != "ledger 13 entry 5 .. ledger 17 entry 0" {
		t.Errorf("KeyRange() = %q", got)
	}
	m := Damage{DB: MetadataDirName, RangeKnown: true, Smallest: []byte("/ledgers/00/0000/L0010"), Biggest: []byte("/ledgers/00/0000/L0020")}
	if !m.CoversLedger(12, "/ledgers/00/0000/L0012") || m.CoversLedger(30, "/ledgers/00/0000/L0030") {
		t.Error("metadata damage covers the wrong ledger nodes")
	}
	if !(Damage{DB: MetadataDirName}).Covers([]byte("/anything")) {
		t.Error("damage of unknown range must cover every key")
	}
}

// A table a kill interrupted while a flush or compaction wrote it (newer than every
// table the MANIFEST lists, not listed, unreadable: here all zeros, as a killed
// writer leaves its preallocated file) is a kill leftover, not damage: read-only
// opens note it and read everything, and a writable open goes ahead.
func TestInterruptedTableIsALeftoverNotDamage(t *testing.T) {
	dir := filledDataDir(t, map[string]string{"/a": "1", "/b": "2"}, map[int64]int{7: 3})
	leftover := filepath.Join(dir, MetadataDirName, "000099.sst")
	if err := os.WriteFile(leftover, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, dir, store.Options{ReadOnly: true, SandboxDir: t.TempDir()})
	if len(ro.Damage) != 0 {
		t.Fatalf("an interrupted flush's table reported as damage: %v", ro.Damage)
	}
	noted := false
	for _, n := range ro.Notes {
		noted = noted || strings.Contains(n, "000099.sst") && strings.Contains(n, "unclean shutdown")
	}
	if !noted {
		t.Fatalf("no unclean-shutdown note names the leftover table: %q", ro.Notes)
	}
	if n, err := ro.Metadata.Get("/b"); err != nil || string(n.Value) != "2" {
		t.Fatalf("read past the leftover: %q, %v", n.Value, err)
	}
	ro.Close()
	rw := mustOpen(t, dir, store.Options{})
	if n, err := rw.Metadata.Get("/a"); err != nil || string(n.Value) != "1" {
		t.Fatalf("writable open after the leftover: %q, %v", n.Value, err)
	}
}
