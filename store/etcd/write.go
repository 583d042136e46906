package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ledgermedic/ledgermedic/store"
)

// CompareAndSetNodes is one etcd Txn: If every node is at its expected version
// (Expect 0: create revision 0, the key does not exist), Then every put and
// delete. A refused Txn wrote nothing; the nodes are then read to name the ones
// that differ. (An Else branch of reads would name them from the Txn's own
// snapshot, but every request would carry and encode it, refused or not.)
func (s *etcdStore) CompareAndSetNodes(writes []store.NodeWrite) ([]uint64, error) {
	versions, _, err := s.compareAndSet(writes, false)
	return versions, err
}

// CompareAndSetNodesReadBack is CompareAndSetNodes whose Then branch ends with a
// range read over the written keys: etcd applies a Txn's ops in order, so the
// range returns each node as the puts and deletes left it, at the Txn's own
// revision, and a back-fill's verification costs no second request (a
// linearizable read of its own) on a server that shares the cores. The range
// spans from the least to the greatest path, as GetNodes' span reads do; when it
// holds more keys than etcdSpanSlack per write, or the Txn has no op to spare,
// the nodes come back nil and the caller reads them.
func (s *etcdStore) CompareAndSetNodesReadBack(writes []store.NodeWrite) ([]uint64, []store.Node, error) {
	return s.compareAndSet(writes, true)
}

func (s *etcdStore) compareAndSet(writes []store.NodeWrite, readBack bool) ([]uint64, []store.Node, error) {
	if s.readOnly {
		return nil, nil, fmt.Errorf("%s on etcd %s: %w", store.DescribeWrites(writes), s.endpoints, store.ErrReadOnly)
	}
	if err := s.checkBatch(writes); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", store.DescribeWrites(writes), err)
	}
	cmps := make([]clientv3.Cmp, len(writes))
	then := make([]clientv3.Op, len(writes), len(writes)+1)
	for i, w := range writes {
		if w.Expect == 0 {
			cmps[i] = clientv3.Compare(clientv3.CreateRevision(w.Path), "=", 0)
		} else {
			cmps[i] = clientv3.Compare(clientv3.Version(w.Path), "=", int64(w.Expect))
		}
		if w.Delete {
			then[i] = clientv3.OpDelete(w.Path)
		} else {
			then[i] = clientv3.OpPut(w.Path, string(w.Value))
		}
	}
	readBack = readBack && len(writes) > 0 && len(writes) < s.maxOps && !s.noReadBack.Load()
	if readBack {
		lo, hi := writes[0].Path, writes[0].Path
		for _, w := range writes[1:] {
			lo, hi = min(lo, w.Path), max(hi, w.Path)
		}
		then = append(then, clientv3.OpGet(lo, clientv3.WithRange(hi+"\x00"),
			clientv3.WithLimit(int64(etcdSpanSlack*len(writes)))))
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(then...).Commit()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", store.DescribeWrites(writes), s.writeError(err))
	}
	if !resp.Succeeded {
		return nil, nil, fmt.Errorf("%s: %w", store.DescribeWrites(writes), s.refusal(writes, resp.Header.Revision))
	}
	// The compares held, so each version is known: a put adds one, a create is 1.
	versions := make([]uint64, len(writes))
	for i, w := range writes {
		if !w.Delete {
			versions[i] = w.Expect + 1
		}
	}
	var nodes []store.Node
	if readBack && len(resp.Responses) == len(then) {
		nodes = s.spanNodes(writes, resp.Responses[len(writes)].GetResponseRange())
	}
	return versions, nodes, nil
}

// spanNodes picks the written paths' nodes out of a range read's keys (sorted,
// as etcd returns them); nil when the range was cut short (More). That turns
// read-backs off for the store: the next batch of the same kind would hold as
// many keys between its own (a topic's cursors), and pay the range for nothing.
func (s *etcdStore) spanNodes(writes []store.NodeWrite, r *etcdserverpb.RangeResponse) []store.Node {
	if r == nil || r.More {
		s.noReadBack.Store(true)
		return nil
	}
	nodes := make([]store.Node, len(writes))
	for i, w := range writes {
		nodes[i] = spanNode(w.Path, r.Kvs)
	}
	return nodes
}

