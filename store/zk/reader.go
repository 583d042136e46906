package zk

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermedic/ledgermedic/formats/jute"
)

// zkReader is a second ZooKeeper session of our own that reads with multiRead
// (ZooKeeper 3.6+): one request carries many getData and getChildren operations
// and one response answers them all, where go-zookeeper sends one request per
// node. It only reads; writes stay on the go-zookeeper session, so before reading
// what that session wrote the reader syncs (see zkStore.syncReads).
type zkReader struct {
	addr    string
	conn    net.Conn
	timeout time.Duration // each request
	session time.Duration // negotiated session timeout

	wmu sync.Mutex // one packet at a time on the wire

	mu      sync.Mutex
	xid     int32
	pending map[int32]chan zkReply
	err     error // set once the session is unusable; every later call fails with it

	zxid atomic.Int64 // the highest zxid any reply carried: what the server had applied
	done chan struct{}

	multiReads, syncs atomic.Int64 // requests sent, for the tests
}

// zkReply is one response: its ReplyHeader's zxid and error code, and its body.
type zkReply struct {
	zxid int64
	code int32
	body []byte
}

// Limits of the reader.
const (
	// zkReadMaxResponse bounds one response packet. Nodes are at most the server's
	// jute.maxbuffer (1 MB by default), and batches are sized to expect about
	// zkReadTargetBytes, so a larger packet is a batch of unexpectedly big nodes:
	// its bytes are skipped and the batch is read node by node instead.
	zkReadMaxResponse = 64 << 20
	// zkReadTargetBytes is the response size a batch is planned for.
	zkReadTargetBytes = 1 << 20
	// zkReadMaxOps bounds the operations of one multiRead; with paths of up to a
	// few hundred bytes the request stays far under the server's 1 MB limit.
	zkReadMaxOps = 128
	// zkReadInflight is how many multiReads one walk or GetNodes keeps in flight.
	zkReadInflight = 4
	// zkReadMaxRequest bounds a request's bytes (jute.maxbuffer is 0xfffff).
	zkReadMaxRequest = 256 << 10
)

// errReaderDown: the read session failed (connection lost, refused or timed out,
// or the server does not implement multiRead); the caller reads through
// go-zookeeper instead.
var errReaderDown = errors.New("multiRead session unavailable")

// dialZKReader opens a session on the first host that accepts one: connect
// handshake, digest auth when given, then a multiRead of root, which tells a
// server that does not implement it (it answers UNIMPLEMENTED and closes the
// session) before any real read depends on it. A failed probe is taken as such a
// server: the store then never dials again (it reads through go-zookeeper).
func dialZKReader(hosts []string, session, dial, timeout time.Duration, digest, root string) (*zkReader, error) {
	var errs []error
	for _, h := range hosts {
		r, err := dialZKReaderHost(h, session, dial, timeout, digest)
		if err == nil {
			if _, err = r.multiRead([]zkReadOp{{path: root}}); err == nil {
				return r, nil
			}
			r.close(err)
			// A server that took the session but not the request: whether it said
			// UNIMPLEMENTED or just closed the connection, it will not serve one later.
			// Unless it went away: one that no longer accepts a connection died.
			if !errors.Is(err, errZKUnimplemented) && !acceptsConnections(h, dial) {
				return nil, fmt.Errorf("%s: %w", h, err)
			}
			return nil, fmt.Errorf("%s: %w (%w)", h, errZKUnimplemented, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", h, err))
	}
	return nil, errors.Join(errs...)
}

// acceptsConnections reports whether addr still accepts a TCP connection.
func acceptsConnections(addr string, timeout time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// dial bounds connecting and the handshake; timeout each later request.
func dialZKReaderHost(addr string, session, dial, timeout time.Duration, digest string) (*zkReader, error) {
	conn, err := net.DialTimeout("tcp", addr, dial)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(dial))
	// ConnectRequest: protocol version, last zxid seen, timeout (ms), session id
	// (0: new), password (16 zero bytes for a new session), read-only flag.
	w := &juteWriter{b: make([]byte, 4, 64)}
	w.int32(0)
	w.int64(0)
	w.int32(int32(session / time.Millisecond))
	w.int64(0)
	w.buffer(make([]byte, 16))
	w.bool(false)
	binary.BigEndian.PutUint32(w.b, uint32(len(w.b)-4))
	br := bufio.NewReaderSize(conn, 64<<10)
	pkt, err := writeRead(conn, br, w.b)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect handshake: %w", err)
	}
	// ConnectResponse: protocol version, negotiated timeout, session id, password.
	cr := jute.NewReader(pkt)
	_, _ = cr.Int32("connect response protocolVersion")
	negotiated, _ := cr.Int32("connect response timeOut")
	_, _ = cr.Int64("connect response sessionId")
	_, _ = cr.Buffer("connect response passwd")
	if cr.Err() != nil || negotiated <= 0 {
		conn.Close()
		return nil, fmt.Errorf("connect handshake: no session (timeout %d, %v)", negotiated, decodeErr(cr.Err()))
	}
	if digest != "" {
		// AuthPacket (type 0, scheme, credentials) under the reserved auth xid.
		pkt, err := writeRead(conn, br, zkPacket(zkXidAuth, zkOpAuth, func(w *juteWriter) {
			w.int32(0)
			w.string("digest")
			w.buffer([]byte(digest))
		}))
		if err == nil {
			var code int32
			_, _, code, _, err = zkReplyHeader(pkt)
			if err == nil && code != 0 {
				err = zkCodeError(code)
			}
		}
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("digest auth: %w", err)
		}
	}
	_ = conn.SetDeadline(time.Time{})
	r := &zkReader{
		addr: addr, conn: conn, timeout: timeout,
		session: time.Duration(negotiated) * time.Millisecond,
		pending: map[int32]chan zkReply{}, done: make(chan struct{}),
	}
	go r.readLoop(br)
	go r.pingLoop()
	return r, nil
}

