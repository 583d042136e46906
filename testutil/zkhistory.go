package testutil

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats/zkdisk"
)

// ZKHistory is a ZooKeeper dataDir written by WriteZKHistory: what it holds,
// for picking points in time and paths to read.
type ZKHistory struct {
	Dir      string  // the version-2 directory
	Zxids    []int64 // every logged txn's zxid, ascending
	Snapshot int64   // the zxid the newest good snapshot is named after
}

// WriteZKHistory writes a random ZooKeeper history into dir/version-2: an older
// snapshot, a newer one that is fuzzy (it holds changes of txns after the zxid
// it is named after, as ZooKeeper's do) and, for some seeds, damaged (a seal
// that does not check out, so readers fall back to the older one), and the txn
// logs around them, split over several files. The txns are what servers log:
// creates of persistent, ephemeral, container and TTL nodes, deletes,
// setData and setACL, multis that commit and multis that failed (a sub-txn
// error), sessions opened and closed with and without the list of their
// ephemerals; and some that a fuzzy snapshot makes replay meet: creates of
// nodes that exist, changes to nodes that do not, creates under a parent that
// is gone. Paths share prefixes and sort around '/' ("a", "a-b", "a0").
func WriteZKHistory(dir string, seed uint64) (ZKHistory, error) {
	h := &zkHistory{rng: rand.New(rand.NewPCG(seed, 41)), nodes: map[string]*zkdisk.SnapNode{}, open: map[int64]bool{}}
	h.nodes["/"] = &zkdisk.SnapNode{Path: "/", ACLRef: 1}
	v2 := filepath.Join(dir, "version-2")
	if err := os.MkdirAll(v2, 0o755); err != nil {
		return ZKHistory{}, err
	}
	txns := 150 + h.rng.IntN(400)
	oldSnap, newSnap := txns/4, txns/2+h.rng.IntN(txns/4)
	fuzz := 1 + h.rng.IntN(8) // the newer snapshot holds this many later txns too
	var logs [][]byte
	var hist ZKHistory
	hist.Dir = v2
	for i := 1; i <= txns; i++ {
		if i == 1 || h.rng.IntN(120) == 0 {
			logs = append(logs, zkdisk.AppendLogHeader(nil))
			h.logNames = append(h.logNames, filepath.Join(v2, fmt.Sprintf("log.%x", i)))
		}
		hdr, rec := h.txn(int64(i))
		logs[len(logs)-1] = zkdisk.AppendLogRecord(logs[len(logs)-1], zkdisk.EncodeTxn(hdr, rec, nil))
		hist.Zxids = append(hist.Zxids, hdr.Zxid)
		switch i {
		case oldSnap:
			if err := h.writeSnapshot(v2, int64(i), false); err != nil {
				return ZKHistory{}, err
			}
		case newSnap + fuzz:
			damaged := seed%4 == 3
			if err := h.writeSnapshot(v2, int64(newSnap), damaged); err != nil {
				return ZKHistory{}, err
			}
			hist.Snapshot = int64(newSnap)
			if damaged {
				hist.Snapshot = int64(oldSnap)
			}
		}
	}
	for i, b := range logs {
		if err := os.WriteFile(h.logNames[i], b, 0o644); err != nil {
			return ZKHistory{}, err
		}
	}
	return hist, nil
}

type zkHistory struct {
	rng      *rand.Rand
	nodes    map[string]*zkdisk.SnapNode // the server's tree
	open     map[int64]bool              // sessions open
	next     int64                       // the next session id
	logNames []string
}

var zkHistoryNames = []string{"a", "b", "a-b", "a0", "x"}

// somePath is an existing path (any: root included) or, now and then, one that
// is not there.
func (h *zkHistory) somePath() string {
	paths := slices.Sorted(maps.Keys(h.nodes))
	p := paths[h.rng.IntN(len(paths))]
	if h.rng.IntN(8) == 0 {
		return strings.TrimSuffix(p, "/") + "/" + zkHistoryNames[h.rng.IntN(len(zkHistoryNames))]
	}
	return p
}

