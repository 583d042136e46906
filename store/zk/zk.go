package zk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"golang.org/x/time/rate"

	"github.com/ledgermedic/ledgermedic/store"
)

// ErrOutcomeUnknown: the connection to ZooKeeper was lost (or a request timed out)
// after a write was sent, so whether the server applied it is unknown. The mutation
// engine treats such a run like a crashed one: it reads the nodes back and finishes
// or rolls back.
var ErrOutcomeUnknown = errors.New("write outcome unknown (connection lost)")

// Defaults of a live ZooKeeper store (RemoteOptions zero values).
const (
	zkDefaultTimeout        = 10 * time.Second
	zkDefaultSessionTimeout = 10 * time.Second
	zkDefaultConcurrency    = 16
	// zkDefaultMaxBuffer is the jute.maxbuffer Pulsar runs ZooKeeper with (bin/pulsar:
	// -Djute.maxbuffer=10485760, "Ensure we can read bigger content from ZK"); ZooKeeper's
	// own default is 0xfffff. ?jute-maxbuffer=N in the URL says what the ensemble uses.
	zkDefaultMaxBuffer = 10 << 20
	// zkMaxBufferSlack is room in go-zookeeper's send buffer past the largest request
	// we send: the packet length and request header.
	zkMaxBufferSlack = 64 << 10
)

// zkStore is the MetadataBackend of a live ZooKeeper ensemble (zk:// URLs). Node
// paths are relative to the URL's chroot; versions are Stat.version+1 (0 = absent).
type zkStore struct {
	conn     *gozk.Conn
	u        store.URL
	hosts    string // for messages
	chroot   string
	readOnly bool
	timeout  time.Duration // connecting and each request
	conc     int           // reads in flight
	limiter  *rate.Limiter // nil: no cap

	mu     sync.Mutex // guards source.Notes and the reader fields
	source store.SourceInfo

	// The multiRead session (zk_reader.go): nil while down. Reads go through
	// go-zookeeper while it is.
	reader      *zkReader
	readHosts   []string
	readSession time.Duration
	digest      string
	readRetry   time.Time // no new dial before this
	readBackoff time.Duration
	readNoted   bool // the fallback was told (once)
	noMultiRead bool // the server does not implement it: never dial again

	marks zkWriteMarks
	sizes zkSizeEstimate

	// maxRequest bounds the bytes of one request we send: the server drops the
	// connection on a packet longer than its jute.maxbuffer (NIOServerCnxn: "Len
	// error"), which would leave a write's outcome unknown for nothing.
	maxRequest int
}

// zkOptions are the settings of one open, from RemoteOptions and the URL query.
type zkOptions struct {
	timeout, session time.Duration
	digest           string
	conc             int
	rate             float64
	maxBuffer        int // the servers' jute.maxbuffer
}

// zkSettings merges RemoteOptions (flags win) with the URL query (?digest=u:p,
// ?session-timeout=10s, ?timeout=10s).
func zkSettings(u store.URL, r store.RemoteOptions) (zkOptions, error) {
	o := zkOptions{timeout: r.Timeout, session: r.SessionTimeout, digest: r.ZKDigest, conc: r.Concurrency, rate: r.Rate}
	dur := func(key string, dst *time.Duration) error {
		v := u.Query.Get(key)
		if v == "" || *dst != 0 {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%w %q: %s=%q is not a positive duration such as 10s", store.ErrBadURL, u.String(), key, v)
		}
		*dst = d
		return nil
	}
	if err := dur("session-timeout", &o.session); err != nil {
		return o, err
	}
	if err := dur("timeout", &o.timeout); err != nil {
		return o, err
	}
	if o.digest == "" {
		o.digest = u.Query.Get("digest")
	}
	o.maxBuffer = zkDefaultMaxBuffer
	if v := u.Query.Get("jute-maxbuffer"); v != "" {
		n, err := strconv.ParseInt(v, 0, 32)
		if err != nil || n < 1024 || n > 1<<30 {
			return o, fmt.Errorf("%w %q: jute-maxbuffer=%q is not the servers' jute.maxbuffer in bytes (1024 to 1 GiB, such as 10485760)", store.ErrBadURL, u.String(), v)
		}
		o.maxBuffer = int(n)
	}
	if o.digest != "" && !strings.Contains(o.digest, ":") {
		return o, fmt.Errorf("%w %q: digest auth must be user:password", store.ErrBadURL, u.String())
	}
	if o.timeout <= 0 {
		o.timeout = zkDefaultTimeout
	}
	if o.session <= 0 {
		o.session = zkDefaultSessionTimeout
	}
	if o.conc <= 0 {
		o.conc = zkDefaultConcurrency
	}
	return o, nil
}

