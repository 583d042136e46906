package bkdisk

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
)

// memFile is an in-memory file for the writers (Write appends, WriteAt patches).
type memFile struct{ b []byte }

func (m *memFile) Write(p []byte) (int, error) { m.b = append(m.b, p...); return len(p), nil }
func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if int(off)+len(p) > len(m.b) {
		return 0, fmt.Errorf("write at %d past %d", off, len(m.b))
	}
	return copy(m.b[off:], p), nil
}

func frame(t testing.TB, lid, eid int64, payload string) []byte {
	t.Helper()
	b, err := BuildFrame(DigestCRC32C, nil, lid, eid, eid-1, 100*(eid+1), []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildLog writes entries into an entry log, closed (with a ledgers map) or not.
func buildLog(t testing.TB, closed, direct bool, entries ...[]byte) []byte {
	t.Helper()
	m := &memFile{}
	w, err := NewEntryLogWriter(m, direct)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := w.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if closed {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return m.b
}

func buildJournal(t testing.TB, version int32, pad bool, records ...[]byte) []byte {
	t.Helper()
	m := &memFile{}
	w, err := NewJournalWriter(m, version)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if _, err := w.Add(r); err != nil {
			t.Fatal(err)
		}
		if pad {
			if err := w.Pad(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(64); err != nil {
		t.Fatal(err)
	}
	return m.b
}

// TestDigestsMatchJDK: the digests of one frame as the JDK computes them
// (java.util.zip.CRC32C and CRC32, javax.crypto HmacSHA1 with key
// SHA-1("mac" ‖ "secret"), as MacDigestManager does), header (7, 3, 2, 42),
// payload "hello bookie".
func TestDigestsMatchJDK(t *testing.T) {
	for _, c := range []struct {
		t    DigestType
		want string
	}{
		{DigestCRC32C, "08a2b832"},
		{DigestCRC32, "0000000037a2bd28"},
		{DigestHMAC, "f36c1e6f9e40087930a281105c8141a42418fe7e"},
		{DigestDummy, ""},
	} {
		b, err := BuildFrame(c.t, []byte("secret"), 7, 3, 2, 42, []byte("hello bookie"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFrame(b, c.t)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(f.Digest); got != c.want {
			t.Errorf("%s digest %s, want %s", c.t, got, c.want)
		}
		if f.LedgerID != 7 || f.EntryID != 3 || f.LastAddConfirmed != 2 || f.LedgerLength != 42 || string(f.Payload) != "hello bookie" {
			t.Errorf("%s frame %+v", c.t, f)
		}
		if !Verify(b, c.t, []byte("secret")) {
			t.Errorf("%s does not verify", c.t)
		}
		if c.t == DigestHMAC && Verify(b, c.t, []byte("other")) {
			t.Errorf("HMAC verifies with the wrong password")
		}
		if c.t != DigestDummy {
			if got := Detect(b, []byte("secret")); got != c.t {
				t.Errorf("Detect = %q, want %s", got, c.t)
			}
			b[len(b)-1] ^= 1
			if Verify(b, c.t, []byte("secret")) || Detect(b, []byte("secret")) != "" {
				t.Errorf("%s verifies a flipped payload byte", c.t)
			}
		}
	}
}

func TestParseFrameErrors(t *testing.T) {
	for _, c := range []struct {
		n    int
		t    DigestType
		want error
	}{
		{35, DigestCRC32C, ErrTruncated},
		{36, DigestCRC32C, nil},
		{39, DigestCRC32, ErrTruncated},
		{51, DigestHMAC, ErrTruncated},
		{32, DigestDummy, nil},
		{40, "MD5", ErrUnknownDigest},
	} {
		_, err := ParseFrame(make([]byte, c.n), c.t)
		if !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("%d bytes %s: err %v, want %v", c.n, c.t, err, c.want)
		}
	}
}

type logEntry struct {
	off      int64
	lid, eid int64
}

func scanLog(t *testing.T, b []byte) ([]logEntry, EntryLogResult, error) {
	t.Helper()
	var got []logEntry
	res, err := ScanEntryLog("x.log", bytes.NewReader(b), int64(len(b)), func(e LogEntry) error {
		got = append(got, logEntry{e.Offset, e.LedgerID, e.EntryID})
		if !bytes.Equal(e.Data, b[e.Offset:e.Offset+int64(len(e.Data))]) {
			t.Errorf("entry at %d: data is not the file's bytes", e.Offset)
		}
		return nil
	})
	return got, res, err
}

func TestScanEntryLog(t *testing.T) {
	e1, e2, e3 := frame(t, 5, 0, "a"), frame(t, 5, 1, "bb"), frame(t, 9, 0, "ccc")
	closed := buildLog(t, true, false, e1, e2, e3)
	open := buildLog(t, false, false, e1, e2, e3)
	direct := buildLog(t, true, true, e1)
	off2 := int64(1024 + 4 + len(e1) + 4)
	off3 := off2 + int64(len(e2)+4)
	all := []logEntry{{1028, 5, 0}, {off2, 5, 1}, {off3, 9, 0}}

	// Zero padding between entries, and a skipped record of ledger -1.
	padded := buildLog(t, false, false, e1)
	padded = append(padded, 0, 0, 0, 0, 0, 0, 0)
	skip := make([]byte, 16)
	binary.BigEndian.PutUint64(skip, u64(-1))
	padded = binary.BigEndian.AppendUint32(padded, 16)
	padded = append(padded, skip...)
	paddedE2 := int64(len(padded) + 4)
	padded = binary.BigEndian.AppendUint32(padded, uint32(len(e2)))
	padded = append(padded, e2...)

	cut := closed[:off3+10]   // cut inside entry 3: header still points at a map past the end
	cutOpen := open[:off3+10] // unclosed log cut short
	negative := append(bytes.Clone(open), 0xff, 0xff, 0xff, 0xf0, 0, 0, 0)
	foreign := append([]byte("BKLG"), make([]byte, 1020)...)
	version := bytes.Clone(open)
	version[7] = 9
	badMap := bytes.Clone(closed)
	mapAt := int64(binary.BigEndian.Uint64(badMap[8:]))
	binary.BigEndian.PutUint32(badMap[mapAt:], 1<<30)

	for _, c := range []struct {
		name      string
		b         []byte
		want      []logEntry
		mapLen    int
		direct    bool
		problemAt []int64 // offsets of Problems
		err       error
	}{
		{name: "closed", b: closed, want: all, mapLen: 2},
		{name: "never closed: scanned to the end", b: open, want: all},
		{name: "direct-io header", b: direct, want: []logEntry{{4100, 5, 0}}, mapLen: 1, direct: true},
		{name: "padding and ledger -1 skipped", b: padded, want: []logEntry{{1028, 5, 0}, {paddedE2, 5, 1}}},
		{name: "map offset past the end", b: cut, want: all[:2], problemAt: []int64{8, off3 - 4}},
		{name: "cut short", b: cutOpen, want: all[:2], problemAt: []int64{off3 - 4}},
		{name: "negative size", b: negative, want: all, problemAt: []int64{int64(len(open))}},
		{name: "bad ledgers map", b: badMap, want: all, problemAt: []int64{mapAt}},
		{name: "journal header", b: foreign, err: ErrForeignHeader},
		{name: "unknown version", b: version, err: ErrUnknownVersion},
		{name: "shorter than the header", b: open[:100], err: ErrTruncated},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, res, err := scanLog(t, c.b)
			if c.err != nil {
				var fe *FormatError
				if !errors.Is(err, c.err) || !errors.As(err, &fe) || fe.File != "x.log" {
					t.Fatalf("err %v, want %v naming x.log", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("entries %v, want %v", got, c.want)
			}
			if len(res.Map) != c.mapLen || res.Header.Direct != c.direct {
				t.Errorf("map %v direct %v, want %d ledgers direct %v", res.Map, res.Header.Direct, c.mapLen, c.direct)
			}
			var at []int64
			for _, p := range res.Problems {
				at = append(at, p.Offset)
			}
			if fmt.Sprint(at) != fmt.Sprint(c.problemAt) && !(len(at) == 0 && len(c.problemAt) == 0) {
				t.Errorf("problems %v, want at %v", res.Problems, c.problemAt)
			}
		})
	}
	// The ledgers map of the closed log counts each ledger's bytes with size fields.
	_, res, _ := scanLog(t, closed)
	want := []LedgerBytes{{5, int64(len(e1) + len(e2) + 8)}, {9, int64(len(e3) + 4)}}
	if fmt.Sprint(res.Map) != fmt.Sprint(want) {
		t.Errorf("map %v, want %v", res.Map, want)
	}
}

// TestLedgersMapBatches: more than 10,000 ledgers split into batches.
func TestLedgersMapBatches(t *testing.T) {
	var entries [][]byte
	for l := range int64(10_003) {
		entries = append(entries, frame(t, l, 0, ""))
	}
	b := buildLog(t, true, false, entries...)
	_, res, err := scanLog(t, b)
	if err != nil || len(res.Problems) > 0 {
		t.Fatal(err, res.Problems)
	}
	if len(res.Map) != 10_003 || res.Entries != 10_003 || res.Map[10_002].LedgerID != 10_002 {
		t.Fatalf("map of %d ledgers, %d entries", len(res.Map), res.Entries)
	}
}

type jrec struct {
	off      int64
	kind     RecordKind
	lid, eid int64
}

func scanJournal(t *testing.T, b []byte) ([]jrec, JournalResult, error) {
	var got []jrec
	res, err := ScanJournal("x.txn", bytes.NewReader(b), int64(len(b)), func(r JournalRecord) error {
		got = append(got, jrec{r.Offset, r.Kind, r.LedgerID, r.EntryID})
		return nil
	})
	return got, res, err
}

func TestScanJournal(t *testing.T) {
	e1, e2 := frame(t, 5, 0, "a"), frame(t, 5, 1, "bb")
	key := MetaRecord(5, MetaLedgerKey, []byte("k"))
	fence := MetaRecord(5, MetaFence, nil)
	lac := MetaRecord(5, MetaExplicitLAC, []byte{0, 0, 0, 0, 0, 0, 0, 1})
	v6 := buildJournal(t, 6, true, key, e1, fence, e2, lac)
	v4 := buildJournal(t, 4, false, e1, e2)
	v1 := buildJournal(t, 1, false, e1, e2)
	unpadded := buildJournal(t, 6, false, e1, e2)
	cut := unpadded[:512+4+len(e1)+10]
	negative := bytes.Clone(unpadded)
	binary.BigEndian.PutUint32(negative[512+4+len(e1):], uint32(u64(-7)))
	unknown := bytes.Clone(v4)
	unknown[7] = 7
	foreign := buildLog(t, false, false, e1)

	e2v4 := int64(8 + 4 + len(e1))
	for _, c := range []struct {
		name      string
		b         []byte
		want      []jrec
		version   int32
		problemAt []int64
		err       error
	}{
		{name: "v6 with padding and meta records", b: v6, version: 6, want: []jrec{
			{512, RecordLedgerKey, 5, MetaLedgerKey}, {1024, RecordEntry, 5, 0}, {1536, RecordFence, 5, MetaFence},
			{2048, RecordEntry, 5, 1}, {2560, RecordExplicitLAC, 5, MetaExplicitLAC}}},
		{name: "v4 8-byte header", b: v4, version: 4, want: []jrec{{8, RecordEntry, 5, 0}, {e2v4, RecordEntry, 5, 1}}},
		{name: "v1 no header", b: v1, version: 1, want: []jrec{{0, RecordEntry, 5, 0}, {e2v4 - 8, RecordEntry, 5, 1}}},
		{name: "cut short", b: cut, version: 6, want: []jrec{{512, RecordEntry, 5, 0}}, problemAt: []int64{int64(512 + 4 + len(e1))}},
		{name: "negative length", b: negative, version: 6, want: []jrec{{512, RecordEntry, 5, 0}}, problemAt: []int64{int64(512 + 4 + len(e1))}},
		{name: "unknown version", b: unknown, err: ErrUnknownVersion},
		{name: "entry log header", b: foreign, err: ErrForeignHeader},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, res, err := scanJournal(t, c.b)
			if c.err != nil {
				var fe *FormatError
				if !errors.Is(err, c.err) || !errors.As(err, &fe) || fe.File != "x.txn" {
					t.Fatalf("err %v, want %v naming x.txn", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) || res.Version != c.version {
				t.Errorf("records %v version %d, want %v version %d", got, res.Version, c.want, c.version)
			}
			var at []int64
			for _, p := range res.Problems {
				at = append(at, p.Offset)
			}
			if fmt.Sprint(at) != fmt.Sprint(c.problemAt) && !(len(at) == 0 && len(c.problemAt) == 0) {
				t.Errorf("problems %v, want at %v", res.Problems, c.problemAt)
			}
		})
	}
}

func TestLastMark(t *testing.T) {
	m := LastMark{JournalID: 0x18f00000001, Offset: 4096}
	got, err := ParseLastMark("lastMark", m.Bytes())
	if err != nil || got != m {
		t.Fatalf("round trip %v %v", got, err)
	}
	if _, err := ParseLastMark("lastMark", m.Bytes()[:15]); !errors.Is(err, ErrTruncated) {
		t.Errorf("15 bytes: %v", err)
	}
	neg := LastMark{JournalID: -1}.Bytes()
	if _, err := ParseLastMark("lastMark", neg); !errors.Is(err, ErrBadSize) {
		t.Errorf("negative: %v", err)
	}
	for _, c := range []struct {
		j, end int64
		want   bool
	}{{m.JournalID - 1, 1 << 40, true}, {m.JournalID, 4096, true}, {m.JournalID, 4097, false}, {m.JournalID + 1, 0, false}} {
		if m.Before(c.j, c.end) != c.want {
			t.Errorf("Before(%d, %d) != %v", c.j, c.end, c.want)
		}
	}
}

func TestLogID(t *testing.T) {
	for _, c := range []struct {
		name string
		id   int64
		ok   bool
	}{{"1a.log", 26, true}, {"0.log", 0, true}, {"lastId", 0, false}, {".log", 0, false}, {"zz.log", 0, false}} {
		id, ok := LogID(c.name, ".log")
		if id != c.id || ok != c.ok {
			t.Errorf("LogID(%q) = %d %v", c.name, id, ok)
		}
	}
}

func FuzzScanEntryLog(f *testing.F) {
	e1, e2 := frame(f, 5, 0, "a"), frame(f, 6, 1, "bb")
	f.Add(buildLog(f, true, false, e1, e2))
	f.Add(buildLog(f, false, false, e1, e2))
	f.Add(buildLog(f, true, true, e1))
	f.Add(buildLog(f, true, false, e1)[:1100])
	f.Fuzz(func(t *testing.T, b []byte) {
		// The declared size may disagree with the bytes: a file that shrank under us.
		for _, size := range []int64{int64(len(b)), int64(len(b)) + 10} {
			_, _ = ScanEntryLog("f.log", bytes.NewReader(b), size, func(e LogEntry) error {
				if e.Offset < EntryLogHeaderSize || len(e.Data) < minEntrySize || e.Offset+int64(len(e.Data)) > int64(len(b)) {
					t.Fatalf("entry at %d of %d bytes outside the file", e.Offset, len(e.Data))
				}
				return nil
			})
		}
	})
}

func FuzzScanJournal(f *testing.F) {
	e1 := frame(f, 5, 0, "a")
	f.Add(buildJournal(f, 6, true, MetaRecord(5, MetaLedgerKey, []byte("k")), e1))
	f.Add(buildJournal(f, 4, false, e1))
	f.Add(buildJournal(f, 1, false, e1))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, size := range []int64{int64(len(b)), int64(len(b)) + 10} {
			_, _ = ScanJournal("f.txn", bytes.NewReader(b), size, func(r JournalRecord) error {
				if r.End() > int64(len(b)) || len(r.Data) < minEntrySize {
					t.Fatalf("record at %d of %d bytes outside the file", r.Offset, len(r.Data))
				}
				return nil
			})
		}
	})
}

func FuzzFrame(f *testing.F) {
	for _, dt := range []DigestType{DigestCRC32C, DigestCRC32, DigestHMAC, DigestDummy} {
		b, _ := BuildFrame(dt, []byte("pw"), 1, 2, 1, 10, []byte("payload"))
		f.Add(b, string(dt))
	}
	f.Fuzz(func(t *testing.T, b []byte, dt string) {
		fr, err := ParseFrame(b, DigestType(dt))
		if err == nil && FrameHeaderSize+len(fr.Digest)+len(fr.Payload) != len(b) {
			t.Fatalf("frame parts do not add up to %d bytes", len(b))
		}
		_ = Verify(b, DigestType(dt), []byte("pw"))
		_ = Detect(b, nil)
		_, _ = ParseLastMark("lastMark", b)
	})
}
