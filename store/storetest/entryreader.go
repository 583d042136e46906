package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// CheckEntryReader reads keys, in turn, through one EntryReader and asserts each
// read says what Entry says (the same bytes, or the same error, fn then not
// called), and that Peek returns fn's own error unchanged.
func CheckEntryReader(t *testing.T, ls store.LedgerStore, keys [][2]int64) {
	t.Helper()
	r := ls.EntryReader()
	defer r.Close()
	stop := errors.New("stop")
	for _, k := range keys {
		want, wantErr := ls.Entry(k[0], k[1])
		var got []byte
		called := false
		err := r.Peek(k[0], k[1], func(v []byte) error {
			called, got = true, bytes.Clone(v)
			return nil
		})
		switch {
		case fmt.Sprint(err) != fmt.Sprint(wantErr),
			errors.Is(err, store.ErrNotFound) != errors.Is(wantErr, store.ErrNotFound),
			errors.Is(err, store.ErrTruncatedValue) != errors.Is(wantErr, store.ErrTruncatedValue):
			t.Errorf("Peek(%d, %d): error %v, Entry's %v", k[0], k[1], err, wantErr)
		case called != (wantErr == nil) || !bytes.Equal(got, want):
			t.Errorf("Peek(%d, %d): called %v with %d bytes, Entry read %d (%v)", k[0], k[1], called, len(got), len(want), wantErr)
		}
		if wantErr != nil {
			continue
		}
		if err := r.Peek(k[0], k[1], func([]byte) error { return stop }); err != stop {
			t.Errorf("Peek(%d, %d) with a failing callback: %v, want its error", k[0], k[1], err)
		}
	}
}
