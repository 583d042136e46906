package zkdisk

// A txn as what it does: a list of changes, each to one node or one session.
// Replay applies them to a tree in memory (apply.go) or, one path at a time, to
// nodes a caller sorted by path (fold.go); both take the rules of each change
// from here.

// ChangeKind says what a Change does.
type ChangeKind uint8

const (
	ChangeCreate ChangeKind = iota + 1
	ChangeDelete
	ChangeSetData
	ChangeSetACL
	ChangeOpenSession
	ChangeCloseSession
)

// Change is one effect of a txn: on the node at Path, or on the session Owner.
type Change struct {
	Kind       ChangeKind
	Path       string // the node; "" for a session change
	Zxid, Time int64  // the txn's
	Data       []byte // Create, SetData (nil: null data)
	// Version is SetData's new dataVersion, SetACL's new aversion,
	// OpenSession's timeout (ms).
	Version int32
	// Owner is Create's ephemeralOwner (0 persistent, the session, or the
	// container and TTL markers) and the session of a session change.
	Owner int64
	// ParentCVersion is Create's new cversion of the parent; -1: one more than
	// the parent's (the txn does not say, as CreateTxnV0 does not).
	ParentCVersion int32
}

// Changes calls fn with each change txn makes, in the order DataTree.processTxn
// makes them. A multi with any failed op changes nothing (it was rolled back); a
// closeSession deletes the ephemerals it lists, then closes the session (whose
// other ephemerals go too: apply.go's closeSession, the Folder's closed
// sessions).
func Changes(h TxnHeader, rec Record, fn func(Change)) {
	c := Change{Zxid: h.Zxid, Time: h.Time}
	switch r := rec.(type) {
	case *CreateTxn:
		c.Kind, c.Path, c.Data, c.Owner = ChangeCreate, r.Path, r.Data, createOwner(h, r)
		c.ParentCVersion = r.ParentCVersion
		if r.V0 {
			c.ParentCVersion = -1
		}
		fn(c)
	case *DeleteTxn:
		c.Kind, c.Path = ChangeDelete, r.Path
		fn(c)
	case *SetDataTxn:
		c.Kind, c.Path, c.Data, c.Version = ChangeSetData, r.Path, r.Data, r.Version
		fn(c)
	case *SetACLTxn:
		c.Kind, c.Path, c.Version = ChangeSetACL, r.Path, r.Version
		fn(c)
	case *MultiTxn:
		for _, sub := range r.Txns {
			if _, failed := sub.(*ErrorTxn); failed {
				return
			}
		}
		for _, sub := range r.Txns {
			Changes(h, sub, fn)
		}
	case *CreateSessionTxn:
		c.Kind, c.Owner, c.Version = ChangeOpenSession, h.ClientID, r.TimeoutMs
		fn(c)
	case *CloseSessionTxn:
		for _, p := range r.Paths {
			fn(Change{Kind: ChangeDelete, Path: p, Zxid: h.Zxid, Time: h.Time})
		}
		c.Kind, c.Owner = ChangeCloseSession, h.ClientID
		fn(c)
	}
}

// createOwner is the ephemeralOwner a create gives its node.
func createOwner(h TxnHeader, r *CreateTxn) int64 {
	switch {
	case r.Type == OpCreateContainer:
		return ContainerOwner
	case r.Type == OpCreateTTL:
		return ttlMask | r.TTL
	case r.Ephemeral:
		return h.ClientID
	}
	return 0
}

// created is the node a create makes.
func created(c Change) Node {
	return Node{Path: c.Path, Data: c.Data, ACLRef: -1, Stat: Stat{
		Czxid: c.Zxid, Mzxid: c.Zxid, Ctime: c.Time, Mtime: c.Time,
		EphemeralOwner: c.Owner, Pzxid: c.Zxid,
	}}
}

// change applies a SetData or SetACL to the live node n.
func (c Change) change(n *Node) {
	switch c.Kind {
	case ChangeSetData:
		n.Data, n.Stat.Version = c.Data, c.Version
		n.Stat.Mzxid, n.Stat.Mtime = c.Zxid, c.Time
	case ChangeSetACL:
		n.Stat.Aversion = c.Version
	}
}

// ownedBy reports whether closing session id deletes n: an ephemeral node of
// that session.
func ownedBy(n *Node, id int64) bool {
	return n.Stat.EphemeralOwner == id && KindOf(id) == Ephemeral
}