func (h *zkHistory) session() int64 {
	if len(h.open) == 0 || h.rng.IntN(6) == 0 {
		return 0x500 // a session the history never opens
	}
	ids := slices.Sorted(maps.Keys(h.open))
	return ids[h.rng.IntN(len(ids))]
}

// txn makes the txn of zxid and applies it to the server's tree.
func (h *zkHistory) txn(zxid int64) (zkdisk.TxnHeader, zkdisk.Record) {
	hdr := zkdisk.TxnHeader{ClientID: h.session(), Zxid: zxid, Time: 1.7e12 + zxid*1000}
	var rec zkdisk.Record
	switch k := h.rng.IntN(20); {
	case k < 2 || len(h.open) == 0:
		h.next++
		hdr.ClientID = 0x100 + h.next
		h.open[hdr.ClientID] = true
		rec = &zkdisk.CreateSessionTxn{TimeoutMs: 30000}
	case k < 4:
		rec = h.closeSession(hdr.ClientID)
	case k < 7:
		rec = &zkdisk.MultiTxn{Txns: []zkdisk.Record{h.op(hdr), h.op(hdr), h.op(hdr)}}
		if h.rng.IntN(4) == 0 { // a failed multi is logged, and changes nothing
			rec.(*zkdisk.MultiTxn).Txns[1] = &zkdisk.ErrorTxn{Err: -103}
		}
	default:
		rec = h.op(hdr)
	}
	h.apply(hdr, rec)
	hdr.Type = typeOf(rec)
	return hdr, rec
}

func typeOf(rec zkdisk.Record) int32 {
	switch r := rec.(type) {
	case *zkdisk.CreateTxn:
		return r.Type
	case *zkdisk.DeleteTxn:
		return r.Type
	case *zkdisk.SetDataTxn:
		return r.Type
	case *zkdisk.SetACLTxn:
		return zkdisk.OpSetACL
	case *zkdisk.MultiTxn:
		return zkdisk.OpMulti
	case *zkdisk.CreateSessionTxn:
		return zkdisk.OpCreateSession
	case *zkdisk.CloseSessionTxn:
		return zkdisk.OpCloseSession
	}
	return zkdisk.OpError
}

// op is one node operation, mostly one the server would accept.
func (h *zkHistory) op(hdr zkdisk.TxnHeader) zkdisk.Record {
	p := h.somePath()
	n := h.nodes[p]
	switch k := h.rng.IntN(10); {
	case k < 5:
		child := strings.TrimSuffix(p, "/") + "/" + zkHistoryNames[h.rng.IntN(len(zkHistoryNames))]
		c := &zkdisk.CreateTxn{Type: zkdisk.OpCreate, Path: child, Data: fmt.Appendf(nil, "c%d", hdr.Zxid), ParentCVersion: -1}
		switch h.rng.IntN(8) {
		case 0:
			c.Type = zkdisk.OpCreateContainer
		case 1:
			c.Type, c.TTL = zkdisk.OpCreateTTL, 60000
		case 2, 3:
			c.Ephemeral = true
		case 4:
			c.Data = nil
		case 5:
			c.Data = []byte{} // empty, not null
		}
		if n != nil {
			c.ParentCVersion = n.Stat.Cversion + 1
		}
		return c
	case k < 7:
		return &zkdisk.SetDataTxn{Type: zkdisk.OpSetData, Path: p, Data: fmt.Appendf(nil, "s%d", hdr.Zxid), Version: versionOf(n) + 1}
	case k < 8:
		return &zkdisk.SetACLTxn{Path: p, ACL: []zkdisk.ACL{{Perms: 31, Scheme: "world", ID: "anyone"}}, Version: 1}
	default:
		return &zkdisk.DeleteTxn{Type: zkdisk.OpDelete, Path: p}
	}
}

func versionOf(n *zkdisk.SnapNode) int32 {
	if n == nil {
		return 0
	}
	return n.Stat.Version
}