// zkQuiet silences go-zookeeper, which logs every reconnect attempt to stderr.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// Open connects to a live ensemble. It fails within the connect timeout when no
// server answers (go-zookeeper itself retries forever), and when the chroot does
// not exist.
func Open(u store.URL, opts store.Options) (store.MetadataBackend, error) {
	o, err := zkSettings(u, opts.Remote)
	if err != nil {
		return nil, err
	}
	s := &zkStore{
		u: u, hosts: strings.Join(u.Hosts, ","), chroot: u.Chroot, readOnly: opts.ReadOnly,
		timeout: o.timeout, conc: o.conc, maxRequest: o.maxBuffer, limiter: store.NewReadLimiter(o.rate),
	}
	// go-zookeeper encodes every request into one buffer, 1.5 MiB unless told:
	// a larger node could not be sent at all ("zk: buffer too small").
	conn, events, err := gozk.Connect(u.Hosts, o.session, gozk.WithLogger(zkQuiet{}), gozk.WithLogInfo(false),
		gozk.WithMaxConnBufferSize(o.maxBuffer+zkMaxBufferSlack))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", s.hosts, err)
	}
	s.conn = conn
	if err := s.waitSession(events); err != nil {
		conn.Close()
		return nil, err
	}
	if err := s.setup(o.digest); err != nil {
		conn.Close()
		return nil, err
	}
	s.readSession, s.digest = o.session, o.digest
	s.readHosts = readHostOrder(u.Hosts, conn.Server())
	s.mu.Lock()
	s.dialReaderLocked()
	s.mu.Unlock()
	return s, nil
}

// waitSession waits for the first session, at most the connect timeout.
func (s *zkStore) waitSession(events <-chan gozk.Event) error {
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("zookeeper %s: connection closed before a session was established", s.hosts)
			}
			if ev.State == gozk.StateHasSession {
				return nil
			}
			if ev.State == gozk.StateAuthFailed {
				return fmt.Errorf("zookeeper %s: authentication failed", s.hosts)
			}
		case <-timer.C:
			if s.conn.State() == gozk.StateHasSession {
				return nil
			}
			return fmt.Errorf("zookeeper %s: no server answered within %v (is the ensemble up and reachable?)", s.hosts, s.timeout)
		}
	}
}

// setup adds digest auth, checks the chroot and records what the view reflects.
func (s *zkStore) setup(digest string) error {
	if digest != "" {
		err := s.within(func() error { return s.conn.AddAuth("digest", []byte(digest)) })
		if err != nil {
			return fmt.Errorf("zookeeper %s: digest auth: %w", s.hosts, err)
		}
	}
	root := s.zkPath("/")
	var stat *gozk.Stat
	var exists bool
	err := s.within(func() error {
		var err error
		exists, stat, err = s.conn.Exists(root)
		return err
	})
	if err != nil {
		return fmt.Errorf("zookeeper %s: read %s: %w", s.hosts, root, err)
	}
	if !exists {
		return fmt.Errorf("zookeeper %s: chroot %s does not exist (check the path after the hosts in the URL): %w", s.hosts, s.chroot, store.ErrNotFound)
	}
	s.source = store.SourceInfo{URL: s.u.String(), Kind: store.SchemeZK, ReadOnly: s.readOnly, AsOf: time.Now().UTC()}
	if z, err := srvrZxid(s.conn.Server(), min(s.timeout, 2*time.Second)); err == nil {
		s.source.Zxid = z
	} else {
		// Without the srvr command, the root's zxids are a lower bound.
		s.source.Zxid = max(stat.Mzxid, stat.Pzxid)
		s.source.Notes = append(s.source.Notes, fmt.Sprintf("zxid %#x is a lower bound (srvr: %v)", s.source.Zxid, err))
	}
	return nil
}

