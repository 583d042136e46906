package zk_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/store"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestZKServerDiesMidWalk: a server killed while a walk has reads in flight ends
// the walk with an error naming the ensemble, soon (not after the timeout), and
// the reads left running after the store is closed fail quietly rather than
// panic on a closed connection.
func TestZKServerDiesMidWalk(t *testing.T) {
	srv := testutil.StartZooKeeper(t, testutil.ZKOptions{})
	raw := testutil.ZKClient(t, srv.Addr)
	// 1,200 nodes read at 300 a second: when the 50th is handed over (about
	// 1.2 s in: a batch goes once all its reads have their tokens) most reads
	// are still to go. With 400, the last batch sometimes went out just before
	// the kill and the walk finished cleanly.
	for i := range 1200 {
		zkCreateAll(t, raw, "/d/"+strconv.Itoa(i%8)+"/n"+strconv.Itoa(i), []byte("v"))
	}
	s, err := testutil.OpenMetadata(t, "zk://"+srv.Addr+"?timeout=8s", store.Options{Remote: store.RemoteOptions{Rate: 300}})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	start := time.Now()
	err = s.Walk(context.Background(), "/d/", func(store.Node) error {
		if seen++; seen == 50 {
			srv.Kill()
		}
		return nil
	})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), srv.Addr) {
		t.Fatalf("walk over a killed server: %v (after %d nodes), want an error naming %s", err, seen, srv.Addr)
	}
	if took > 6*time.Second {
		t.Errorf("the walk took %v to fail, want well under its 8 s timeout", took)
	}
	s.Close()
	time.Sleep(2 * time.Second) // reads still in flight run into the closed store
}
