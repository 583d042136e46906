package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ledgermedic/ledgermedic/store"
)

// ErrEtcdOutcomeUnknown: the connection to etcd was lost (or the request timed out)
// while a write was in flight, so it may or may not have been applied. Re-read the
// nodes to learn which; the mutation engine's rollback and Recover do.
var ErrEtcdOutcomeUnknown = errors.New("etcd write outcome unknown (connection lost or timed out mid-request): re-read the nodes")

// Limits of one etcd transaction: the server defaults (--max-txn-ops 128,
// --max-request-bytes 1.5 MiB). A cluster configured otherwise can say so in the
// URL (?max-txn-ops=N&max-request-bytes=N).
const (
	etcdDefaultMaxTxnOps   = 128
	etcdDefaultMaxReqBytes = 3 << 19 // 1.5 MiB
	// etcdReqSlack covers the request's own framing (raft header, txn fields) so a
	// batch we accept is never refused by the server for size.
	etcdReqSlack = 4 << 10
	// etcdPerOpBytes bounds the protobuf framing of one compare plus one op.
	etcdPerOpBytes = 48
	// etcdPageKeys bounds one range read of a walk.
	etcdPageKeys = 1000
	// etcdFirstPageKeys bounds a walk's first page; each next one is four times
	// larger, up to etcdPageKeys.
	etcdFirstPageKeys  = 64
	etcdDefaultTimeout = 5 * time.Second
)

// etcdStore is a live etcd cluster holding Pulsar metadata in the layout of
// Pulsar's EtcdMetadataStore (docs/formats.md §9.4): key = node path, no parent keys.
type etcdStore struct {
	cli       *clientv3.Client
	endpoints string
	timeout   time.Duration
	limiter   *rate.Limiter // nil: no cap
	maxOps    int
	maxBytes  int
	pageKeys  int64
	source    store.SourceInfo
	readOnly  bool // opened read-only: every write is refused before it is sent
	// noSpans: a span read (getSpan) met more keys than it may read; the nodes
	// this store is asked for lie among many others, so it reads single Gets.
	noSpans atomic.Bool
	// noReadBack: a compare-and-set's read-back range met more keys than it may
	// read (CompareAndSetNodesReadBack); later writes leave verification its own read.
	noReadBack atomic.Bool
	// counted and pages are the keys the server counted for the walks' pages
	// (window.go), and those pages.
	counted, pages atomic.Int64
}

// Open connects to the endpoints u names and proves the connection with one
// read (which also yields the revision the session starts at).
func Open(u store.URL, opts store.Options) (store.MetadataBackend, error) {
	ro := opts.Remote
	q := func(key, given string) string {
		if given != "" {
			return given
		}
		return u.Query.Get(key)
	}
	s := &etcdStore{
		endpoints: strings.Join(u.Hosts, ","),
		timeout:   ro.Timeout,
		readOnly:  opts.ReadOnly,
		maxOps:    etcdDefaultMaxTxnOps,
		maxBytes:  etcdDefaultMaxReqBytes,
		pageKeys:  etcdPageKeys,
	}
	if s.timeout <= 0 {
		s.timeout = etcdDefaultTimeout
	}
	if t := u.Query.Get("timeout"); t != "" && ro.Timeout == 0 {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w %s: timeout=%q is not a duration", store.ErrBadURL, u, t)
		}
		s.timeout = d
	}
	for key, dst := range map[string]*int{"max-txn-ops": &s.maxOps, "max-request-bytes": &s.maxBytes} {
		if v := u.Query.Get(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%w %s: %s=%q is not a positive number", store.ErrBadURL, u, key, v)
			}
			*dst = n
		}
	}
	if ro.Rate > 0 {
		s.limiter = rate.NewLimiter(rate.Limit(ro.Rate), 1)
	}
	tlsCfg, err := etcdTLS(u, q("cacert", ro.EtcdCACert), q("cert", ro.EtcdCert), q("key", ro.EtcdKey))
	if err != nil {
		return nil, err
	}
	user, password := q("user", ro.EtcdUser), q("password", ro.EtcdPassword)
	if user == "" && password != "" {
		return nil, fmt.Errorf("%w %s: a password without a user", store.ErrBadURL, u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   u.Hosts,
		DialTimeout: s.timeout,
		TLS:         tlsCfg,
		Username:    user,
		Password:    password,
		Context:     context.Background(),
		Logger:      zap.NewNop(), // the client's own logging would interleave with our output
		// One retry at most: a dead endpoint must fail within the timeout.
		MaxUnaryRetries: 1,
		// The client's own cap on a request is 2 MiB (clientv3 defaultMaxCallSendMsgSize):
		// the server's --max-request-bytes is what bounds ours (checkBatch).
		MaxCallSendMsgSize: s.maxBytes + 64<<10,
	})
	if err != nil {
		return nil, s.openError(user, err)
	}
	s.cli = cli
	// A read of one key proves the endpoints answer and the credentials work.
	resp, err := cli.Get(ctx, "/", clientv3.WithKeysOnly(), clientv3.WithLimit(1))
	if err != nil {
		cli.Close()
		return nil, s.openError(user, err)
	}
	s.source = store.SourceInfo{URL: u.String(), Kind: store.SchemeEtcd, ReadOnly: s.readOnly, Revision: resp.Header.Revision}
	return s, nil
}

