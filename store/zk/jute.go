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

// decodeErr marks a jute read failure (field and offset) as a malformed response.
func decodeErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", errZKDecode, err)
}

// readStat reads a Stat: 4 zxids/times, 3 versions, owner, length, children, pzxid.
// A short read is left in r.Err.
func readStat(r *jute.Reader) gozk.Stat {
	var s gozk.Stat
	s.Czxid, _ = r.Int64("stat czxid")
	s.Mzxid, _ = r.Int64("stat mzxid")
	s.Ctime, _ = r.Int64("stat ctime")
	s.Mtime, _ = r.Int64("stat mtime")
	s.Version, _ = r.Int32("stat version")
	s.Cversion, _ = r.Int32("stat cversion")
	s.Aversion, _ = r.Int32("stat aversion")
	s.EphemeralOwner, _ = r.Int64("stat ephemeralOwner")
	s.DataLength, _ = r.Int32("stat dataLength")
	s.NumChildren, _ = r.Int32("stat numChildren")
	s.Pzxid, _ = r.Int64("stat pzxid")
	return s
}

// zkReplyHeader splits a response packet (without its length) into the
// ReplyHeader (xid, zxid, err) and the body.
func zkReplyHeader(pkt []byte) (xid int32, zxid int64, code int32, body []byte, err error) {
	r := jute.NewReader(pkt)
	xid, _ = r.Int32("reply header xid")
	zxid, _ = r.Int64("reply header zxid")
	code, _ = r.Int32("reply header err")
	if err := r.Err(); err != nil {
		return 0, 0, 0, nil, decodeErr(err)
	}
	return xid, zxid, code, pkt[r.Offset():], nil
}

// decodeMultiRead decodes a MultiResponse to a multiRead of ops: one result per
// op, in order, each either of the op's own type (getData: data and Stat;
// getChildren: the names) or an error (type -1, then the code), then the done
// header. Anything else is an error, never a panic.
func decodeMultiRead(body []byte, ops []zkReadOp) ([]zkReadResult, error) {
	r := jute.NewReader(body)
	results := make([]zkReadResult, 0, len(ops))
	for {
		typ, _ := r.Int32("multi header type")
		done, _ := r.Bool("multi header done")
		hdrErr, _ := r.Int32("multi header err")
		if err := r.Err(); err != nil {
			return nil, decodeErr(err)
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
			res.code, _ = r.Int32("error result")
			if r.Err() == nil && res.code >= 0 {
				return nil, fmt.Errorf("%w: result %d (%s): error code %d (header %d)", errZKDecode, i, ops[i].path, res.code, hdrErr)
			}
		case typ == zkOpGetData && !ops[i].list:
			res.data, _ = r.Buffer("data")
			res.stat = readStat(r)
		case typ == zkOpGetChildren && ops[i].list:
			res.children, _ = r.Strings("children")
		default:
			return nil, fmt.Errorf("%w: result %d (%s): type %d", errZKDecode, i, ops[i].path, typ)
		}
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("result %d (%s): %w", i, ops[i].path, decodeErr(err))
		}
		results = append(results, res)
	}
	if len(results) != len(ops) {
		return nil, fmt.Errorf("%w: %d results to %d operations", errZKDecode, len(results), len(ops))
	}
	if r.Left() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last result", errZKDecode, r.Left())
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
