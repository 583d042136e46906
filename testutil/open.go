package testutil

import (
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

// OpenMetadata opens the metadata store a URL names (datadir.OpenMetadata) and
// closes it when the test ends (closing it before is fine). A URL that does not
// parse fails the test; the open's error is returned.
func OpenMetadata(t testing.TB, raw string, opts store.Options) (store.MetadataBackend, error) {
	t.Helper()
	u, err := store.ParseMetadataURL(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	mb, err := datadir.OpenMetadata(u, opts)
	if err == nil {
		t.Cleanup(func() { mb.Close() })
	}
	return mb, err
}

// MustOpenMetadata is OpenMetadata that fails the test when the store does not open.
func MustOpenMetadata(t testing.TB, raw string, opts store.Options) store.MetadataBackend {
	t.Helper()
	mb, err := OpenMetadata(t, raw, opts)
	if err != nil {
		t.Fatalf("open %s: %v", raw, err)
	}
	return mb
}

// OpenMetadataURL is OpenMetadata with a request timeout, read-only or not.
func OpenMetadataURL(t testing.TB, raw string, readOnly bool, timeout time.Duration) (store.MetadataBackend, error) {
	t.Helper()
	return OpenMetadata(t, raw, store.Options{ReadOnly: readOnly, Remote: store.RemoteOptions{Timeout: timeout}})
}

// MustOpenMetadataURL is OpenMetadataURL with a 5 s timeout that fails the test
// when the store does not open.
func MustOpenMetadataURL(t testing.TB, raw string, readOnly bool) store.MetadataBackend {
	t.Helper()
	return MustOpenMetadata(t, raw, store.Options{ReadOnly: readOnly, Remote: store.RemoteOptions{Timeout: 5 * time.Second}})
}
