package badgermanifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifestRoundTripAndDamage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "MANIFEST")
	tables := map[uint64]Table{1: {Level: 6, Compression: 1}, 4: {Level: 0, Compression: 1}}
	if err := Write(p, nil, tables); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st := Parse(b)
	if st.Problem != "" || len(st.Tables) != 2 || st.Tables[1].Level != 6 || st.MaxID != 4 || st.End != int64(len(b)) {
		t.Fatalf("round trip: %+v", st)
	}
	cut := Parse(b[:len(b)-3])
	if !cut.Cut || len(cut.Tables) != 0 || cut.End != HeaderSize || !strings.Contains(cut.Problem, "offset 8 cut short") {
		t.Errorf("cut record: %+v", cut)
	}
	flipped := append([]byte(nil), b...)
	flipped[len(flipped)-1] ^= 1
	if st := Parse(flipped); st.Cut || !strings.Contains(st.Problem, "checksum mismatch") {
		t.Errorf("flipped payload byte: %+v", st)
	}
	if st := Parse([]byte("Bdg")); !st.Cut || st.Header != nil {
		t.Errorf("cut header: %+v", st)
	}
	if st := Parse(make([]byte, 40)); st.Cut || st.Header != nil || !strings.Contains(st.Problem, "bad header") {
		t.Errorf("zeroed file: %+v", st)
	}
}

// FuzzParse: no input panics; a replay that found no problem read to the end;
// one that stopped did so inside the file; and the tables any replay found
// survive Write and Parse unchanged.
func FuzzParse(f *testing.F) {
	p := filepath.Join(f.TempDir(), "MANIFEST")
	if err := Write(p, nil, map[uint64]Table{1: {Level: 6, Compression: 1}, 4: {Level: 0, KeyID: 3}}); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte("Bdgr\x00\x00\x00\x08\xff\xff\xff\xff"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		st := Parse(b)
		if st.Problem == "" && st.End != int64(len(b)) {
			t.Fatalf("no problem, but the replay ended at %d of %d", st.End, len(b))
		}
		if st.End > st.Size || st.Size != int64(len(b)) {
			t.Fatalf("end %d, size %d of %d bytes", st.End, st.Size, len(b))
		}
		out := filepath.Join(dir, "MANIFEST")
		if err := Write(out, st.Header, st.Tables); err != nil {
			t.Fatal(err)
		}
		again, err := Read(out)
		if err != nil || again.Problem != "" || len(again.Tables) != len(st.Tables) {
			t.Fatalf("rewritten: %+v, %v; want the %d tables of %+v", again, err, len(st.Tables), st)
		}
		for id, tb := range st.Tables {
			if again.Tables[id] != tb {
				t.Fatalf("table %d: %+v rewritten as %+v", id, tb, again.Tables[id])
			}
		}
	})
}
