package datadir

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/store"
)

// pulsarRootNodes are the nodes a Pulsar cluster keeps at the root of its metadata
// store (under its chroot, on ZooKeeper): the managed ledgers
// (MetaStoreImpl's PREFIX "/managed-ledgers/"), the schema locators
// (BookkeeperSchemaStorage's SchemaPath "/schemas") and the admin tree that
// `pulsar initialize-cluster-metadata` creates (BaseResources' BASE_POLICIES_PATH
// "/admin"). A store whose root holds none of them is not read as a cluster.
var pulsarRootNodes = []string{formats.ManagedLedgersRoot, formats.SchemasRoot, formats.AdminRoot} // largest values first

// The bounds of the search for Pulsar's nodes below a root that lacks them: a
// chroot is a path of a level or two (/pulsar, /clusters/east), and the search is
// a handful of reads on a store that can hold millions of nodes.
const (
	rootSearchDepth    = 2  // levels below the root
	rootSearchChildren = 32 // children listed per node
	rootSearchProbes   = 64 // candidate chroots probed in all
)

// ErrNoPulsarMetadata: the metadata store's root holds none of Pulsar's top-level
// nodes: a forgotten or wrong chroot, or a store that is not a Pulsar cluster's.
var ErrNoPulsarMetadata = errors.New("no Pulsar metadata")

// NoPulsarMetadataError says which store lacks Pulsar's nodes at its root and
// where below it (or, under a chroot, from the server's own root) they were found.
type NoPulsarMetadataError struct {
	Store         string // the store as the user named it (redacted URL, or DIR/metadata)
	Kind          string // a Scheme* constant, or "badger"
	Chroot        string // the chroot the URL gives, if any
	ChrootMissing bool   // that chroot is not a node of the store
	Empty         bool   // the store holds no node at all
	Found         []ChrootCandidate
	Truncated     bool  // the search stopped at its bounds
	SearchErr     error // the search failed part-way (Found is what it had)
}

// ChrootCandidate is one place Pulsar's nodes were found.
type ChrootCandidate struct {
	Chroot string // absolute: from the server's root
	Node   string // the Pulsar node that exists there, e.g. /pulsar/managed-ledgers
	URL    string // the store URL with that chroot; "" when the backend has no chroot
}

func (e *NoPulsarMetadataError) Unwrap() error { return ErrNoPulsarMetadata }

func (e *NoPulsarMetadataError) Error() string {
	var b strings.Builder
	roots := strings.Join(pulsarRootNodes, ", ")
	switch {
	case e.ChrootMissing:
		fmt.Fprintf(&b, "%s: %v: chroot %s does not exist", e.Store, ErrNoPulsarMetadata, e.Chroot)
	case e.Empty:
		fmt.Fprintf(&b, "%s: %v: the store holds no nodes at all", e.Store, ErrNoPulsarMetadata)
	default:
		fmt.Fprintf(&b, "%s: %v at its root (none of %s exists)", e.Store, ErrNoPulsarMetadata, roots)
	}
	for _, c := range e.Found {
		b.WriteString("; " + c.Node + " exists")
		switch {
		case c.URL != "":
			b.WriteString(": did you mean " + c.URL + "?")
		case e.Kind == "badger":
			b.WriteString(": this copy was taken without its chroot; import it again from the chroot " +
				"(ledgermedic import --metadata zk://HOST:2181" + c.Chroot + " --out NEWDIR)")
		default:
			b.WriteString(" under a prefix, but Pulsar's etcd metadata store has no chroot (its keys start at /), " +
				"and ledgermedic reads etcd from /")
		}
	}
	switch {
	case len(e.Found) > 0:
	case e.Empty && e.Kind == "badger":
		b.WriteString(" (a data dir imported or generated without metadata); name the cluster's metadata store with --metadata URL")
	case e.Empty:
		b.WriteString("; is this the cluster's metadata store?")
	default:
		fmt.Fprintf(&b, "; none of %s was found up to %d levels below the root either", roots, rootSearchDepth)
		if e.Kind == "badger" {
			b.WriteString("; name the cluster's metadata store with --metadata URL")
		} else {
			b.WriteString("; is this the cluster's metadata store, and is the chroot right (zk://HOST:2181/CHROOT, zk-data:DIR?chroot=/CHROOT)?")
		}
	}
	if e.Truncated {
		fmt.Fprintf(&b, " (the search is bounded, %d children a level and %d places in all: there may be more)", rootSearchChildren, rootSearchProbes)
	}
	if e.SearchErr != nil {
		fmt.Fprintf(&b, " (the search for them failed: %v)", e.SearchErr)
	}
	return b.String()
}

// errStopWalk ends a walk at the first node it hands over.
var errStopWalk = errors.New("stop walk")

// CheckPulsarRoot returns nil when m's root holds one of Pulsar's top-level nodes,
// else a *NoPulsarMetadataError naming where below the root (and, for a URL with a
// chroot, from the server's own root) they were found. u is the URL m was opened
// from, nil for a data dir's own store, named by name.
func CheckPulsarRoot(ctx context.Context, m store.MetadataStore, u *store.URL, name string, opts store.Options) error {
	node, err := pulsarNodeAt(ctx, m, "")
	if err != nil || node != "" {
		return err
	}
	e := &NoPulsarMetadataError{Store: name, Kind: "badger"}
	if u != nil {
		e.Store, e.Kind, e.Chroot = u.String(), u.Scheme, u.ChrootPath()
	}
	e.Empty, err = isEmpty(ctx, m)
	if err != nil {
		e.SearchErr = err
		return e
	}
	e.search(ctx, m, e.Chroot, u)
	if e.Chroot != "" && u != nil {
		if root, err := openMetadataURL(u.WithChroot(""), readOnlyOptions(opts)); err != nil {
			e.SearchErr = err
		} else {
			e.search(ctx, root, "", u)
			root.Close()
		}
	}
	return e
}

