package zkdisk

import (
	"strings"
)

// apply changes the tree as DataTree.processTxn does, tolerating what a fuzzy
// snapshot causes: a create of a node that exists, a change to a node already
// deleted. Such txns change nothing, as in ZooKeeper.
func apply(t *Tree, sessions map[int64]int32, h TxnHeader, rec Record) {
	Changes(h, rec, func(c Change) {
		switch c.Kind {
		case ChangeCreate:
			create(t, c)
		case ChangeDelete:
			t.remove(c.Path)
		case ChangeSetData, ChangeSetACL:
			if n, ok := t.change(c.Path); ok {
				c.change(n)
			}
		case ChangeOpenSession:
			sessions[c.Owner] = c.Version
		case ChangeCloseSession:
			closeSession(t, sessions, c.Owner)
		}
	})
}

// create makes the node of c unless it exists or its parent does not, and
// counts it in the parent's cversion.
func create(t *Tree, c Change) {
	if _, exists := t.Get(c.Path); exists {
		return
	}
	parent, ok := t.change(parentOf(c.Path))
	if !ok {
		return
	}
	cv := c.ParentCVersion
	if cv == -1 {
		cv = parent.Stat.Cversion + 1
	}
	if cv > parent.Stat.Cversion {
		parent.Stat.Cversion, parent.Stat.Pzxid = cv, c.Zxid
	}
	t.put(created(c))
	if KindOf(c.Owner) == Ephemeral {
		t.owners[c.Owner] = append(t.owners[c.Owner], c.Path)
	}
}

// closeSession deletes the ephemerals the session still owns (those its txn
// listed are gone already).
func closeSession(t *Tree, sessions map[int64]int32, id int64) {
	delete(sessions, id)
	for _, p := range t.owners[id] {
		if n, ok := t.Get(p); ok && ownedBy(n, id) {
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
