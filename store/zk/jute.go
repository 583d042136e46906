package zk

import (
	"encoding/binary"
	"errors"
	"fmt"

	gozk "github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/formats/jute"
)

// The ZooKeeper client protocol, as far as our own read session needs it
// (docs/formats.md, "ZooKeeper multiRead"). Every packet is a 4-byte big-endian
// length and a jute record: int32/int64 big-endian, a bool one byte, a string or a
// buffer an int32 length (-1: null) and its bytes, a vector an int32 count (-1:
// null) and its elements.

// Operation codes and reserved xids of the requests we send.
const (
	zkOpGetData      = 4
	zkOpGetChildren  = 8
	zkOpSync         = 9
	zkOpPing         = 11
	zkOpMultiRead    = 22
	zkOpAuth         = 100
	zkOpCloseSession = -11

	zkXidWatch = -1 // a watch event (we set no watches; ignored)
	zkXidPing  = -2
	zkXidAuth  = -4

	zkCodeUnimplemented = -6
	zkCodeNoNode        = -101
	zkCodeAuthFailed    = -115

	zkStatSize = 68 // 4 zxids/times, 3 versions, owner, length, children, pzxid
)

// zkReadOp is one sub-request of a multiRead: the data of a node or its children.
type zkReadOp struct {
	path string // on the server (chroot applied)
	list bool
}

// zkReadResult is the answer to one zkReadOp: code 0 and the data and Stat (or the
// children), or the server's error code for that operation alone.
type zkReadResult struct {
	code     int32
	data     []byte
	stat     gozk.Stat
	children []string
}

// juteWriter appends jute values (formats/jute).
type juteWriter struct{ b []byte }

func (w *juteWriter) int32(v int32) { w.b = jute.AppendInt32(w.b, v) }
func (w *juteWriter) int64(v int64) { w.b = jute.AppendInt64(w.b, v) }
func (w *juteWriter) bool(v bool)   { w.b = jute.AppendBool(w.b, v) }

// buffer writes a nil p as an empty buffer (length 0), not as null.
func (w *juteWriter) buffer(p []byte) {
	if p == nil {
		p = []byte{}
	}
	w.b = jute.AppendBuffer(w.b, p)
}
func (w *juteWriter) string(s string) { w.b = jute.AppendString(w.b, s) }

// zkPacket frames one request: length, RequestHeader (xid, op), body.
func zkPacket(xid, op int32, body func(*juteWriter)) []byte {
	w := &juteWriter{b: make([]byte, 4, 64)}
	w.int32(xid)
	w.int32(op)
	if body != nil {
		body(w)
	}
	binary.BigEndian.PutUint32(w.b, uint32(len(w.b)-4))
	return w.b
}

// zkMultiReadBody writes a MultiOperationRecord of getData/getChildren requests
// (path, watch=false), each after a MultiHeader(type, done=false, err=-1), ended
// by MultiHeader(-1, true, -1).
func zkMultiReadBody(ops []zkReadOp) func(*juteWriter) {
	return func(w *juteWriter) {
		for _, op := range ops {
			if op.list {
				w.int32(zkOpGetChildren)
			} else {
				w.int32(zkOpGetData)
			}
			w.bool(false)
			w.int32(-1)
			w.string(op.path)
			w.bool(false)
		}
		w.int32(-1)
		w.bool(true)
		w.int32(-1)
	}
}

// errZKDecode: the server's bytes are not the record we expect.
var errZKDecode = errors.New("malformed ZooKeeper response")

// juteReader reads jute values; the first short or invalid read sets err and every
// later read returns zero values.
type juteReader struct {
	b   []byte
	err error
}

func (r *juteReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errZKDecode, fmt.Sprintf(format, args...))
	}
}