// srvrZxid asks one server for its last zxid with the srvr four-letter word
// (whitelisted by default since ZooKeeper 3.5).
func srvrZxid(addr string, timeout time.Duration) (int64, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Zxid: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 0, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no Zxid line (srvr not in 4lw.commands.whitelist?)")
}

func (s *zkStore) Source() store.SourceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.source
	src.Notes = append([]string(nil), s.source.Notes...)
	return src
}

func (s *zkStore) Close() error {
	s.mu.Lock()
	if s.reader != nil {
		s.reader.shutdown()
		s.reader = nil
	}
	s.readRetry = time.Now().Add(100 * 365 * 24 * time.Hour)
	s.mu.Unlock()
	// The conn stays set: reads a failed walk or a timed-out request left running
	// still use it, and go-zookeeper answers them ErrConnectionClosed once it is
	// closed (Close is idempotent), where a nil conn would panic in them.
	s.conn.Close()
	return nil
}

// zkPath maps a node path to its path on the server (under the chroot).
func (s *zkStore) zkPath(p string) string {
	if s.chroot == "" {
		return p
	}
	if p == "/" {
		return s.chroot
	}
	return s.chroot + p
}

// errRequestTimeout: a request got no answer within the timeout.
var errRequestTimeout = errors.New("no answer within the timeout")

// within runs one request, at most the request timeout. go-zookeeper has no
// per-request deadline: a request waits until its connection is declared lost.
// fn must only write variables the caller reads when within returns nil.
func (s *zkStore) within(fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("%w (%v)", errRequestTimeout, s.timeout)
	}
}

// wait applies the read rate cap.
func (s *zkStore) wait(ctx context.Context) error {
	if s.limiter == nil {
		return nil
	}
	return s.limiter.Wait(ctx)
}

// readError maps a failed read of path to our errors, naming the path.
func (s *zkStore) readError(path string, err error) error {
	switch {
	case errors.Is(err, gozk.ErrNoNode):
		return fmt.Errorf("metadata node %q: %w", path, store.ErrNotFound)
	case errors.Is(err, gozk.ErrNoAuth):
		return fmt.Errorf("metadata node %q on zookeeper %s: not authorized: its ACL refuses this session (wrong or missing digest user:password): %w", path, s.hosts, err)
	case zkConnectionError(err):
		return fmt.Errorf("metadata node %q: zookeeper %s unreachable: %w", path, s.hosts, err)
	case errors.Is(err, gozk.ErrInvalidPath):
		return fmt.Errorf("metadata node %q: not a valid ZooKeeper path: %w", path, err)
	}
	return fmt.Errorf("metadata node %q on zookeeper %s: %w", path, s.hosts, err)
}

// zkVersion maps Stat.version (0 on create) to a store version (>= 1).
func zkVersion(st *gozk.Stat) uint64 { return uint64(st.Version) + 1 }

func (s *zkStore) Get(path string) (store.Node, error) {
	if err := s.wait(context.Background()); err != nil {
		return store.Node{}, err
	}
	var data []byte
	var st *gozk.Stat
	err := s.within(func() error {
		var err error
		data, st, err = s.conn.Get(s.zkPath(path))
		return err
	})
	if err != nil {
		return store.Node{}, s.readError(path, err)
	}
	return store.Node{Path: path, Value: data, Version: zkVersion(st)}, nil
}

var _ store.MetadataBackend = (*zkStore)(nil)
