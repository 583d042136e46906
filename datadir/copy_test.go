package datadir

import (
	"context"
	"errors"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// TestLoadNodesSkip: Skip leaves out its node and the nodes below it, and only
// those (a sibling whose name merely starts with it is loaded).
func TestLoadNodesSkip(t *testing.T) {
	src, err := Open(filledDataDir(t, map[string]string{
		"/admin": "a", "/ledgers": "", "/ledgers/00/0000/L0010": "l", "/ledgersx/y": "y",
	}), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	nb, ok := dst.Metadata.(store.NodeBatcher)
	if !ok {
		t.Fatal("a data dir's metadata store is not a NodeBatcher")
	}
	n, err := LoadNodes(context.Background(), src.Metadata, nb, LoadOptions{Skip: "/ledgers"})
	if err != nil || n != 2 {
		t.Fatalf("LoadNodes: %d nodes, %v; want 2", n, err)
	}
	for p, want := range map[string]bool{"/admin": true, "/ledgersx/y": true, "/ledgers": false, "/ledgers/00/0000/L0010": false} {
		_, err := dst.Metadata.Get(p)
		if got := err == nil; got != want || err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s loaded: %v (%v), want %v", p, got, err, want)
		}
	}
}
