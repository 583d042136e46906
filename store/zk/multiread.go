package zk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
)

// How the ZooKeeper backend reads in bulk: the walk and GetNodes go through the
// multiRead session (zk_reader.go) while it works, and through go-zookeeper's
// one-request-per-node reads when it does not (a server before 3.6, a session that
// could not be opened or was lost). The fallback is told once, as a note of the
// store's Source.

// After a failure the store waits zkReaderRetry before it dials a new read session
// (reads go through go-zookeeper meanwhile), twice as long after each further
// failure up to zkReaderRetryMax: a dial to a host that does not answer costs its
// timeout.
const (
	zkReaderRetry    = 2 * time.Second
	zkReaderRetryMax = time.Minute
)

// readHostOrder puts the write session's server first: the read session then sees
// what the writes committed as soon as that server applied them.
func readHostOrder(hosts []string, first string) []string {
	out := []string{}
	for _, h := range hosts {
		if h == first {
			out = append(out, h)
		}
	}
	for _, h := range hosts {
		if h != first {
			out = append(out, h)
		}
	}
	return out
}

// dialReaderLocked opens the read session; on failure it notes the fallback once.
func (s *zkStore) dialReaderLocked() {
	r, err := dialZKReader(s.readHosts, s.readSession, min(s.timeout, 5*time.Second), s.timeout, s.digest, s.zkPath("/"))
	if err != nil {
		s.downLocked(err)
		return
	}
	s.reader, s.readBackoff = r, 0
}

// downLocked records that the read session is not usable.
func (s *zkStore) downLocked(err error) {
	s.reader = nil
	s.readBackoff = min(max(zkReaderRetry, 2*s.readBackoff), zkReaderRetryMax)
	s.readRetry = time.Now().Add(s.readBackoff)
	if errors.Is(err, errZKUnimplemented) {
		s.noMultiRead = true
	}
	if !s.readNoted {
		s.readNoted = true
		s.source.Notes = append(s.source.Notes, fmt.Sprintf(
			"bulk reads use one request per node while there is no multiRead session on zookeeper %s (%v)", s.hosts, err))
	}
}

// activeReader is the working read session, dialling a new one when the last
// failed long enough ago; nil: read through go-zookeeper.
func (s *zkStore) activeReader() *zkReader {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reader != nil && s.reader.failed() != nil {
		s.downLocked(s.reader.failed())
	}
	if s.reader == nil && !s.noMultiRead && time.Now().After(s.readRetry) {
		s.dialReaderLocked()
	}
	return s.reader
}

// readerDown takes a failed read session out of use.
func (s *zkStore) readerDown(r *zkReader, err error) {
	r.close(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reader == r {
		s.downLocked(err)
	}
}

// zkWriteMarks say what the read session must have seen before it may verify the
// write session's work: the zxid of the last committed multi that reported one (a
// SetData's Stat.mzxid is the zxid of its whole multi), and writes whose zxid is
// unknown (creates and deletes only, failures, lost connections), which only a
// sync covers.
type zkWriteMarks struct {
	mu      sync.Mutex
	zxid    int64
	unknown uint64 // writes of unknown zxid, counted
	synced  uint64 // how many of those a finished sync covers
}

// wrote records one write: its multi's zxid when known (> 0).
func (m *zkWriteMarks) wrote(zxid int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if zxid > 0 {
		m.zxid = max(m.zxid, zxid)
	} else {
		m.unknown++
	}
}

// needSync reports whether a read on r could miss one of our writes: r has not
// seen the last known zxid, or a write of unknown zxid came after the last sync.
// gen is what a sync started now covers.
func (m *zkWriteMarks) needSync(r *zkReader) (gen uint64, need bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unknown, m.unknown > m.synced || r.zxid.Load() < m.zxid
}

func (m *zkWriteMarks) didSync(gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.synced = max(m.synced, gen)
}

// multiZxid is the zxid of a committed multi, from any SetData's Stat; 0: unknown.
func multiZxid(resps []gozk.MultiResponse) int64 {
	for _, r := range resps {
		if r.Stat != nil && r.Stat.Mzxid > 0 {
			return r.Stat.Mzxid
		}
	}
	return 0
}

// startSyncIfNeeded sends a sync on r when a read could miss our writes. The reads
// sent after it on r are answered after it (one session's requests are served in
// order), so the caller need not wait for it before sending them.
func (s *zkStore) startSyncIfNeeded(r *zkReader) (c zkCall, gen uint64, started bool, err error) {
	gen, need := s.marks.needSync(r)
	if !need {
		return zkCall{}, 0, false, nil
	}
	c, err = r.startSync(s.zkPath("/"))
	return c, gen, err == nil, err
}

func (s *zkStore) finishSync(c zkCall, gen uint64) error {
	if err := finishSync(c); err != nil {
		return err
	}
	s.marks.didSync(gen)
	return nil
}

// syncReader makes r see every write of ours, waiting for the sync.
func (s *zkStore) syncReader(r *zkReader) error {
	c, gen, started, err := s.startSyncIfNeeded(r)
	if err != nil || !started {
		return err
	}
	return s.finishSync(c, gen)
}

// zkSizeEstimate is a node's expected share of a response, for planning batches
// (the mean data size read so far, 1 KiB before the first read).
type zkSizeEstimate struct {
	mu           sync.Mutex
	bytes, nodes int64
}

func (e *zkSizeEstimate) add(n int) {
	e.mu.Lock()
	e.bytes += int64(n)
	e.nodes++
	e.mu.Unlock()
}

func (e *zkSizeEstimate) node() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nodes == 0 {
		return 1024 + zkStatSize
	}
	return int(e.bytes/e.nodes) + 9 + 4 + zkStatSize
}