// closeSession closes id: listing all its ephemerals (3.6+), some of them, or
// none at all (a pre-3.6 closeSession has no record).
func (h *zkHistory) closeSession(id int64) zkdisk.Record {
	delete(h.open, id)
	c := &zkdisk.CloseSessionTxn{}
	switch h.rng.IntN(3) {
	case 0:
		return c
	case 1:
		c.HasPaths = true
		for _, p := range slices.Sorted(maps.Keys(h.nodes)) {
			if h.nodes[p].Stat.EphemeralOwner == id {
				c.Paths = append(c.Paths, p)
			}
		}
	default:
		c.HasPaths, c.Paths = true, []string{}
		for _, p := range slices.Sorted(maps.Keys(h.nodes)) {
			if h.nodes[p].Stat.EphemeralOwner == id && h.rng.IntN(2) == 0 {
				c.Paths = append(c.Paths, p)
			}
		}
	}
	return c
}

// apply changes the server's tree as ZooKeeper would have (a server checks
// what replay tolerates, so what it refuses is simply not done here).
func (h *zkHistory) apply(hdr zkdisk.TxnHeader, rec zkdisk.Record) {
	zkdisk.Changes(hdr, rec, func(c zkdisk.Change) {
		switch c.Kind {
		case zkdisk.ChangeCreate:
			parent := c.Path[:max(strings.LastIndexByte(c.Path, '/'), 1)]
			if h.nodes[c.Path] != nil || h.nodes[parent] == nil {
				return
			}
			h.nodes[parent].Stat.Cversion++
			h.nodes[c.Path] = &zkdisk.SnapNode{Path: c.Path, Data: c.Data, ACLRef: 1, Stat: zkdisk.Stat{
				Czxid: c.Zxid, Mzxid: c.Zxid, Ctime: c.Time, Mtime: c.Time, EphemeralOwner: c.Owner, Pzxid: c.Zxid}}
		case zkdisk.ChangeDelete:
			if c.Path != "/" {
				for p := range h.nodes {
					if strings.HasPrefix(p, c.Path+"/") {
						return // not a leaf: ZooKeeper refuses it
					}
				}
				delete(h.nodes, c.Path)
			}
		case zkdisk.ChangeSetData:
			if n := h.nodes[c.Path]; n != nil {
				n.Data, n.Stat.Version, n.Stat.Mzxid, n.Stat.Mtime = c.Data, c.Version, c.Zxid, c.Time
			}
		case zkdisk.ChangeSetACL:
			if n := h.nodes[c.Path]; n != nil {
				n.Stat.Aversion = c.Version
			}
		case zkdisk.ChangeCloseSession:
			for p, n := range h.nodes {
				if n.Stat.EphemeralOwner == c.Owner {
					delete(h.nodes, p)
				}
			}
		}
	})
}

// writeSnapshot writes the server's tree as snapshot.<zxid> in pre-order,
// children unsorted; damaged then flips a byte in its middle.
func (h *zkHistory) writeSnapshot(dir string, zxid int64, damaged bool) error {
	name := filepath.Join(dir, fmt.Sprintf("snapshot.%x", zxid))
	if err := h.snapshotFile(name, zxid); err != nil || !damaged {
		return err
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	b[len(b)/2] ^= 0x40
	return os.WriteFile(name, b, 0o644)
}

func (h *zkHistory) snapshotFile(name string, zxid int64) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	var sessions []zkdisk.Session
	for _, id := range slices.Sorted(maps.Keys(h.open)) {
		sessions = append(sessions, zkdisk.Session{ID: id, TimeoutMs: 30000})
	}
	sw, err := zkdisk.NewSnapshotWriter(f, sessions, map[int64][]zkdisk.ACL{1: zkdisk.OpenACL})
	if err != nil {
		return err
	}
	var write func(p string) error
	write = func(p string) error {
		if err := sw.WriteNode(*h.nodes[p]); err != nil {
			return err
		}
		var kids []string
		for c := range h.nodes {
			if c != "/" && c[:max(strings.LastIndexByte(c, '/'), 1)] == p {
				kids = append(kids, c)
			}
		}
		slices.Sort(kids) // then shuffled: unsorted as a HashSet, but the same for a seed
		h.rng.Shuffle(len(kids), func(i, j int) { kids[i], kids[j] = kids[j], kids[i] })
		for _, c := range kids {
			if err := write(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write("/"); err != nil {
		return err
	}
	return sw.Finish(&zkdisk.ZxidDigest{Zxid: zxid, Version: 2, Digest: 1}, nil)
}
