package testutil

import (
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

// OpenMetadataURL opens the metadata store a URL names (datadir.OpenMetadata),
// with a request timeout, and closes it when the test ends. A URL that does not
// parse fails the test; the open's error is returned.
func OpenMetadataURL(t testing.TB, raw string, readOnly bool, timeout time.Duration) (store.MetadataBackend, error) {
	t.Helper()
	u, err := store.ParseMetadataURL(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	mb, err := datadir.OpenMetadata(u, store.Options{ReadOnly: readOnly, Remote: store.RemoteOptions{Timeout: timeout}})
	if err == nil {
		t.Cleanup(func() { mb.Close() })
	}
	return mb, err
}

// MustOpenMetadataURL is OpenMetadataURL with a 5 s timeout that fails the test
// when the store does not open.
func MustOpenMetadataURL(t testing.TB, raw string, readOnly bool) store.MetadataBackend {
	t.Helper()
	mb, err := OpenMetadataURL(t, raw, readOnly, 5*time.Second)
	if err != nil {
		t.Fatalf("open %s: %v", raw, err)
	}
	return mb
}