// refusal names the nodes of a refused Txn that are not at their expected
// version, as read now. It always wraps ErrVersionMismatch: the Txn wrote nothing.
func (s *etcdStore) refusal(writes []store.NodeWrite, rev int64) error {
	paths := make([]string, len(writes))
	for i, w := range writes {
		paths[i] = w.Path
	}
	nodes, err := s.GetNodes(paths)
	if err != nil {
		return fmt.Errorf("%w (etcd revision %d; naming the nodes that differ failed: %v)", store.ErrVersionMismatch, rev, err)
	}
	var mismatches []error
	for i, n := range nodes {
		if n.Version != writes[i].Expect {
			mismatches = append(mismatches, fmt.Errorf("node %q: %w: expected version %d, found %d", writes[i].Path, store.ErrVersionMismatch, writes[i].Expect, n.Version))
		}
	}
	if len(mismatches) == 0 { // changed back between the compare and the read: still refused
		mismatches = append(mismatches, fmt.Errorf("%w (etcd revision %d)", store.ErrVersionMismatch, rev))
	}
	return errors.Join(mismatches...)
}

// checkBatch refuses, before sending, what etcd would refuse: too many ops, a
// request over the size limit, a path twice, a delete of a node that must not exist.
func (s *etcdStore) checkBatch(writes []store.NodeWrite) error {
	if len(writes) > s.maxOps {
		return fmt.Errorf("%d writes, etcd takes %d ops per txn: %w", len(writes), s.maxOps, store.ErrBatchTooBig)
	}
	size := 0
	seen := make(map[string]bool, len(writes))
	for _, w := range writes {
		if seen[w.Path] {
			return fmt.Errorf("node %q written twice in one batch", w.Path)
		}
		seen[w.Path] = true
		if w.Delete && w.Expect == 0 {
			return fmt.Errorf("node %q: %w: a delete needs the node's version (expected version 0 means absent)", w.Path, store.ErrVersionMismatch)
		}
		if err := s.CheckNodeSize(w.Path, len(w.Value)); err != nil {
			return err // no split of the batch carries it
		}
		size += etcdWriteSize(w.Path, len(w.Value))
	}
	if size+etcdReqSlack > s.maxBytes {
		return fmt.Errorf("about %d bytes, etcd takes %d per request: %w", size+etcdReqSlack, s.maxBytes, store.ErrBatchTooBig)
	}
	return nil
}

// etcdWriteSize is what one write adds to a Txn: the key appears in the compare
// and the op.
func etcdWriteSize(path string, value int) int { return 2*len(path) + value + etcdPerOpBytes }

// CheckNodeSize measures a Txn of the one write against the server's
// --max-request-bytes.
func (s *etcdStore) CheckNodeSize(path string, size int) error {
	req := etcdWriteSize(path, size) + etcdReqSlack
	if req <= s.maxBytes {
		return nil
	}
	return fmt.Errorf("node %q: %d bytes (a request of about %d), over the %d-byte request limit of etcd %s "+
		"(--max-request-bytes; if the cluster runs with a larger one, say so with ?max-request-bytes=N in the URL): %w",
		path, size, req, s.maxBytes, s.endpoints, store.ErrNodeTooBig)
}

// writeError maps a failed Txn: refusals for size are ErrBatchTooBig (nothing was
// written); a lost connection or timeout leaves the outcome unknown.
func (s *etcdStore) writeError(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrTooManyOps), errors.Is(err, rpctypes.ErrRequestTooLarge):
		return fmt.Errorf("etcd %s: %w: %w", s.endpoints, store.ErrBatchTooBig, err)
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrPermissionDenied):
		return fmt.Errorf("etcd %s: refused, nothing written: %w", s.endpoints, err)
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.FailedPrecondition, codes.ResourceExhausted:
		return fmt.Errorf("etcd %s: refused, nothing written: %w", s.endpoints, err)
	}
	return fmt.Errorf("etcd %s: %w: %w", s.endpoints, ErrEtcdOutcomeUnknown, err)
}

func (s *etcdStore) CompareAndSet(path string, expect uint64, value []byte) (uint64, error) {
	return store.CompareAndSetOne(s, path, expect, value)
}

func (s *etcdStore) CompareAndDelete(path string, expect uint64) error {
	return store.CompareAndDeleteOne(s, path, expect)
}

var _ store.MetadataBackend = (*etcdStore)(nil)
