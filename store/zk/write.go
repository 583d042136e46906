package zk

import (
	"errors"
	"fmt"
	"math"
	"strings"

	gozk "github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
)

// zkOpenACL is the ACL Pulsar gives every node it creates (OPEN_ACL_UNSAFE).
var zkOpenACL = gozk.WorldACL(gozk.PermAll)

// zkMultiAttempts bounds the retries after creating missing parents (another
// writer may delete a parent between our create and the multi).
const zkMultiAttempts = 3

func (s *zkStore) CompareAndSet(path string, expect uint64, value []byte) (uint64, error) {
	return store.CompareAndSetOne(s, path, expect, value)
}

func (s *zkStore) CompareAndDelete(path string, expect uint64) error {
	return store.CompareAndDeleteOne(s, path, expect)
}

// CompareAndSetNodes is one ZooKeeper multi: SetData at version Expect-1 for an
// existing node, Create (persistent, open ACL) for Expect 0, Delete at version
// Expect-1. Missing parents of created nodes are created first, outside the multi,
// once a multi failed for want of them and no version differs.
func (s *zkStore) CompareAndSetNodes(writes []store.NodeWrite) ([]uint64, error) {
	what := store.DescribeWrites(writes)
	if s.readOnly {
		return nil, fmt.Errorf("%s on zookeeper %s: %w", what, s.u, store.ErrReadOnly)
	}
	ops, err := s.multiOps(writes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(ops) == 0 {
		return nil, nil
	}
	if err := s.checkNodeSizes(writes); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if size := multiSize(ops); size > s.maxRequest {
		return nil, fmt.Errorf("%s: %d bytes in one ZooKeeper request, over %d: %w", what, size, s.maxRequest, store.ErrBatchTooBig)
	}
	for attempt := 1; ; attempt++ {
		resps, err := s.multi(ops)
		// What the read session must see before it verifies (multiread.go).
		if err == nil {
			s.marks.wrote(multiZxid(resps))
		} else {
			s.marks.wrote(0)
		}
		if err == nil {
			return newVersions(writes, resps), nil
		}
		if errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, errNotSent) {
			return nil, fmt.Errorf("%s on zookeeper %s: %w", what, s.hosts, err)
		}
		failed := failedOp(resps)
		if failed < 0 {
			return nil, fmt.Errorf("%s on zookeeper %s: %w", what, s.hosts, err)
		}
		ferr := resps[failed].Error
		if mm := s.mismatches(writes, failed, ferr); mm != nil {
			return nil, fmt.Errorf("%s: %w", what, mm)
		}
		fw := writes[failed]
		if !(errors.Is(ferr, gozk.ErrNoNode) && !fw.Delete && fw.Expect == 0) || attempt == zkMultiAttempts {
			return nil, fmt.Errorf("%s: node %q: %w", what, fw.Path, s.writeError(ferr))
		}
		if err := s.createParents(writes); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
}

// multiOps turns the writes into multi operations, refusing what a multi cannot say.
func (s *zkStore) multiOps(writes []store.NodeWrite) ([]any, error) {
	seen := make(map[string]bool, len(writes))
	ops := make([]any, len(writes))
	for i, w := range writes {
		if seen[w.Path] {
			return nil, fmt.Errorf("node %q written twice in one batch", w.Path)
		}
		seen[w.Path] = true
		if w.Path == "/" || !strings.HasPrefix(w.Path, "/") {
			return nil, fmt.Errorf("node %q: not a writable node path", w.Path)
		}
		if w.Expect > math.MaxInt32 {
			return nil, fmt.Errorf("node %q: expected version %d: %w", w.Path, w.Expect, store.ErrVersionMismatch)
		}
		p, version := s.zkPath(w.Path), int32(w.Expect)-1
		switch {
		case w.Delete && w.Expect == 0:
			return nil, fmt.Errorf("node %q: a delete needs the node's version", w.Path)
		case w.Delete:
			ops[i] = &gozk.DeleteRequest{Path: p, Version: version}
		case w.Expect == 0:
			ops[i] = &gozk.CreateRequest{Path: p, Data: store.NonNilValue(w.Value), Acl: zkOpenACL, Flags: gozk.FlagPersistent}
		default:
			ops[i] = &gozk.SetDataRequest{Path: p, Data: store.NonNilValue(w.Value), Version: version}
		}
	}
	return ops, nil
}

// checkNodeSizes refuses, before anything is sent, a write whose own request is
// over the servers' limit: no batch, however split, could carry it.
func (s *zkStore) checkNodeSizes(writes []store.NodeWrite) error {
	for _, w := range writes {
		if !w.Delete {
			if err := s.CheckNodeSize(w.Path, len(w.Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckNodeSize measures the request that creates the node (a create carries an
// ACL, so it is the largest write of a node) against jute.maxbuffer.
func (s *zkStore) CheckNodeSize(path string, size int) error {
	req := multiSize([]any{&gozk.CreateRequest{Path: s.zkPath(path), Acl: zkOpenACL}}) + size
	if req <= s.maxRequest {
		return nil
	}
	return fmt.Errorf("node %q: %d bytes (a %d-byte request), over the %d-byte jute.maxbuffer of zookeeper %s "+
		"(if the ensemble runs with a larger -Djute.maxbuffer, say so with ?jute-maxbuffer=N in the URL): %w",
		path, size, req, s.maxRequest, s.hosts, store.ErrNodeTooBig)
}

// multiSize is the encoded size of a multi request (jute: int32 lengths, a 9-byte
// header per operation, the ACL vector of a create).
func multiSize(ops []any) int {
	const header = 4 + 1 + 4
	size := 4 + 8 + header // packet length, request header, done header
	for _, op := range ops {
		size += header
		switch o := op.(type) {
		case *gozk.CreateRequest:
			size += 4 + len(o.Path) + 4 + len(o.Data) + 4 + 4
			for _, a := range o.Acl {
				size += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
			}
		case *gozk.SetDataRequest:
			size += 4 + len(o.Path) + 4 + len(o.Data) + 4
		case *gozk.DeleteRequest:
			size += 4 + len(o.Path) + 4
		case *gozk.CheckVersionRequest:
			size += 4 + len(o.Path) + 4
		}
	}
	return size
}

// errNotSent: the request never left this process (no server reachable), so
// nothing was written.
var errNotSent = errors.New("no ZooKeeper server reachable, nothing was written")

// zkServerErrors are the answers of a server that refused an operation: the outcome
// of the write is known (nothing was written).
var zkServerErrors = []error{
	gozk.ErrNoNode, gozk.ErrBadVersion, gozk.ErrNodeExists, gozk.ErrNotEmpty, gozk.ErrNoAuth,
	gozk.ErrInvalidACL, gozk.ErrAPIError, gozk.ErrBadArguments, gozk.ErrNoChildrenForEphemerals,
	gozk.ErrInvalidPath, gozk.ErrShortBuffer, gozk.ErrAuthFailed,
}

// multi sends one multi. A lost connection, an expired session or a timeout after
// sending leaves the outcome unknown: ErrOutcomeUnknown.
func (s *zkStore) multi(ops []any) ([]gozk.MultiResponse, error) {
	var resps []gozk.MultiResponse
	err := s.within(func() error {
		var err error
		resps, err = s.conn.Multi(ops...)
		return err
	})
	if err == nil {
		return resps, nil
	}
	if errors.Is(err, gozk.ErrNoServer) {
		return nil, fmt.Errorf("%w: %w", errNotSent, err)
	}
	for _, known := range zkServerErrors {
		if errors.Is(err, known) {
			return resps, err
		}
	}
	// resps is not read here: after a timeout the request may still write it.
	return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
}

// failedOp is the index of the operation that failed a multi: the first with a
// real error (the ones after it carry "runtime inconsistency").
func failedOp(resps []gozk.MultiResponse) int {
	for i, r := range resps {
		if r.Error != nil {
			return i
		}
	}
	return -1
}

// mismatches reads the nodes back after a refused multi and names every node whose
// version differs from its write's Expect. The failing operation's own node is
// named when its error was a version conflict, even if it changed again since.
// nil: no version differs.
func (s *zkStore) mismatches(writes []store.NodeWrite, failed int, ferr error) error {
	conflict := errors.Is(ferr, gozk.ErrBadVersion) || errors.Is(ferr, gozk.ErrNodeExists) ||
		(errors.Is(ferr, gozk.ErrNoNode) && (writes[failed].Delete || writes[failed].Expect != 0))
	paths := make([]string, len(writes))
	for i, w := range writes {
		paths[i] = w.Path
	}
	nodes, err := s.GetNodes(paths)
	if err != nil {
		if conflict {
			return fmt.Errorf("node %q: %w (%v; the other nodes could not be read back: %v)", writes[failed].Path, store.ErrVersionMismatch, ferr, err)
		}
		return nil
	}
	var errs []error
	for i, w := range writes {
		if nodes[i].Version != w.Expect || (i == failed && conflict) {
			errs = append(errs, fmt.Errorf("node %q: %w: expected version %d, found %d", w.Path, store.ErrVersionMismatch, w.Expect, nodes[i].Version))
		}
	}
	return errors.Join(errs...)
}

// writeError maps a refused operation to our errors.
func (s *zkStore) writeError(err error) error {
	if errors.Is(err, gozk.ErrNoAuth) {
		return fmt.Errorf("not authorized on zookeeper %s: the ACL refuses this session (wrong or missing digest user:password): %w", s.hosts, err)
	}
	return err
}

// createParents creates every missing ancestor of the created nodes, as Pulsar
// does: CONTAINER nodes with empty data, which ZooKeeper removes once their last
// child is gone. We follow Pulsar rather than create persistent parents so that a
// rolled-back or undone create leaves no empty parent behind for long.
func (s *zkStore) createParents(writes []store.NodeWrite) error {
	done := map[string]bool{"/": true}
	for _, w := range writes {
		if w.Delete || w.Expect != 0 {
			continue
		}
		for i := 1; i < len(w.Path); i++ {
			if w.Path[i] != '/' || done[w.Path[:i]] {
				continue
			}
			parent := w.Path[:i]
			done[parent] = true
			if err := s.createParent(parent); err != nil {
				return fmt.Errorf("create parent %q of node %q: %w", parent, w.Path, err)
			}
		}
	}
	return nil
}

func (s *zkStore) createParent(path string) error {
	p := s.zkPath(path)
	defer s.marks.wrote(0)
	err := s.within(func() error {
		_, err := s.conn.CreateContainer(p, []byte{}, gozk.FlagContainer, zkOpenACL)
		return err
	})
	if err != nil && !errors.Is(err, gozk.ErrNodeExists) && !errors.Is(err, gozk.ErrNoNode) && !errors.Is(err, gozk.ErrNoAuth) &&
		!errors.Is(err, errRequestTimeout) && !errors.Is(err, gozk.ErrConnectionClosed) && !errors.Is(err, gozk.ErrNoServer) {
		// A server without containers (before 3.5.1): a persistent parent.
		err = s.within(func() error {
			_, err := s.conn.Create(p, []byte{}, gozk.FlagPersistent, zkOpenACL)
			return err
		})
	}
	if err == nil || errors.Is(err, gozk.ErrNodeExists) {
		return nil
	}
	return s.writeError(err)
}

// newVersions are the versions after a multi: a created node is at Stat.version 0,
// a set one at the version its response reports, a deleted one gone (0).
func newVersions(writes []store.NodeWrite, resps []gozk.MultiResponse) []uint64 {
	versions := make([]uint64, len(writes))
	for i, w := range writes {
		switch {
		case w.Delete:
		case w.Expect == 0:
			versions[i] = 1
		case i < len(resps) && resps[i].Stat != nil:
			versions[i] = zkVersion(resps[i].Stat)
		default:
			versions[i] = w.Expect + 1
		}
	}
	return versions
}