// chrootMissing turns the open error of a URL whose chroot is not a node of its
// store into a *NoPulsarMetadataError that names where Pulsar's nodes are; other
// errors are returned as they are.
func chrootMissing(u store.URL, opts store.Options, openErr error) error {
	if u.ChrootPath() == "" || !errors.Is(openErr, store.ErrNotFound) {
		return openErr
	}
	root, err := openMetadataURL(u.WithChroot(""), readOnlyOptions(opts))
	if err != nil {
		return openErr
	}
	defer root.Close()
	e := &NoPulsarMetadataError{Store: u.String(), Kind: u.Scheme, Chroot: u.ChrootPath(), ChrootMissing: true}
	e.search(context.Background(), root, "", &u)
	return e
}

func readOnlyOptions(opts store.Options) store.Options {
	opts.ReadOnly = true
	return opts
}

// search adds the places below m's root (itself at base, from the server's root)
// where one of Pulsar's nodes exists: breadth first, rootSearchDepth levels deep,
// into the children that hold none.
func (e *NoPulsarMetadataError) search(ctx context.Context, m store.MetadataStore, base string, u *store.URL) {
	level := []string{""}
	probes := 0
	for depth := 0; depth < rootSearchDepth && len(level) > 0; depth++ {
		var next []string
		for _, p := range level {
			kids, more, err := childNames(ctx, m, p, rootSearchChildren)
			if err != nil {
				e.SearchErr = err
				return
			}
			e.Truncated = e.Truncated || more
			for _, kid := range kids {
				c := p + "/" + kid
				if c == "/zookeeper" { // ZooKeeper's own subtree
					continue
				}
				if probes++; probes > rootSearchProbes {
					e.Truncated = true
					return
				}
				node, err := pulsarNodeAt(ctx, m, c)
				if err != nil {
					e.SearchErr = err
					return
				}
				if node == "" {
					next = append(next, c)
					continue
				}
				e.add(base, c, node, u)
			}
		}
		level = next
	}
}

// add records that node exists under the chroot base+c, once.
func (e *NoPulsarMetadataError) add(base, c, node string, u *store.URL) {
	abs := path.Join("/", base, c)
	for _, f := range e.Found {
		if f.Chroot == abs {
			return
		}
	}
	cand := ChrootCandidate{Chroot: abs, Node: path.Join(abs, node[len(c):])}
	if u != nil && u.HasChroot() {
		cand.URL = u.WithChrootString(abs)
	}
	e.Found = append(e.Found, cand)
}

// pulsarNodeAt returns the first of Pulsar's top-level nodes that exists under
// prefix ("" for the root), or "". Gets first: on ZooKeeper the node itself
// exists. Then, for stores without parent nodes (Pulsar's etcd store, the data
// dir: formats.md §9.4), the first node below each, smallest values first: an
// etcd walk's first page carries values, and managed-ledger nodes are the big ones.
func pulsarNodeAt(ctx context.Context, m store.MetadataStore, prefix string) (string, error) {
	for _, r := range pulsarRootNodes {
		_, err := m.Get(prefix + r)
		var te *store.TruncatedError
		switch {
		case err == nil, errors.As(err, &te):
			return prefix + r, nil
		case !errors.Is(err, store.ErrNotFound):
			return "", err
		}
	}
	for i := len(pulsarRootNodes) - 1; i >= 0; i-- {
		r := pulsarRootNodes[i]
		if _, found, err := firstNode(ctx, m, prefix+r+"/", ""); err != nil || found {
			return prefix + r, err
		}
	}
	return "", nil
}

// isEmpty reports whether m holds no node at all.
func isEmpty(ctx context.Context, m store.MetadataStore) (bool, error) {
	_, found, err := firstNode(ctx, m, "/", "")
	return !found, err
}

// firstNode is the path of the first node under prefix at or after start.
func firstNode(ctx context.Context, m store.MetadataStore, prefix, start string) (string, bool, error) {
	var p string
	found := false
	err := m.WalkFrom(ctx, prefix, start, func(n store.Node) error {
		p, found = n.Path, true
		return errStopWalk
	})
	var te *store.TruncatedError
	switch {
	case errors.As(err, &te) && te.Path != "":
		return te.Path, true, nil // the node exists; its value is damaged
	case err != nil && !errors.Is(err, errStopWalk):
		return "", false, err
	}
	return p, found, nil
}

// childNames lists up to limit names of parent's children ("" for the root), with
// a walk that skips each child's subtree once it has seen it: the interface has no
// listing, and a walk of the whole tree is what the search must not be. more
// reports a listing cut at limit.
func childNames(ctx context.Context, m store.MetadataStore, parent string, limit int) (names []string, more bool, err error) {
	pre := parent + "/"
	start := pre
	seen := map[string]bool{}
	// Paths sort byte-wise, so /a-b comes between /a and /a/x: a name can be met
	// twice (as a node and again by its subtree), never more.
	for steps := 0; steps < 2*limit+2; steps++ {
		p, found, err := firstNode(ctx, m, pre, start)
		if err != nil || !found {
			return names, false, err
		}
		name, _, deeper := strings.Cut(p[len(pre):], "/")
		switch {
		case name == "":
			start = p + "\x00"
			continue
		case deeper:
			start = pre + name + "0" // '0' follows '/': past the subtree
		default:
			start = p + "\x00"
		}
		if !seen[name] {
			if len(names) == limit {
				return names, true, nil
			}
			seen[name] = true
			names = append(names, name)
		}
	}
	return names, true, nil
}
