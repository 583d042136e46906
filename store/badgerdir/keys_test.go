package badgerdir

import (
	"bytes"
	"testing"
	"testing/quick"
)

func TestEntryKeyRoundTrip(t *testing.T) {
	f := func(ledgerID, entryID int64) bool {
		l, e, err := ParseEntryKey(EntryKey(ledgerID, entryID))
		return err == nil && l == ledgerID && e == entryID
	}
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
}

func TestEntryKeyOrder(t *testing.T) {
	// Keys must sort by ledger id, then entry id, for Entries and LedgerIDs to stream in order.
	ordered := [][2]int64{{1, 0}, {1, 1}, {1, 255}, {1, 256}, {2, 0}, {255, 7}, {256, 0}, {1 << 40, 3}}
	for i := 1; i < len(ordered); i++ {
		a := EntryKey(ordered[i-1][0], ordered[i-1][1])
		b := EntryKey(ordered[i][0], ordered[i][1])
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("EntryKey%v = %x does not sort before EntryKey%v = %x", ordered[i-1], a, ordered[i], b)
		}
	}
}

func TestEntryKeyLayout(t *testing.T) {
	got := EntryKey(0x0102030405060708, 0x1112131415161718)
	want := []byte{'e', 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}
	if !bytes.Equal(got, want) {
		t.Errorf("EntryKey = %x, want %x", got, want)
	}
}

func TestParseEntryKeyErrors(t *testing.T) {
	for _, k := range [][]byte{
		nil,
		{'e'},
		EntryKey(1, 2)[:16],
		append(EntryKey(1, 2), 0),
		append([]byte{'f'}, EntryKey(1, 2)[1:]...),
	} {
		if l, e, err := ParseEntryKey(k); err == nil {
			t.Errorf("ParseEntryKey(%x) = %d, %d, nil; want an error", k, l, e)
		}
	}
}

func FuzzParseEntryKey(f *testing.F) {
	f.Add(EntryKey(1, 0))
	f.Add(EntryKey(-1, 1<<62))
	f.Add([]byte("e"))
	f.Add([]byte("/ledgers/00/0000/L0001"))
	f.Fuzz(func(t *testing.T, k []byte) {
		l, e, err := ParseEntryKey(k)
		if err != nil {
			return
		}
		if !bytes.Equal(EntryKey(l, e), k) {
			t.Errorf("ParseEntryKey(%x) = %d, %d, which encodes to %x", k, l, e, EntryKey(l, e))
		}
	})
}
