package bookie

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/bkdisk"
	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/store/storetest"
)

// handBookie writes one bookie dir from hand-built bytes: entry logs and one journal.
func handBookie(t *testing.T, logs map[string][]byte, journal []byte) string {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"ledgers/current", "journal/current"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range logs {
		if err := os.WriteFile(filepath.Join(dir, "ledgers/current", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if journal != nil {
		if err := os.WriteFile(filepath.Join(dir, "journal/current", "a.txn"), journal, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type memWA struct{ b []byte }

func (m *memWA) Write(p []byte) (int, error)              { m.b = append(m.b, p...); return len(p), nil }
func (m *memWA) WriteAt(p []byte, off int64) (int, error) { return copy(m.b[off:], p), nil }

func logOf(t *testing.T, frames ...[]byte) []byte {
	t.Helper()
	m := &memWA{}
	w, err := bkdisk.NewEntryLogWriter(m, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if _, err := w.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return m.b
}

func mustFrame(t *testing.T, dt bkdisk.DigestType, pw []byte, l, e int64, payload string) []byte {
	t.Helper()
	b, err := bkdisk.BuildFrame(dt, pw, l, e, e-1, int64(len(payload)), []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openHand(t *testing.T, dirs ...string) *Store {
	t.Helper()
	t.Setenv(store.CacheDirEnv, t.TempDir())
	lb, err := Open(store.URL{Scheme: store.SchemeBookie, Paths: dirs}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Close() })
	return lb
}

// TestBookieDigestTypes: every digest type is served by its payload, with metadata
// (HMAC with a password, DUMMY) and without it (detected).
func TestBookieDigestTypes(t *testing.T) {
	pw := []byte("pulsar")
	dir := handBookie(t, map[string][]byte{"0.log": logOf(t,
		mustFrame(t, bkdisk.DigestCRC32C, nil, 1, 0, "crc32c"),
		mustFrame(t, bkdisk.DigestCRC32, nil, 2, 0, "crc32"),
		mustFrame(t, bkdisk.DigestHMAC, nil, 3, 0, "hmac-empty"),
		mustFrame(t, bkdisk.DigestHMAC, pw, 4, 0, "hmac-pw"),
		mustFrame(t, bkdisk.DigestDummy, nil, 5, 0, "dummy"),
	)}, nil)
	s := openHand(t, dir)
	want := map[int64]string{1: "crc32c", 2: "crc32", 3: "hmac-empty"}
	for l, p := range want {
		if v, err := s.Entry(l, 0); err != nil || string(v) != p {
			t.Errorf("no metadata: ledger %d = %q %v, want %q", l, v, err, p)
		}
	}
	// Without metadata, HMAC with a password and DUMMY verify under no type.
	for _, l := range []int64{4, 5} {
		if _, err := s.Entry(l, 0); !errors.Is(err, store.ErrBadDigest) || !errors.Is(err, store.ErrTruncatedValue) {
			t.Errorf("no metadata: ledger %d: %v, want ErrBadDigest", l, err)
		}
	}
	storetest.CheckEntryReader(t, s, [][2]int64{{4, 0}, {1, 0}, {5, 0}, {2, 0}})
	meta := map[int64]LedgerMeta{
		1: {DigestType: "CRC32C", WriteQuorum: 1}, 2: {DigestType: "CRC32", WriteQuorum: 1},
		3: {DigestType: "HMAC", WriteQuorum: 1}, 4: {DigestType: "HMAC", Password: pw, WriteQuorum: 1},
		5: {DigestType: "DUMMY", WriteQuorum: 2},
	}
	s.SetLedgerMeta(func(l int64) (LedgerMeta, bool) { m, ok := meta[l]; return m, ok })
	want[4], want[5] = "hmac-pw", "dummy"
	for l, p := range want {
		if v, err := s.Entry(l, 0); err != nil || string(v) != p {
			t.Errorf("metadata: ledger %d = %q %v, want %q", l, v, err, p)
		}
	}
	storetest.CheckEntryReader(t, s, [][2]int64{{1, 0}, {4, 0}, {2, 0}, {5, 0}, {3, 0}, {3, 1}, {9, 0}})
	fs, err := s.ReplicaFindings(context.Background())
	if err != nil || len(fs) != 1 || fs[0].Kind != store.FindingUnderReplicated || fs[0].LedgerID != 5 {
		t.Errorf("findings %+v %v, want ledger 5 under-replicated (1 of 2)", fs, err)
	}
	// Metadata naming another type than the bytes carry: the replica is corrupt.
	meta[1] = LedgerMeta{DigestType: "CRC32", WriteQuorum: 1}
	s.SetLedgerMeta(func(l int64) (LedgerMeta, bool) { m, ok := meta[l]; return m, ok })
	fs, _ = s.ReplicaFindings(context.Background())
	if !slices.ContainsFunc(fs, func(f store.ReplicaFinding) bool {
		return f.Kind == store.FindingReplicaCorrupt && f.LedgerID == 1 && f.Offset == bkdisk.EntryLogHeaderSize+4
	}) {
		t.Errorf("findings %+v: want ledger 1 replica-corrupt at offset 1028", fs)
	}
}

// TestBookieReplicasDiffer: two bookies whose copies both verify but differ.
func TestBookieReplicasDiffer(t *testing.T) {
	a := handBookie(t, map[string][]byte{"0.log": logOf(t, mustFrame(t, bkdisk.DigestDummy, nil, 7, 0, "one"))}, nil)
	b := handBookie(t, map[string][]byte{"0.log": logOf(t, mustFrame(t, bkdisk.DigestDummy, nil, 7, 0, "two"))}, nil)
	s := openHand(t, a, b)
	s.SetLedgerMeta(func(int64) (LedgerMeta, bool) {
		return LedgerMeta{DigestType: "DUMMY", WriteQuorum: 2}, true
	})
	fs, err := s.ReplicaFindings(context.Background())
	if err != nil || len(fs) != 1 || fs[0].Kind != store.FindingReplicasDiffer || fs[0].Bookie != b {
		t.Fatalf("findings %+v %v, want replicas-differ on %s", fs, err, b)
	}
}

// TestBookieBadInputs: damaged files become findings naming file and offset; the
// open does not fail and the good entries are still served.
func TestBookieBadInputs(t *testing.T) {
	good := mustFrame(t, bkdisk.DigestCRC32C, nil, 1, 0, "good")
	full := logOf(t, good, mustFrame(t, bkdisk.DigestCRC32C, nil, 1, 1, "lost"))
	truncated := full[:bkdisk.EntryLogHeaderSize+4+len(good)+10]
	foreign := append([]byte("BKLG"), make([]byte, 2000)...)
	pastEnd := logOf(t, good)
	pastEnd = append(pastEnd[:bkdisk.EntryLogHeaderSize], 0x7f, 0, 0, 0)
	version := logOf(t, good)
	version[7] = 3

	j := &memWA{}
	jw, _ := bkdisk.NewJournalWriter(j, 6)
	_, _ = jw.Add(mustFrame(t, bkdisk.DigestCRC32C, nil, 2, 0, "journal"))
	j.b[7] = 9 // unknown version

	dir := handBookie(t, map[string][]byte{"0.log": truncated, "1.log": foreign, "2.log": pastEnd, "3.log": version}, j.b)
	s := openHand(t, dir)
	fs, err := s.ReplicaFindings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind, file string
		off        int64
		text       string
	}{
		// A closed log cut short: its map offset points past the end too.
		{store.FindingEntryLogDamaged, "0.log", 8, "ledgers map offset"},
		{store.FindingEntryLogDamaged, "0.log", int64(bkdisk.EntryLogHeaderSize + 4 + len(good)), "past the end"},
		{store.FindingEntryLogDamaged, "1.log", 0, "journal"},
		{store.FindingEntryLogDamaged, "2.log", 8, "ledgers map offset"},
		{store.FindingEntryLogDamaged, "2.log", bkdisk.EntryLogHeaderSize, "past the end"},
		{store.FindingEntryLogDamaged, "3.log", 4, "version 3"},
		{store.FindingJournalDamaged, "a.txn", 4, "version 9"},
	}
	if len(fs) != len(want) {
		t.Fatalf("findings %+v, want %d", fs, len(want))
	}
	for i, w := range want {
		f := fs[i]
		if f.Kind != w.kind || filepath.Base(f.File) != w.file || f.Offset != w.off || !strings.Contains(f.Detail, w.text) || f.Bookie != dir {
			t.Errorf("finding %d = %+v, want %s in %s at %d (%q)", i, f, w.kind, w.file, w.off, w.text)
		}
	}
	if v, err := s.Entry(1, 0); err != nil || !bytes.Equal(v, []byte("good")) {
		t.Errorf("good entry: %q %v", v, err)
	}
}

func TestOpenBookiesErrors(t *testing.T) {
	t.Setenv(store.CacheDirEnv, t.TempDir())
	empty := t.TempDir()
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{[]string{filepath.Join(empty, "nope")}, "no such file"},
		{[]string{empty}, "neither ledgers/ nor journal/"},
	} {
		if _, err := Open(store.URL{Scheme: store.SchemeBookie, Paths: c.paths}, store.Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.paths, err, c.want)
		}
	}
	// The cache must never be inside a bookie dir.
	dir := handBookie(t, nil, nil)
	t.Setenv(store.CacheDirEnv, filepath.Join(dir, "cache"))
	if _, err := Open(store.URL{Scheme: store.SchemeBookie, Paths: []string{dir}}, store.Options{}); err == nil || !strings.Contains(err.Error(), "never written") {
		t.Errorf("cache inside the bookie dir: %v", err)
	}
}
