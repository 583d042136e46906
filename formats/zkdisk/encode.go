package zkdisk

import (
	"bufio"
	"encoding/binary"
	"hash"
	"hash/adler32"
	"io"
	"sort"
)

// The encoders write the layouts the decoders read, as ZooKeeper writes them.
// They exist for tests, fuzz seeds and benchmarks (a snapshot of 200k nodes is
// faster to synthesise than to have a server write).

func appendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func appendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

func appendBuffer(b, v []byte) []byte {
	if v == nil {
		return appendInt32(b, -1)
	}
	return append(appendInt32(b, int32(len(v))), v...)
}

func appendString(b []byte, s string) []byte {
	return append(appendInt32(b, int32(len(s))), s...)
}

func appendACLs(b []byte, acls []ACL) []byte {
	b = appendInt32(b, int32(len(acls)))
	for _, a := range acls {
		b = appendInt32(b, a.Perms)
		b = appendString(b, a.Scheme)
		b = appendString(b, a.ID)
	}
	return b
}

// OpenACL is world:anyone with every permission, the ACL of Pulsar's nodes.
var OpenACL = []ACL{{Perms: 31, Scheme: "world", ID: "anyone"}}

// SnapshotWriter writes a snapshot: header, sessions and ACLs first, then nodes
// in pre-order (a parent before its children), then Finish.
type SnapshotWriter struct {
	w   *bufio.Writer
	sum hash.Hash32
	b   []byte
}

// NewSnapshotWriter writes the header, sessions and ACL cache.
func NewSnapshotWriter(w io.Writer, sessions []Session, acls map[int64][]ACL) (*SnapshotWriter, error) {
	sw := &SnapshotWriter{w: bufio.NewWriterSize(w, 256<<10), sum: adler32.New()}
	b := appendInt32(nil, SnapMagic)
	b = appendInt32(b, 2)
	b = appendInt64(b, -1)
	b = appendInt32(b, int32(len(sessions)))
	for _, s := range sessions {
		b = appendInt64(b, s.ID)
		b = appendInt32(b, s.TimeoutMs)
	}
	refs := make([]int64, 0, len(acls))
	for r := range acls {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i] < refs[j] })
	b = appendInt32(b, int32(len(refs)))
	for _, r := range refs {
		b = appendInt64(b, r)
		b = appendACLs(b, acls[r])
	}
	return sw, sw.write(b)
}

func (sw *SnapshotWriter) write(b []byte) error {
	sw.sum.Write(b)
	_, err := sw.w.Write(b)
	return err
}

// WriteNode writes one node; the root is Path "/".
func (sw *SnapshotWriter) WriteNode(n SnapNode) error {
	p := n.Path
	if p == "/" {
		p = ""
	}
	b := appendString(sw.b[:0], p)
	b = appendBuffer(b, n.Data)
	b = appendInt64(b, n.ACLRef)
	st := n.Stat
	for _, v := range []int64{st.Czxid, st.Mzxid, st.Ctime, st.Mtime} {
		b = appendInt64(b, v)
	}
	for _, v := range []int32{st.Version, st.Cversion, st.Aversion} {
		b = appendInt32(b, v)
	}
	b = appendInt64(b, st.EphemeralOwner)
	b = appendInt64(b, st.Pzxid)
	sw.b = b
	return sw.write(b)
}

func (sw *SnapshotWriter) seal() error {
	b := appendInt64(nil, int64(sw.sum.Sum32()))
	return sw.write(appendString(b, "/"))
}

// Finish writes the end marker and seal 1; with digest, the 3.6+ digest and seal
// 2; with lastProcessed too, the 3.9 lastProcessedZxid and seal 3. It flushes.
func (sw *SnapshotWriter) Finish(digest *ZxidDigest, lastProcessed *int64) error {
	if err := sw.write(appendString(nil, "/")); err != nil {
		return err
	}
	if err := sw.seal(); err != nil {
		return err
	}
	if digest != nil {
		b := appendInt64(nil, digest.Zxid)
		b = appendInt32(b, digest.Version)
		if digest.Version < 2 {
			b = appendString(b, digest.DigestHex)
		} else {
			b = appendInt64(b, digest.Digest)
		}
		if err := sw.write(b); err != nil {
			return err
		}
		if err := sw.seal(); err != nil {
			return err
		}
		if lastProcessed != nil {
			if err := sw.write(appendInt64(nil, *lastProcessed)); err != nil {
				return err
			}
			if err := sw.seal(); err != nil {
				return err
			}
		}
	}
	return sw.w.Flush()
}

// AppendLogHeader appends a txn log's file header.
func AppendLogHeader(b []byte) []byte {
	b = appendInt32(b, LogMagic)
	b = appendInt32(b, 2)
	return appendInt64(b, 0)
}

// AppendLogRecord appends one log record around txn bytes: Adler-32 of the txn
// bytes, length, the bytes, 'B'.
func AppendLogRecord(b, txn []byte) []byte {
	b = appendInt64(b, int64(adler32.Checksum(txn)))
	b = appendInt32(b, int32(len(txn)))
	b = append(b, txn...)
	return append(b, 'B')
}

// EncodeTxn encodes a txn's bytes: header, record, optional digest.
func EncodeTxn(h TxnHeader, rec Record, digest *TxnDigest) []byte {
	b := appendInt64(nil, h.ClientID)
	b = appendInt32(b, h.Cxid)
	b = appendInt64(b, h.Zxid)
	b = appendInt64(b, h.Time)
	b = appendInt32(b, h.Type)
	b = appendRecord(b, rec)
	if digest != nil {
		b = appendInt32(b, digest.Version)
		b = appendInt64(b, digest.TreeDigest)
	}
	return b
}

func appendRecord(b []byte, rec Record) []byte {
	switch r := rec.(type) {
	case nil:
	case *CreateTxn:
		b = appendString(b, r.Path)
		b = appendBuffer(b, r.Data)
		b = appendACLs(b, r.ACL)
		if r.Type == OpCreate || r.Type == OpCreate2 {
			b = append(b, boolByte(r.Ephemeral))
			if r.V0 {
				return b
			}
		}
		b = appendInt32(b, r.ParentCVersion)
		if r.Type == OpCreateTTL {
			b = appendInt64(b, r.TTL)
		}
	case *DeleteTxn:
		b = appendString(b, r.Path)
	case *SetDataTxn:
		b = appendString(b, r.Path)
		b = appendBuffer(b, r.Data)
		b = appendInt32(b, r.Version)
	case *SetACLTxn:
		b = appendString(b, r.Path)
		b = appendACLs(b, r.ACL)
		b = appendInt32(b, r.Version)
	case *CheckVersionTxn:
		b = appendString(b, r.Path)
		b = appendInt32(b, r.Version)
	case *ErrorTxn:
		b = appendInt32(b, r.Err)
	case *CreateSessionTxn:
		b = appendInt32(b, r.TimeoutMs)
	case *CloseSessionTxn:
		if r.HasPaths {
			b = appendInt32(b, int32(len(r.Paths)))
			for _, p := range r.Paths {
				b = appendString(b, p)
			}
		}
	case *MultiTxn:
		b = appendInt32(b, int32(len(r.Txns)))
		for _, sub := range r.Txns {
			b = appendInt32(b, sub.txnType())
			b = appendBuffer(b, appendRecord([]byte{}, sub))
		}
	case *UnknownTxn:
		b = append(b, r.Raw...)
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
