package zkdisk

import (
	"strings"
)

// apply changes the tree as DataTree.processTxn does, tolerating what a fuzzy
// snapshot causes: a create of a node that exists, a change to a node already
// deleted. Such txns change nothing, as in ZooKeeper.
func apply(t *Tree, sessions map[int64]int32, h TxnHeader, rec Record) {
	switch r := rec.(type) {
	case *CreateTxn:
		create(t, h, r)
	case *DeleteTxn:
		t.remove(r.Path)
	case *SetDataTxn:
		if n, ok := t.change(r.Path); ok {
			n.Data, n.Stat.Version = r.Data, r.Version
			n.Stat.Mzxid, n.Stat.Mtime = h.Zxid, h.Time
		}
	case *SetACLTxn:
		if n, ok := t.change(r.Path); ok {
			n.Stat.Aversion = r.Version
		}
	case *MultiTxn:
		// A multi with any failed op was rolled back: it changes nothing.
		for _, sub := range r.Txns {
			if _, failed := sub.(*ErrorTxn); failed {
				return
			}
		}
		for _, sub := range r.Txns {
			apply(t, sessions, h, sub)
		}
	case *CreateSessionTxn:
		sessions[h.ClientID] = r.TimeoutMs
	case *CloseSessionTxn:
		closeSession(t, sessions, h.ClientID, r.Paths)
	}
}

func create(t *Tree, h TxnHeader, r *CreateTxn) {
	if _, exists := t.Get(r.Path); exists {
		return
	}
	parentPath := parentOf(r.Path)
	parent, ok := t.change(parentPath)
	if !ok {
		return
	}
	var owner int64
	switch r.Type {
	case OpCreateContainer:
		owner = ContainerOwner
	case OpCreateTTL:
		owner = ttlMask | r.TTL
	default:
		if r.Ephemeral {
			owner = h.ClientID
		}
	}
	cv := r.ParentCVersion
	if r.V0 || cv == -1 {
		cv = parent.Stat.Cversion + 1
	}
	if cv > parent.Stat.Cversion {
		parent.Stat.Cversion, parent.Stat.Pzxid = cv, h.Zxid
	}
	t.put(Node{Path: r.Path, Data: r.Data, ACLRef: -1, Stat: Stat{
		Czxid: h.Zxid, Mzxid: h.Zxid, Ctime: h.Time, Mtime: h.Time,
		EphemeralOwner: owner, Pzxid: h.Zxid,
	}})
	if owner == h.ClientID && owner != 0 {
		t.owners[owner] = append(t.owners[owner], r.Path)
	}
}

// closeSession deletes the session's ephemerals: the paths the txn lists (3.6+)
// and any other node the session still owns.
func closeSession(t *Tree, sessions map[int64]int32, id int64, paths []string) {
	delete(sessions, id)
	for _, p := range paths {
		t.remove(p)
	}
	for _, p := range t.owners[id] {
		if n, ok := t.Get(p); ok && n.Stat.EphemeralOwner == id {
			t.remove(p)
		}
	}
	delete(t.owners, id)
}

func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}
