// Package storetest holds every backend to the promises written in package store
// (store.go, batch.go, open.go): one suite for metadata stores, one for ledger
// stores, run by each backend's tests against its real server or real files.
//
// A backend's test passes an open function that writes the suite's seed through
// the backend's real writer (a live server, a writable Badger, a real bookie) and
// returns the store to test, opened as the backend opens it; read-only backends
// (a ZooKeeper dataDir, an etcd db file, bookie dirs) are seeded by writing
// through the server whose files they read. What the suite tests depends only on
// what the fixture says the store can do and on the interfaces the store
// implements, never on which backend it is.
package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// Unreachable opens the backend against a server or file that is not there, and
// returns the error and a name the error must contain (the address or path), so
// the user is told what could not be reached.
type Unreachable func(t *testing.T) (name string, err error)

// checkUnreachable runs u: the open must fail, naming what it could not reach.
func checkUnreachable(t *testing.T, u Unreachable) {
	if u == nil {
		t.Skip("the fixture opens no store that can be unreachable")
	}
	name, err := u(t)
	if err == nil {
		t.Fatalf("open of unreachable %s: no error", name)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("open of unreachable %s: error %q does not name it", name, err)
	}
}

// wantReadOnly checks a write on a read-only store: ErrReadOnly, naming what.
func wantReadOnly(t *testing.T, op, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("%s on a read-only store: %v; want ErrReadOnly", op, err)
		return
	}
	if !strings.Contains(err.Error(), what) {
		t.Errorf("%s on a read-only store: %q does not name %s", op, err, what)
	}
}