// writeRead writes one packet and reads the next one back (the handshake, before
// the read loop runs).
func writeRead(conn net.Conn, br *bufio.Reader, pkt []byte) ([]byte, error) {
	if _, err := conn.Write(pkt); err != nil {
		return nil, err
	}
	return readPacket(br, 1<<20)
}

// readPacket reads one length-prefixed packet of at most limit bytes. A longer one
// is skipped (its bytes read and dropped) and reported as errZKTooBig.
func readPacket(br *bufio.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 0 {
		return nil, fmt.Errorf("%w: packet length %d", errZKDecode, n)
	}
	if n > limit {
		head := make([]byte, min(n, 16))
		if _, err := io.ReadFull(br, head); err != nil {
			return nil, err
		}
		if _, err := io.CopyN(io.Discard, br, int64(n-len(head))); err != nil {
			return nil, err
		}
		return head, fmt.Errorf("%w: %d bytes, over %d", errZKTooBig, n, limit)
	}
	pkt := make([]byte, n)
	if _, err := io.ReadFull(br, pkt); err != nil {
		return nil, err
	}
	return pkt, nil
}

var errZKTooBig = errors.New("response too large")

// readLoop hands each response to the request waiting for its xid. A packet too
// large is failed for its request only; anything else unreadable ends the session.
func (r *zkReader) readLoop(br *bufio.Reader) {
	for {
		// The server answers pings within a third of the session timeout; silence
		// for the whole timeout is a dead connection.
		_ = r.conn.SetReadDeadline(time.Now().Add(r.session))
		pkt, err := readPacket(br, zkReadMaxResponse)
		tooBig := errors.Is(err, errZKTooBig)
		if err != nil && !tooBig {
			r.close(fmt.Errorf("read from %s: %w", r.addr, err))
			return
		}
		xid, zxid, code, body, herr := zkReplyHeader(pkt)
		if herr != nil {
			r.close(fmt.Errorf("read from %s: %w", r.addr, herr))
			return
		}
		if zxid > r.zxid.Load() {
			r.zxid.Store(zxid) // only this goroutine stores
		}
		if xid == zkXidPing || xid == zkXidWatch {
			continue
		}
		r.mu.Lock()
		ch, ok := r.pending[xid]
		delete(r.pending, xid)
		r.mu.Unlock()
		if !ok {
			continue // its caller gave up (timeout) and failed the session already
		}
		if tooBig {
			ch <- zkReply{code: zkCodeTooBig}
			continue
		}
		ch <- zkReply{zxid: zxid, code: code, body: body}
	}
}

// zkCodeTooBig marks a reply whose packet was skipped (not a server code).
const zkCodeTooBig = 1

func (r *zkReader) pingLoop() {
	t := time.NewTicker(max(r.session/3, 100*time.Millisecond))
	defer t.Stop()
	ping := zkPacket(zkXidPing, zkOpPing, nil)
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			if err := r.write(ping); err != nil {
				r.close(err)
				return
			}
		}
	}
}

func (r *zkReader) write(pkt []byte) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_ = r.conn.SetWriteDeadline(time.Now().Add(r.timeout))
	if _, err := r.conn.Write(pkt); err != nil {
		return fmt.Errorf("write to %s: %w", r.addr, err)
	}
	return nil
}

// close ends the session (once) and fails every request waiting on it.
func (r *zkReader) close(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.err = cause
	close(r.done)
	r.conn.Close()
	for xid, ch := range r.pending {
		close(ch)
		delete(r.pending, xid)
	}
}

// shutdown ends the session politely: a closeSession request (op -11), so the
// server drops it now rather than after the session timeout.
func (r *zkReader) shutdown() {
	if r.failed() == nil {
		_ = r.write(zkPacket(1<<30, zkOpCloseSession, nil))
	}
	r.close(errors.New("store closed"))
}