// openError names the endpoints and says what went wrong in an SRE's words.
func (s *etcdStore) openError(user string, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrAuthNotEnabled):
		return fmt.Errorf("etcd %s: user %q given but authentication is not enabled on the server (drop user and password): %w", s.endpoints, user, err)
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrUserEmpty), errors.Is(err, rpctypes.ErrPermissionDenied),
		status.Code(err) == codes.Unauthenticated:
		return fmt.Errorf("etcd %s: authentication for user %q failed (wrong user or password, or no access to the keys): %w", s.endpoints, user, err)
	case errors.Is(err, context.DeadlineExceeded), status.Code(err) == codes.DeadlineExceeded, status.Code(err) == codes.Unavailable:
		return fmt.Errorf("etcd %s: no answer within %v (endpoint down or unreachable): %w", s.endpoints, s.timeout, err)
	}
	return fmt.Errorf("etcd %s: %w", s.endpoints, err)
}

// etcdTLS builds the client's TLS config from PEM files; nil when no file is
// given and no endpoint is https.
func etcdTLS(u store.URL, caFile, certFile, keyFile string) (*tls.Config, error) {
	https := false
	for _, h := range u.Hosts {
		https = https || strings.HasPrefix(h, "https://")
	}
	if !https && caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("etcd CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd CA certificate %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("%w %s: etcd client certificate and key go together (cert=%q key=%q)", store.ErrBadURL, u, certFile, keyFile)
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate %s / key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func (s *etcdStore) Source() store.SourceInfo { return s.source }

func (s *etcdStore) Close() error { return s.cli.Close() }

// ctx bounds one request by the timeout, after waiting for the rate limiter.
func (s *etcdStore) request(parent context.Context) (context.Context, context.CancelFunc, error) {
	if s.limiter != nil {
		if err := s.limiter.Wait(parent); err != nil {
			return nil, nil, err
		}
	}
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	return ctx, cancel, nil
}

func (s *etcdStore) readError(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded || status.Code(err) == codes.Unavailable {
		return fmt.Errorf("%s: etcd %s: no answer within %v: %w", what, s.endpoints, s.timeout, err)
	}
	return fmt.Errorf("%s: etcd %s: %w", what, s.endpoints, err)
}

func (s *etcdStore) Get(path string) (store.Node, error) {
	ctx, cancel, err := s.request(context.Background())
	if err != nil {
		return store.Node{}, err
	}
	defer cancel()
	resp, err := s.cli.Get(ctx, path)
	if err != nil {
		return store.Node{}, s.readError(fmt.Sprintf("metadata node %q", path), err)
	}
	if len(resp.Kvs) == 0 {
		return store.Node{}, fmt.Errorf("metadata node %q: %w", path, store.ErrNotFound)
	}
	return kvNode(resp.Kvs[0]), nil
}

func kvNode(kv *mvccpb.KeyValue) store.Node {
	return store.Node{Path: string(kv.Key), Value: kv.Value, Version: uint64(kv.Version)}
}

func (s *etcdStore) Walk(ctx context.Context, prefix string, fn func(store.Node) error) error {
	return s.WalkFrom(ctx, prefix, "", fn)
}

// WalkFrom reads the prefix range in pages of up to pageKeys keys (the first ones
// smaller, see etcdFirstPageKeys), each from a window of the range that should
// hold about one page (window), every page at the revision of the first, so the
// walk is one consistent snapshot. The next page is requested while fn works
// through the current one: one request in flight, but the server's time and
// fn's overlap.
func (s *etcdStore) WalkFrom(ctx context.Context, prefix, start string, fn func(store.Node) error) error {
	begin, end := etcdRange(prefix, start)
	win := newWindow(begin, end)
	// The first pages are small and grow to pageKeys: what fn does with the
	// nodes (back-fill plans them) starts after one short round trip instead of
	// waiting for a page of pageKeys values.
	limit := min(etcdFirstPageKeys, s.pageKeys)
	to := win.to(begin)
	page := s.rangePage(ctx, prefix, begin, to, 0, limit)
	if page.err != nil {
		return page.err
	}
	rev := page.resp.Header.Revision
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for {
		kvs := page.resp.Kvs
		if len(kvs) > 0 {
			win.fit(page.resp.Count, limit, string(kvs[0].Key), string(kvs[len(kvs)-1].Key))
		} else {
			win.fit(0, limit, "", "")
		}
		// The rest of this window when the page did not hold it all, else the next.
		lo := to
		if page.resp.More && len(kvs) > 0 {
			lo = string(kvs[len(kvs)-1].Key) + "\x00"
		}
		var next chan etcdPage
		if lo < end {
			next = make(chan etcdPage, 1)
			to = win.to(lo)
			limit = min(4*limit, s.pageKeys)
			go func() { next <- s.rangePage(ctx, prefix, lo, to, rev, limit) }()
		}
		for _, kv := range kvs {
			if err := fn(kvNode(kv)); err != nil {
				cancel()
				if next != nil {
					<-next // no request outlives the walk
				}
				return err
			}
		}
		if next == nil {
			return nil
		}
		page = <-next
		if err := ctx.Err(); err != nil {
			return err // cancelled while fn ran: the page's error would only say so, wrapped
		}
		if page.err != nil {
			return page.err
		}
	}
}

// etcdPage is one range read of a walk.
type etcdPage struct {
	resp *clientv3.GetResponse
	err  error
}

// rangePage reads up to limit keys of [begin, end) at rev (0: the newest),
// after waiting for the rate limiter: one page is one read.
func (s *etcdStore) rangePage(ctx context.Context, prefix, begin, end string, rev, limit int64) etcdPage {
	rctx, cancel, err := s.request(ctx)
	if err != nil {
		return etcdPage{err: err}
	}
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(limit)}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := s.cli.Get(rctx, begin, opts...)
	if err == nil {
		s.counted.Add(resp.Count)
		s.pages.Add(1)
	}
	if errors.Is(err, rpctypes.ErrCompacted) {
		return etcdPage{err: fmt.Errorf("walk %q from %q: etcd compacted revision %d during the walk; run it again: %w", prefix, begin, rev, err)}
	}
	if err != nil {
		return etcdPage{err: s.readError(fmt.Sprintf("walk %q from %q", prefix, begin), err)}
	}
	return etcdPage{resp: resp}
}

// etcdRange is the key range [begin, end) of the nodes under prefix from start.
// Every Pulsar path starts with "/": the empty prefix walks those, not keys other
// programs keep in the same cluster.
func etcdRange(prefix, start string) (begin, end string) {
	if prefix == "" {
		prefix = "/"
	}
	return max(prefix, start), clientv3.GetPrefixRangeEnd(prefix)
}

// GetNodes reads the paths in chunks of at most maxOps, all at the revision of the
// first, so the result is one snapshot. A chunk of paths in ascending order (a
// back-fill's read-back of its batch) is read as one range over its keys, when that
// range holds few other keys: etcd spends two to three times the CPU per key on a
// Txn of single Gets (docs/benchmarks.md). Otherwise, and when the range holds more, a Txn of Gets.
func (s *etcdStore) GetNodes(paths []string) ([]store.Node, error) {
	nodes := make([]store.Node, len(paths))
	var rev int64
	for lo := 0; lo < len(paths); lo += s.maxOps {
		hi := min(lo+s.maxOps, len(paths))
		ctx, cancel, err := s.request(context.Background())
		if err != nil {
			return nil, err
		}
		r, ok, err := s.getSpan(ctx, paths[lo:hi], nodes[lo:hi], rev)
		if err == nil && !ok {
			r, err = s.getEach(ctx, paths[lo:hi], nodes[lo:hi], rev)
		}
		cancel()
		if err != nil {
			return nil, s.readError(fmt.Sprintf("read %d metadata node(s) from %q", hi-lo, paths[lo]), err)
		}
		if rev == 0 {
			rev = r
		}
	}
	return nodes, nil
}

// etcdSpanSlack bounds the keys a span read may return per path asked for (a
// topic's cursors lie between two managed-ledger keys): past it, single Gets.
const etcdSpanSlack = 4

// etcdSpanMin is the fewest paths read as a span; fewer go as single Gets.
const etcdSpanMin = 8

// getSpan reads ascending paths as one range [first, last] and fills nodes with
// the keys that match; ok false (nothing filled) when the paths are not strictly
// ascending or too few, or the range holds more than etcdSpanSlack keys a path.
// The first such range turns spans off for the store: it costs up to that many
// keys' reads for nothing, and the next batch of the same kind would too.
func (s *etcdStore) getSpan(ctx context.Context, paths []string, nodes []store.Node, rev int64) (int64, bool, error) {
	if len(paths) < etcdSpanMin || s.noSpans.Load() {
		return 0, false, nil
	}
	for i := 1; i < len(paths); i++ {
		if paths[i] <= paths[i-1] {
			return 0, false, nil
		}
	}
	opts := []clientv3.OpOption{clientv3.WithRange(paths[len(paths)-1] + "\x00"),
		clientv3.WithLimit(int64(etcdSpanSlack * len(paths)))}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := s.cli.Get(ctx, paths[0], opts...)
	if err != nil {
		return 0, false, err
	}
	if resp.More {
		s.noSpans.Store(true)
		return 0, false, nil
	}
	for i, p := range paths {
		nodes[i] = spanNode(p, resp.Kvs)
	}
	return resp.Header.Revision, true, nil
}

// spanNode is path's node among a range read's keys (sorted, as etcd returns
// them); Version 0 when the range does not hold it.
func spanNode(path string, kvs []*mvccpb.KeyValue) store.Node {
	n := store.Node{Path: path}
	if k, found := sort.Find(len(kvs), func(k int) int { return strings.Compare(path, string(kvs[k].Key)) }); found {
		n.Value, n.Version = kvs[k].Value, uint64(kvs[k].Version)
	}
	return n
}

// getEach reads the paths with one Txn of Gets.
func (s *etcdStore) getEach(ctx context.Context, paths []string, nodes []store.Node, rev int64) (int64, error) {
	ops := make([]clientv3.Op, 0, len(paths))
	for _, p := range paths {
		if rev > 0 {
			ops = append(ops, clientv3.OpGet(p, clientv3.WithRev(rev)))
		} else {
			ops = append(ops, clientv3.OpGet(p))
		}
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, err
	}
	for i, r := range resp.Responses {
		nodes[i] = store.Node{Path: paths[i]}
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
			nodes[i].Value, nodes[i].Version = kvs[0].Value, uint64(kvs[0].Version)
		}
	}
	return resp.Header.Revision, nil
}
