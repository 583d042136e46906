package app

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestBKLiveCommands runs check, inspect entries and import with --ledgers bk:
// against real bookies, on ledgers the Java client wrote, one of them held open
// by its writer, which must still add entries afterwards (nothing fenced it).
func TestBKLiveCommands(t *testing.T) {
	c := testutil.StartBookKeeper(t, testutil.BKOptions{Bookies: 2})
	var entries [][]byte
	for i := range 3 {
		e, err := formats.BuildEntry(nil, true, &pulsarpb.MessageMetadata{ProducerName: proto.String("p"),
			SequenceId: proto.Uint64(uint64(i)), PublishTime: proto.Uint64(1700000000000 + uint64(i))}, []byte(fmt.Sprint("m", i)))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	closed := c.WriteLedger(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2, Digest: "CRC32"}, entries)
	held := c.HoldWriter(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}, entries[:2])
	if _, err := held.Add(entries[2]); err != nil {
		t.Fatal(err)
	}
	live := []string{"--metadata", "zk://" + c.ZK.Addr, "--ledgers", "bk:"}
	// check refuses a store without Pulsar's metadata at its root (exit 2).
	mu, _ := store.ParseMetadataURL("zk://" + c.ZK.Addr)
	ms, err := datadir.OpenMetadata(mu, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	if _, err := ms.CompareAndSet("/admin", 0, nil); err != nil {
		t.Fatal(err)
	}

	out, stderr, code := runApp(t, append(live, "inspect", "entries", "--ledger", fmt.Sprint(closed.LedgerID), "-o", "json")...)
	if code != 0 || strings.Count(out, `"producer": "p"`) != 3 {
		t.Fatalf("inspect entries: exit %d, %s\n%s", code, stderr, out)
	}
	// The open ledger: up to its last add confirmed (entry 2 carries LAC 1).
	out, stderr, code = runApp(t, append(live, "inspect", "entries", "--ledger", fmt.Sprint(held.LedgerID), "-o", "json")...)
	if code != 0 || strings.Count(out, `"producer": "p"`) != 2 {
		t.Fatalf("inspect entries of the open ledger: exit %d, %s\n%s", code, stderr, out)
	}
	out, stderr, code = runApp(t, append(live, "check", "-o", "json")...)
	if code == 2 || code == 3 || !regexp.MustCompile(`"item": "entries",\s*"count": 5\b`).MatchString(out) {
		t.Fatalf("check: exit %d (want 0 or 1 with 5 entries scanned), %s\n%s", code, stderr, out)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	if _, stderr, code = runApp(t, append(live, "import", "--out", dir, "--copy-ledgers")...); code != 0 {
		t.Fatalf("import: exit %d, %s", code, stderr)
	}
	dd, err := datadir.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dd.Close()
	for _, l := range []struct {
		id   int64
		want [][]byte
	}{{closed.LedgerID, entries}, {held.LedgerID, entries[:2]}} {
		var got [][]byte
		if err := dd.Ledgers.Entries(context.Background(), l.id, 0, -1, func(_ int64, v []byte) error {
			got = append(got, bytes.Clone(v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(l.want) {
			t.Fatalf("imported ledger %d: %d entries, want %d", l.id, len(got), len(l.want))
		}
		for i := range got {
			if !bytes.Equal(got[i], l.want[i]) {
				t.Fatalf("imported ledger %d entry %d differs", l.id, i)
			}
		}
	}
	if _, err := held.Add(entries[0]); err != nil {
		t.Fatalf("the held writer cannot add after check, inspect and import (fenced?): %v", err)
	}
	// The held ledger is OPEN and referenced by nothing: check warns.
	if out, _, _ = runApp(t, append(live, "check", "-o", "json")...); !regexp.MustCompile(`"kind": "ledger-open",\s*"severity": "warning",\s*"location": "ledger ` + fmt.Sprint(held.LedgerID) + `"`).MatchString(out) {
		t.Fatalf("check: no ledger-open warning for the held ledger %d:\n%s", held.LedgerID, out)
	}
	held.Close()

	// A bit flipped in the copy of the second bookie of entry 0's write set: check
	// names it (replica-corrupt), inspect entries serves the good copy.
	good := []byte("one copy of this entry gets a flipped bit, 0123456789")
	w := c.WriteLedger(testutil.BKWriteArg{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}, [][]byte{good})
	c.Bookie(w.Ensemble[1]).FlipInEntryLog(good)
	out, stderr, code = runApp(t, append(live, "check", "-o", "json")...)
	if code != 1 || !regexp.MustCompile(`"kind": "replica-corrupt",\s*"severity": "warning",\s*"location": "ledger `+fmt.Sprint(w.LedgerID)+` entry 0",\s*"message": "bookie `+regexp.QuoteMeta(w.Ensemble[1])).MatchString(out) {
		t.Fatalf("check after a flipped bit: exit %d, %s\n%s", code, stderr, out)
	}
	out, stderr, code = runApp(t, append(live, "inspect", "entries", "--ledger", fmt.Sprint(w.LedgerID), "--hex", "-o", "json")...)
	if code != 0 || !strings.Contains(out, `"hex": "`+hex.EncodeToString(good)+`"`) {
		t.Fatalf("inspect entries after a flipped bit: exit %d, %s\n%s", code, stderr, out)
	}
	// Bad usage and a wrong ledgers root: exit codes 2 and 3.
	if _, stderr, code = runApp(t, "--metadata", "zk://"+c.ZK.Addr, "--ledgers", "bk:foo", "check"); code != 2 {
		t.Fatalf("bk:foo: exit %d, %s", code, stderr)
	}
	if _, stderr, code = runApp(t, append(live, "--bk-root", "/nope", "check")...); code != 3 || !strings.Contains(stderr, "/nope/LAYOUT") {
		t.Fatalf("--bk-root /nope: exit %d, %s", code, stderr)
	}
}
