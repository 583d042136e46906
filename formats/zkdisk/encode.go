package zkdisk

import (
	"bufio"
	"hash"
	"hash/adler32"
	"io"
	"sort"

	"github.com/ledgermedic/ledgermedic/formats/jute"
)

// The encoders write the layouts the decoders read, as ZooKeeper writes them.
// They exist for tests, fuzz seeds and benchmarks (a snapshot of 200k nodes is
// faster to synthesise than to have a server write).

func appendACLs(b []byte, acls []ACL) []byte {
	b = jute.AppendInt32(b, int32(len(acls)))
	for _, a := range acls {
		b = jute.AppendInt32(b, a.Perms)
		b = jute.AppendString(b, a.Scheme)
		b = jute.AppendString(b, a.ID)
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
	b := jute.AppendInt32(nil, SnapMagic)
	b = jute.AppendInt32(b, 2)
	b = jute.AppendInt64(b, -1)
	b = jute.AppendInt32(b, int32(len(sessions)))
	for _, s := range sessions {
		b = jute.AppendInt64(b, s.ID)
		b = jute.AppendInt32(b, s.TimeoutMs)
	}
	refs := make([]int64, 0, len(acls))
	for r := range acls {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i] < refs[j] })
	b = jute.AppendInt32(b, int32(len(refs)))
	for _, r := range refs {
		b = jute.AppendInt64(b, r)
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
	b := jute.AppendString(sw.b[:0], p)
	b = jute.AppendBuffer(b, n.Data)
	b = jute.AppendInt64(b, n.ACLRef)
	st := n.Stat
	for _, v := range []int64{st.Czxid, st.Mzxid, st.Ctime, st.Mtime} {
		b = jute.AppendInt64(b, v)
	}
	for _, v := range []int32{st.Version, st.Cversion, st.Aversion} {
		b = jute.AppendInt32(b, v)
	}
	b = jute.AppendInt64(b, st.EphemeralOwner)
	b = jute.AppendInt64(b, st.Pzxid)
	sw.b = b
	return sw.write(b)
}

func (sw *SnapshotWriter) seal() error {
	b := jute.AppendInt64(nil, int64(sw.sum.Sum32()))
	return sw.write(jute.AppendString(b, "/"))
}

// Finish writes the end marker and seal 1; with digest, the 3.6+ digest and seal
// 2; with lastProcessed too, the 3.9 lastProcessedZxid and seal 3. It flushes.
func (sw *SnapshotWriter) Finish(digest *ZxidDigest, lastProcessed *int64) error {
	if err := sw.write(jute.AppendString(nil, "/")); err != nil {
		return err
	}
	if err := sw.seal(); err != nil {
		return err
	}
	if digest != nil {
		b := jute.AppendInt64(nil, digest.Zxid)
		b = jute.AppendInt32(b, digest.Version)
		if digest.Version < 2 {
			b = jute.AppendString(b, digest.DigestHex)
		} else {
			b = jute.AppendInt64(b, digest.Digest)
		}
		if err := sw.write(b); err != nil {
			return err
		}
		if err := sw.seal(); err != nil {
			return err
		}
		if lastProcessed != nil {
			if err := sw.write(jute.AppendInt64(nil, *lastProcessed)); err != nil {
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
	b = jute.AppendInt32(b, LogMagic)
	b = jute.AppendInt32(b, 2)
	return jute.AppendInt64(b, 0)
}

// AppendLogRecord appends one log record around txn bytes: Adler-32 of the txn
// bytes, length, the bytes, 'B'.
func AppendLogRecord(b, txn []byte) []byte {
	b = jute.AppendInt64(b, int64(adler32.Checksum(txn)))
	b = jute.AppendInt32(b, int32(len(txn)))
	b = append(b, txn...)
	return append(b, 'B')
}

// EncodeTxn encodes a txn's bytes: header, record, optional digest.
func EncodeTxn(h TxnHeader, rec Record, digest *TxnDigest) []byte {
	b := jute.AppendInt64(nil, h.ClientID)
	b = jute.AppendInt32(b, h.Cxid)
	b = jute.AppendInt64(b, h.Zxid)
	b = jute.AppendInt64(b, h.Time)
	b = jute.AppendInt32(b, h.Type)
	b = appendRecord(b, rec)
	if digest != nil {
		b = jute.AppendInt32(b, digest.Version)
		b = jute.AppendInt64(b, digest.TreeDigest)
	}
	return b
}

func appendRecord(b []byte, rec Record) []byte {
	switch r := rec.(type) {
	case nil:
	case *CreateTxn:
		b = jute.AppendString(b, r.Path)
		b = jute.AppendBuffer(b, r.Data)
		b = appendACLs(b, r.ACL)
		if r.Type == OpCreate || r.Type == OpCreate2 {
			b = append(b, boolByte(r.Ephemeral))
			if r.V0 {
				return b
			}
		}
		b = jute.AppendInt32(b, r.ParentCVersion)
		if r.Type == OpCreateTTL {
			b = jute.AppendInt64(b, r.TTL)
		}
	case *DeleteTxn:
		b = jute.AppendString(b, r.Path)
	case *SetDataTxn:
		b = jute.AppendString(b, r.Path)
		b = jute.AppendBuffer(b, r.Data)
		b = jute.AppendInt32(b, r.Version)
	case *SetACLTxn:
		b = jute.AppendString(b, r.Path)
		b = appendACLs(b, r.ACL)
		b = jute.AppendInt32(b, r.Version)
	case *CheckVersionTxn:
		b = jute.AppendString(b, r.Path)
		b = jute.AppendInt32(b, r.Version)
	case *ErrorTxn:
		b = jute.AppendInt32(b, r.Err)
	case *CreateSessionTxn:
		b = jute.AppendInt32(b, r.TimeoutMs)
	case *CloseSessionTxn:
		if r.HasPaths {
			b = jute.AppendInt32(b, int32(len(r.Paths)))
			for _, p := range r.Paths {
				b = jute.AppendString(b, p)
			}
		}
	case *MultiTxn:
		b = jute.AppendInt32(b, int32(len(r.Txns)))
		for _, sub := range r.Txns {
			b = jute.AppendInt32(b, sub.txnType())
			b = jute.AppendBuffer(b, appendRecord([]byte{}, sub))
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
