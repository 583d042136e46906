package zk

import (
	"context"
	"errors"

	"github.com/ledgermedic/ledgermedic/store"
)

// ZKReadStatsForTest reports whether a ZooKeeper backend reads through its
// multiRead session, and the multiRead and sync requests that session sent.
func ZKReadStatsForTest(mb store.MetadataBackend) (active bool, multiReads, syncs int64) {
	s := mb.(*zkStore)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reader == nil || s.reader.failed() != nil {
		return false, 0, 0
	}
	return true, s.reader.multiReads.Load(), s.reader.syncs.Load()
}

// ZKReadHostsForTest moves a ZooKeeper backend's read session to hosts (the
// write session stays where it is), as when go-zookeeper picked another server.
func ZKReadHostsForTest(mb store.MetadataBackend, hosts []string) {
	s := mb.(*zkStore)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reader != nil {
		s.reader.close(errors.New("moved"))
		s.reader = nil
	}
	s.readHosts = hosts
	s.dialReaderLocked()
}

// WalkHeldForTest walks prefix on a ZooKeeper backend and returns the paths
// handed over and the most reads the walk held queued at any hand-over.
func WalkHeldForTest(mb store.MetadataBackend, prefix string) (paths []string, held int, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := mb.(*zkStore).newWalk(ctx, prefix, "")
	err = w.run(func(n store.Node) error {
		paths = append(paths, n.Path)
		held = max(held, w.all.Len())
		return nil
	})
	return paths, held, err
}
