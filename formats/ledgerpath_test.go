package formats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestLedgerPath(t *testing.T) {
	tests := []struct {
		id   int64
		path string
	}{
		{0, "/ledgers/00/0000/L0000"},
		{12, "/ledgers/00/0000/L0012"},
		{1234567890, "/ledgers/12/3456/L7890"},
		{1<<31 - 2, "/ledgers/21/4748/L3646"},            // last short id
		{1<<31 - 1, "/ledgers/000/0000/0021/4748/L3647"}, // Integer.MAX_VALUE: first long id
		{1 << 31, "/ledgers/000/0000/0021/4748/L3648"},
		{math.MaxInt64, "/ledgers/922/3372/0368/5477/L5807"},
	}
	for _, tc := range tests {
		if got := LedgerPath(tc.id); got != tc.path {
			t.Errorf("LedgerPath(%d) = %s, want %s", tc.id, got, tc.path)
		}
		id, err := ParseLedgerPath(tc.path)
		if err != nil || id != tc.id {
			t.Errorf("ParseLedgerPath(%s) = %d, %v; want %d", tc.path, id, err, tc.id)
		}
	}
	if got := LedgerPath(-1); got != "" {
		t.Errorf("LedgerPath(-1) = %q, want empty", got)
	}
}

func TestParseLedgerPathRejects(t *testing.T) {
	for _, p := range []string{
		"/ledgers/LAYOUT",
		"/ledgers/available",
		"/ledgers/available/readonly",
		"/ledgers/INSTANCEID",
		"/ledgers/idgen/ID-0000000012",
		"/ledgers/idgen-long/0000000000/ID-0000000001",
		"/ledgers/underreplication/ledgers/00/0000/urL0012",
		"/ledgers/cookies/bookie-0:3181",
		"/ledgers",
		"/ledgers/",
		"/ledgers/00",
		"/ledgers/00/0000",
		"/ledgers/000/0000/0000/0000",
		"/ledgers/00/0000/0012",              // no L
		"/ledgers/00/0000/L012",              // short leaf
		"/ledgers/0/00000/L0012",             // wrong split
		"/ledgers/00/000a/L0012",             // not digits
		"/ledgers/00/0000/L+012",             // sign
		"/ledgers/21/4748/L3647",             // 2^31-1 belongs to the long form
		"/ledgers/99/9999/L9999",             // likewise
		"/ledgers/000/0000/0000/0000/L0012",  // 12 belongs to the short form
		"/ledgers/000/0000/0021/4748/L3646",  // 2^31-2 likewise
		"/ledgers/999/9999/9999/9999/L9999",  // beyond int64
		"/managed-ledgers/00/0000/L0012",     // other root
		"/ledgers/00/0000/L0012/extra",       // child
		"ledgers/00/0000/L0012",              // relative
		"/ledgers//0000/L0012",               // empty level
		"/ledgers/00/0000/L0012\n",           // trailing byte
		"/ledgers/000/0000/0021/4748/L3647/", // trailing slash
	} {
		id, err := ParseLedgerPath(p)
		if err == nil {
			t.Errorf("ParseLedgerPath(%q) = %d, want error", p, id)
		} else if !errors.Is(err, ErrNotLedgerPath) {
			t.Errorf("ParseLedgerPath(%q) error %v is not ErrNotLedgerPath", p, err)
		}
	}
}

func TestLedgerPathRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		var id int64
		switch r.IntN(3) {
		case 0:
			id = r.Int64N(1 << 31)
		case 1:
			id = 1<<31 - 4 + r.Int64N(8)
		default:
			id = r.Int64()
		}
		back, err := ParseLedgerPath(LedgerPath(id))
		if err != nil || back != id {
			t.Fatalf("id %d: path %s parses to %d, %v", id, LedgerPath(id), back, err)
		}
	}
}

func FuzzParseLedgerPath(f *testing.F) {
	for _, s := range []string{"/ledgers/00/0000/L0012", "/ledgers/000/0000/0021/4748/L3647", "/ledgers/LAYOUT", "/ledgers/21/4748/L3647"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		id, err := ParseLedgerPath(p)
		if err != nil {
			return
		}
		if id < 0 || LedgerPath(id) != p {
			t.Fatalf("ParseLedgerPath(%q) = %d but LedgerPath gives %q", p, id, LedgerPath(id))
		}
	})
}