// GetNodes reads every path: through the multiRead session in pipelined batches
// (after a sync when the session might not see our last write yet), else with
// pipelined Gets. Not one snapshot either way; a write after it is still guarded by
// the versions it returned.
func (s *zkStore) GetNodes(paths []string) ([]store.Node, error) {
	if len(paths) == 0 {
		return []store.Node{}, nil
	}
	if r := s.activeReader(); r != nil {
		nodes, err := s.getNodesMulti(r, paths)
		if !errors.Is(err, errReaderDown) {
			return nodes, err
		}
		s.readerDown(r, err)
	}
	return s.getNodesGets(paths)
}

func (s *zkStore) getNodesMulti(r *zkReader, paths []string) ([]store.Node, error) {
	ops := make([]zkReadOp, len(paths))
	for i, p := range paths {
		ops[i] = zkReadOp{path: s.zkPath(p)}
	}
	plan := zkReadPlan(len(ops), func(i int) zkReadOp { return ops[i] }, func(int) int { return s.sizes.node() })
	syncCall, gen, synced, err := s.startSyncIfNeeded(r)
	if err != nil {
		return nil, err
	}
	type flight struct {
		c      zkCall
		lo, hi int
	}
	nodes := make([]store.Node, len(paths))
	var errs []error
	var q []flight
	for next := 0; next < len(plan) || len(q) > 0; {
		for next < len(plan) && len(q) < zkReadInflight {
			lo, hi := plan[next][0], plan[next][1]
			if err := s.waitN(context.Background(), hi-lo); err != nil {
				return nil, err
			}
			c, err := r.startMultiRead(ops[lo:hi])
			if err != nil {
				return nil, err
			}
			q = append(q, flight{c, lo, hi})
			next++
		}
		if synced {
			if err := s.finishSync(syncCall, gen); err != nil {
				return nil, err
			}
			synced = false
		}
		f := q[0]
		q = q[1:]
		res, err := finishMultiRead(f.c, ops[f.lo:f.hi])
		if err != nil {
			return nil, err // errReaderDown: GetNodes reads them through go-zookeeper
		}
		for k, rr := range res {
			i := f.lo + k
			nodes[i].Path = paths[i]
			switch rr.code {
			case 0:
				nodes[i].Value, nodes[i].Version = ownBytes(rr.data), uint64(rr.stat.Version)+1
				s.sizes.add(len(rr.data))
			case zkCodeNoNode:
			default:
				errs = append(errs, s.readError(paths[i], zkCodeError(rr.code)))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return nodes, nil
}

// readBatch reads the data or children of items in one multiRead; errReaderDown
// when the session failed (the caller reads them through go-zookeeper instead).
func (s *zkStore) readBatch(r *zkReader, items []*walkItem) ([]walkRead, error) {
	ops := make([]zkReadOp, len(items))
	for i, it := range items {
		ops[i] = zkReadOp{path: s.zkPath(it.path), list: it.list}
	}
	res, err := r.multiRead(ops)
	if err != nil {
		return nil, err
	}
	reads := make([]walkRead, len(items))
	for i, rr := range res {
		switch {
		case rr.code != 0:
			reads[i].err = zkCodeError(rr.code)
		case items[i].list:
			reads[i].children = rr.children
		default:
			st := rr.stat
			reads[i].data, reads[i].stat = ownBytes(rr.data), &st
			s.sizes.add(len(rr.data))
		}
	}
	return reads, nil
}

// ownBytes copies a value out of its response packet, which would otherwise stay
// in memory as long as any node read with it.
func ownBytes(p []byte) []byte { return append(make([]byte, 0, len(p)), p...) }