// failed is the reason the session ended, nil while it works.
func (r *zkReader) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// zkCall is one request in flight.
type zkCall struct {
	r  *zkReader
	ch chan zkReply
}

// start sends one request; wait collects its reply. Requests are answered in the
// order they were sent, so a sync started before a read is applied before it.
func (r *zkReader) start(op int32, body func(*juteWriter)) (zkCall, error) {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return zkCall{}, fmt.Errorf("%w: %w", errReaderDown, r.err)
	}
	r.xid++
	if r.xid <= 0 {
		r.xid = 1
	}
	xid := r.xid
	ch := make(chan zkReply, 1)
	r.pending[xid] = ch
	r.mu.Unlock()
	if err := r.write(zkPacket(xid, op, body)); err != nil {
		r.close(err)
		return zkCall{}, fmt.Errorf("%w: %w", errReaderDown, err)
	}
	return zkCall{r: r, ch: ch}, nil
}

func (c zkCall) wait() (zkReply, error) {
	timer := time.NewTimer(c.r.timeout)
	defer timer.Stop()
	select {
	case rep, ok := <-c.ch:
		if !ok {
			return zkReply{}, fmt.Errorf("%w: %w", errReaderDown, c.r.failed())
		}
		return rep, nil
	case <-timer.C:
		// A reply may still come; the session is not trusted after a lost one.
		err := fmt.Errorf("%w (%v) from %s", errRequestTimeout, c.r.timeout, c.r.addr)
		c.r.close(err)
		return zkReply{}, fmt.Errorf("%w: %w", errReaderDown, err)
	}
}

// startMultiRead sends one multiRead of ops.
func (r *zkReader) startMultiRead(ops []zkReadOp) (zkCall, error) {
	r.multiReads.Add(1)
	return r.start(zkOpMultiRead, zkMultiReadBody(ops))
}

// finishMultiRead waits for a multiRead's reply and decodes it. A server that does
// not implement multiRead closes the session: errReaderDown.
func finishMultiRead(c zkCall, ops []zkReadOp) ([]zkReadResult, error) {
	rep, err := c.wait()
	if err != nil {
		return nil, err
	}
	switch {
	case rep.code == zkCodeTooBig:
		return nil, fmt.Errorf("%w: multiRead of %d nodes from %q: %w", errReaderDown, len(ops), ops[0].path, errZKTooBig)
	case rep.code == zkCodeUnimplemented:
		c.r.close(errZKUnimplemented)
		return nil, fmt.Errorf("%w: %w", errReaderDown, errZKUnimplemented)
	case rep.code != 0 && len(rep.body) == 0:
		// The whole request refused: read these through go-zookeeper, which
		// answers per node.
		return nil, fmt.Errorf("%w: multiRead of %d nodes from %q: %w", errReaderDown, len(ops), ops[0].path, zkCodeError(rep.code))
	}
	res, err := decodeMultiRead(rep.body, ops)
	if err != nil {
		c.r.close(err)
		return nil, fmt.Errorf("%w: multiRead of %d nodes from %q on %s: %w", errReaderDown, len(ops), ops[0].path, c.r.addr, err)
	}
	return res, nil
}

func (r *zkReader) multiRead(ops []zkReadOp) ([]zkReadResult, error) {
	c, err := r.startMultiRead(ops)
	if err != nil {
		return nil, err
	}
	return finishMultiRead(c, ops)
}

// startSync sends a sync of path: the server answers it, and every request sent
// after it on this session, only once it has applied every write the leader had
// committed when the sync reached it.
func (r *zkReader) startSync(path string) (zkCall, error) {
	r.syncs.Add(1)
	return r.start(zkOpSync, func(w *juteWriter) { w.string(path) })
}

func finishSync(c zkCall) error {
	rep, err := c.wait()
	if err != nil {
		return err
	}
	if rep.code != 0 {
		return fmt.Errorf("%w: sync: %w", errReaderDown, zkCodeError(rep.code))
	}
	return nil
}

// zkReadPlan splits ops into multiRead batches: at most zkReadMaxOps operations,
// zkReadMaxRequest request bytes and, by the sizes expected, about
// zkReadTargetBytes of response (always at least one op).
func zkReadPlan(n int, op func(int) zkReadOp, expect func(int) int) [][2]int {
	var out [][2]int
	for i := 0; i < n; {
		j, req, resp := i, 4+8+9, 0
		for j < n && j-i < zkReadMaxOps {
			o := op(j)
			req += 9 + 4 + len(o.path) + 1
			resp += expect(j)
			if j > i && (req > zkReadMaxRequest || resp > zkReadTargetBytes) {
				break
			}
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// waitN takes n reads from the rate cap, in steps its burst allows.
func (s *zkStore) waitN(ctx context.Context, n int) error {
	if s.limiter == nil {
		return nil
	}
	for n > 0 {
		k := min(n, s.limiter.Burst())
		if err := s.limiter.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}
