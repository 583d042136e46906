package bookkeeper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/ledgermedic/ledgermedic/formats/bkwirepb"
)

// conn is the one TCP connection to one bookie. Requests are pipelined: each
// carries its own txnId and the reader goroutine hands every response to the
// request with the same txnId (v3 matches by txnId, so answers may come in any
// order). inflight bounds the requests outstanding on it.
type conn struct {
	bookie string // bookie id, for messages
	addr   string // host:port dialled
	nc     net.Conn
	wmu    sync.Mutex // one frame written at a time
	sem    chan struct{}

	mu      sync.Mutex
	nextTxn uint64
	pending map[uint64]chan *bkwirepb.Response
	err     error // set once the connection is dead; every later call fails with it
	done    chan struct{}
}

func dial(ctx context.Context, bookie, addr string, timeout time.Duration, inflight int) (*conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", bookieName(bookie, addr), err)
	}
	c := &conn{bookie: bookie, addr: addr, nc: nc, sem: make(chan struct{}, inflight),
		pending: map[uint64]chan *bkwirepb.Response{}, done: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// readLoop delivers responses until the connection fails; a frame that is not a
// v3 response kills the connection (its bytes can no longer be trusted to frame).
func (c *conn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		// A fresh buffer per frame: the response's byte fields alias it and are
		// handed to the caller.
		b, err := readFrame(r, nil)
		if err != nil {
			c.fail(err)
			return
		}
		resp, err := decodeResponse(b)
		if err != nil {
			c.fail(err)
			return
		}
		txn := resp.GetHeader().GetTxnId()
		c.mu.Lock()
		ch, ok := c.pending[txn]
		delete(c.pending, txn)
		c.mu.Unlock()
		if ok {
			ch <- resp // buffered: never blocks
		}
		// A response to a request that timed out (or to none) is dropped.
	}
}

func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = fmt.Errorf("%s: %w", bookieName(c.bookie, c.addr), err)
	close(c.done)
	_ = c.nc.Close()
}

// dead reports the error that ended the connection, nil while it works.
func (c *conn) dead() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *conn) close() { c.fail(errors.New("connection closed")) }

// errTimeout: the bookie did not answer within the request timeout.
var errTimeout = errors.New("no answer within the timeout")

// call sends one request (build gets the txnId) and waits for its response, the
// timeout, the connection's death or ctx.
func (c *conn) call(ctx context.Context, timeout time.Duration, build func(txn uint64) *bkwirepb.Request) (*bkwirepb.Response, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.dead()
	}
	defer func() { <-c.sem }()
	ch := make(chan *bkwirepb.Response, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.nextTxn++
	txn := c.nextTxn
	c.pending[txn] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, txn)
		c.mu.Unlock()
	}
	frame, err := encodeRequest(build(txn))
	if err != nil {
		forget()
		return nil, err
	}
	c.wmu.Lock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err = c.nc.Write(frame)
	c.wmu.Unlock()
	if err != nil {
		forget()
		c.fail(err)
		return nil, c.dead()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case resp := <-ch:
		return resp, nil
	case <-t.C:
		forget()
		return nil, fmt.Errorf("%s: %w (%v)", bookieName(c.bookie, c.addr), errTimeout, timeout)
	case <-c.done:
		forget()
		return nil, c.dead()
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

// bookieName names a bookie in errors: its id, and the address dialled when the
// registry gave another.
func bookieName(bookie, addr string) string {
	if addr == bookie {
		return "bookie " + bookie
	}
	return fmt.Sprintf("bookie %s (%s)", bookie, addr)
}
