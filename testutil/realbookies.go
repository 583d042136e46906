package testutil

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/bkdisk"
)

// Bookie dirs a real BookKeeper 4.17.4 wrote, with the ZooKeeper dataDir that held
// their ledger metadata and the Java client's record of what it wrote:
// testdata/bookkeeper/<scenario>/ (regenerate.sh there rebuilds them).

// RealBookieEntry is one entry the Java client wrote.
type RealBookieEntry struct {
	EntryID    int64  `json:"entry_id"`
	PayloadHex string `json:"payload_hex"`
}

// Payload is the entry's bytes.
func (e RealBookieEntry) Payload(t testing.TB) []byte {
	b, err := hex.DecodeString(e.PayloadHex)
	if err != nil {
		t.Fatalf("manifest entry %d: %v", e.EntryID, err)
	}
	return b
}

// RealBookieLedger is one ledger of a scenario, as the Java client wrote and read it.
type RealBookieLedger struct {
	LedgerID   int64             `json:"ledger_id"`
	DigestType string            `json:"digest_type"` // bk tool's names: CRC32, CRC32C, MAC, DUMMY
	Password   string            `json:"password"`
	State      string            `json:"state"`    // OPEN, CLOSED
	Ensemble   []int             `json:"ensemble"` // ensemble, write quorum, ack quorum
	Written    []RealBookieEntry `json:"written"`
	// ReadNoRecovery is what `bk tool read --no-recovery` returned (up to the LAC).
	ReadNoRecovery   []RealBookieEntry `json:"read_no_recovery"`
	LastAddConfirmed int64             `json:"last_add_confirmed"`
}

// RealBookieScenario is a scenario copied into a temp dir.
type RealBookieScenario struct {
	Name         string                      `json:"scenario"`
	Bookies      map[string]RealBookieRecord `json:"bookies"`
	JournalSizes map[string]int64            `json:"journal_sizes"`
	Ledgers      []RealBookieLedger          `json:"ledgers"`
	// Dir is the copy: Dir/b1..bN (bookie dirs), Dir/zk (a ZooKeeper dataDir).
	Dir string `json:"-"`
}

// RealBookieRecord is how a bookie of a scenario ran.
type RealBookieRecord struct {
	BookieID string `json:"bookie_id"`
	Storage  string `json:"storage"` // sorted, interleaved
	Stopped  string `json:"stopped"` // SIGTERM, SIGKILL
	// Settings are the bookie.conf keys given to bk bookie --set (k=v).
	Settings []string `json:"settings"`
}

// RealBookiesRoot is testdata/bookkeeper in this repository.
func RealBookiesRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "bookkeeper")
}

// RealBookieScenarios lists the scenarios in testdata/bookkeeper.
func RealBookieScenarios(t testing.TB) []string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(RealBookiesRoot(), "*", "manifest.json"))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no testdata/bookkeeper/*/manifest.json (%v)", err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, filepath.Base(filepath.Dir(m)))
	}
	slices.Sort(out)
	return out
}

// CopyRealBookies copies a scenario into a temp dir and extends each journal back to
// the size the bookie preallocated (the committed copies have their zero tails cut),
// so the readers see what a copy of a real bookie holds. The scenario's files are
// never touched in place.
func CopyRealBookies(t testing.TB, name string) *RealBookieScenario {
	t.Helper()
	src := filepath.Join(RealBookiesRoot(), name)
	raw, err := os.ReadFile(filepath.Join(src, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s RealBookieScenario
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s/manifest.json: %v", name, err)
	}
	s.Dir = filepath.Join(t.TempDir(), name)
	CopyDir(t, src, s.Dir)
	for rel, size := range s.JournalSizes {
		if err := os.Truncate(filepath.Join(s.Dir, rel), size); err != nil {
			t.Fatal(err)
		}
	}
	return &s
}

// BookieDirs are the copy's bookie dirs, b1 first.
func (s *RealBookieScenario) BookieDirs() []string {
	var out []string
	for b := range s.Bookies {
		out = append(out, filepath.Join(s.Dir, b))
	}
	slices.Sort(out)
	return out
}

// ZKDataDir is the copy's ZooKeeper dataDir (holding version-2/).
func (s *RealBookieScenario) ZKDataDir() string { return filepath.Join(s.Dir, "zk") }

// FlipLastPayloadByte flips the last byte of ledger:entry in the entry logs of one
// bookie dir (the replica's digest then fails) and reports whether the dir held it.
func FlipLastPayloadByte(t testing.TB, bookieDir string, ledger, entry int64) bool {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(bookieDir, "ledgers", "current", "*.log"))
	for _, p := range logs {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		var at int64 = -1
		_, err = bkdisk.ScanEntryLog(p, f, st.Size(), func(e bkdisk.LogEntry) error {
			if e.LedgerID == ledger && e.EntryID == entry {
				at = e.Offset + int64(len(e.Data)) - 1
			}
			return nil
		})
		if err == nil && at >= 0 {
			b := []byte{0}
			if _, err = f.ReadAt(b, at); err == nil {
				b[0] ^= 0x40
				_, err = f.WriteAt(b, at)
			}
		}
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if at >= 0 {
			return true
		}
	}
	return false
}