func (r *juteReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("%s: %d bytes wanted, %d left", what, n, len(r.b))
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *juteReader) int32(what string) int32 {
	p := r.take(4, what)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (r *juteReader) int64(what string) int64 {
	p := r.take(8, what)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (r *juteReader) bool(what string) bool {
	p := r.take(1, what)
	return p != nil && p[0] != 0
}

// buffer is a length-prefixed byte string (-1: null, returned as empty).
func (r *juteReader) buffer(what string) []byte {
	n := r.int32(what)
	if n == -1 {
		return nil
	}
	if n < -1 {
		r.fail("%s: length %d", what, n)
		return nil
	}
	return r.take(int(n), what)
}

func (r *juteReader) stat() gozk.Stat {
	if r.err == nil && len(r.b) < zkStatSize {
		r.fail("stat: %d bytes wanted, %d left", zkStatSize, len(r.b))
	}
	var s gozk.Stat
	s.Czxid = r.int64("stat")
	s.Mzxid = r.int64("stat")
	s.Ctime = r.int64("stat")
	s.Mtime = r.int64("stat")
	s.Version = r.int32("stat")
	s.Cversion = r.int32("stat")
	s.Aversion = r.int32("stat")
	s.EphemeralOwner = r.int64("stat")
	s.DataLength = r.int32("stat")
	s.NumChildren = r.int32("stat")
	s.Pzxid = r.int64("stat")
	return s
}

// strings is a vector of strings; a count larger than the bytes left could hold is
// refused before anything is allocated.
func (r *juteReader) strings(what string) []string {
	n := r.int32(what)
	if n == -1 || r.err != nil {
		return nil
	}
	if n < 0 || int(n) > len(r.b)/4 {
		r.fail("%s: %d strings in %d bytes", what, n, len(r.b))
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		p := r.buffer(what)
		if r.err != nil {
			return nil
		}
		out = append(out, string(p))
	}
	return out
}

// zkReplyHeader splits a response packet (without its length) into the
// ReplyHeader (xid, zxid, err) and the body.
func zkReplyHeader(pkt []byte) (xid int32, zxid int64, code int32, body []byte, err error) {
	r := &juteReader{b: pkt}
	xid = r.int32("reply header")
	zxid = r.int64("reply header")
	code = r.int32("reply header")
	return xid, zxid, code, r.b, r.err
}

// decodeMultiRead decodes a MultiResponse to a multiRead of ops: one result per
// op, in order, each either of the op's own type (getData: data and Stat;
// getChildren: the names) or an error (type -1, then the code), then the done
// header. Anything else is an error, never a panic.
func decodeMultiRead(body []byte, ops []zkReadOp) ([]zkReadResult, error) {
	r := &juteReader{b: body}
	results := make([]zkReadResult, 0, len(ops))
	for {
		typ := r.int32("multi header")
		done := r.bool("multi header")
		hdrErr := r.int32("multi header")
		if r.err != nil {
			return nil, r.err
		}
		if done {
			break
		}
		i := len(results)
		if i >= len(ops) {
			return nil, fmt.Errorf("%w: more than the %d results asked for", errZKDecode, len(ops))
		}
		var res zkReadResult
		switch {
		case typ == -1:
			res.code = r.int32("error result")
			if r.err == nil && res.code >= 0 {
				return nil, fmt.Errorf("%w: result %d (%s): error code %d (header %d)", errZKDecode, i, ops[i].path, res.code, hdrErr)
			}
		case typ == zkOpGetData && !ops[i].list:
			res.data = r.buffer("data")
			res.stat = r.stat()
		case typ == zkOpGetChildren && ops[i].list:
			res.children = r.strings("children")
		default:
			return nil, fmt.Errorf("%w: result %d (%s): type %d", errZKDecode, i, ops[i].path, typ)
		}
		if r.err != nil {
			return nil, fmt.Errorf("result %d (%s): %w", i, ops[i].path, r.err)
		}
		results = append(results, res)
	}
	if len(results) != len(ops) {
		return nil, fmt.Errorf("%w: %d results to %d operations", errZKDecode, len(results), len(ops))
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last result", errZKDecode, len(r.b))
	}
	return results, nil
}

// zkCodeError maps a server error code to go-zookeeper's errors (which readError
// and the tests know), or a plain error naming the code.
func zkCodeError(code int32) error {
	switch code {
	case 0:
		return nil
	case zkCodeNoNode:
		return gozk.ErrNoNode
	case -102:
		return gozk.ErrNoAuth
	case -8:
		return gozk.ErrBadArguments
	case -100:
		return gozk.ErrAPIError
	case -112:
		return gozk.ErrSessionExpired
	case zkCodeAuthFailed:
		return gozk.ErrAuthFailed
	case -116:
		return gozk.ErrClosing
	case -118:
		return gozk.ErrSessionMoved
	case zkCodeUnimplemented:
		return errZKUnimplemented
	}
	return fmt.Errorf("zookeeper error code %d", code)
}

// errZKUnimplemented: the server does not know the request (multiRead before 3.6).
var errZKUnimplemented = errors.New("request not implemented by the server (UNIMPLEMENTED)")
