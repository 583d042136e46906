package zk

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
)

// A walk over a live ZooKeeper tree must hand nodes over in path byte order, which
// is not a depth-first order: "/t-1" sorts between "/t" and "/t/x" because '-' <
// '/'. So the walk is a lazy merge: a node sorts under its path, the listing of its
// children under path+"/" (a lower bound of every path below it). The smallest
// pending key is always the next to hand over or expand. Reads run ahead of the
// hand-over (bounded by the concurrency and a window of finished, undelivered
// reads), so the server sees a steady pipeline instead of one request at a time.

// walkItem is one read of a walk: the data of a node, or the children of one;
// or the children of a listing not yet queued (a cursor).
type walkItem struct {
	key    string // sort key: path (node) or path+"/" (listing); a cursor's next child's path
	path   string // node path (relative to the chroot); a cursor's: the listed node's
	list   bool   // a children listing
	filter string // listing and cursor: keep child names that start with this
	kids   int32  // listing only: the children the node's Stat counted (-1: unknown)
	done   bool
	idx    [2]int // positions in the two heaps

	data []byte
	stat *gozk.Stat
	gone bool // deleted while the walk ran

	// A cursor holds a listing's child names, sorted, and queues them a batch at a
	// time as the walk reaches them: a namespace of a million topics is one
	// listing, and an item for each of them at once took 420 MB.
	cursor bool
	names  []string
	next   int
}

// walkHeap orders items by key; which says which of the item's positions it keeps.
type walkHeap struct {
	items []*walkItem
	which int
}

func (h *walkHeap) Len() int           { return len(h.items) }
func (h *walkHeap) Less(i, j int) bool { return h.items[i].key < h.items[j].key }
func (h *walkHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].idx[h.which], h.items[j].idx[h.which] = i, j
}
func (h *walkHeap) Push(x any) {
	it := x.(*walkItem)
	it.idx[h.which] = len(h.items)
	h.items = append(h.items, it)
}
func (h *walkHeap) Pop() any {
	n := len(h.items) - 1
	it := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	return it
}

// walkRead is the outcome of one item's read.
type walkRead struct {
	data     []byte
	stat     *gozk.Stat
	children []string
	err      error
}

// walkResult is one batch of reads: one multiRead, or one go-zookeeper read.
type walkResult struct {
	items []*walkItem
	reads []walkRead
	err   error // the whole batch (the rate cap's wait was cancelled)
}

// zkWalk is the state of one Walk.
type zkWalk struct {
	s        *zkStore
	ctx      context.Context
	prefix   string
	start    string
	all      walkHeap // every item not yet handed over, by key
	pending  walkHeap // items not yet sent, by key
	results  chan walkResult
	inflight int
	buffered int // finished and not yet handed over
	window   int
	system   bool // the prefix asks for ZooKeeper's own /zookeeper subtree
	reader   *zkReader
}

func (s *zkStore) Walk(ctx context.Context, prefix string, fn func(store.Node) error) error {
	return s.WalkFrom(ctx, prefix, "", fn)
}

// WalkFrom walks every node under prefix whose path is >= start, in path order.
// The root "/" (the chroot itself) is not a node of the store and is never handed
// over; ZooKeeper's /zookeeper subtree is skipped unless prefix starts with it.
// The walk is not a snapshot: a node deleted while it runs is left out.
func (s *zkStore) WalkFrom(ctx context.Context, prefix, start string, fn func(store.Node) error) error {
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		return nil // every node path starts with "/"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return s.newWalk(ctx, prefix, start).run(fn)
}

// newWalk is a walk of prefix from start, its first listing queued.
func (s *zkStore) newWalk(ctx context.Context, prefix, start string) *zkWalk {
	w := &zkWalk{
		s: s, ctx: ctx, prefix: prefix, start: start,
		all: walkHeap{which: 0}, pending: walkHeap{which: 1},
		results: make(chan walkResult, max(s.conc, zkReadInflight)),
		window:  max(1024, 64*s.conc),
		system:  strings.HasPrefix(prefix, "/zookeeper"),
	}
	// The listing of the prefix's parent, filtered to names that continue it.
	base, filter := "/", ""
	if p := strings.TrimPrefix(prefix, "/"); p != "" {
		i := strings.LastIndexByte(prefix, '/')
		base, filter = prefix[:i], prefix[i+1:]
		if base == "" {
			base = "/"
		}
	}
	if r := s.activeReader(); r != nil {
		// The walk may follow our own writes (on the other session).
		if err := s.syncReader(r); err != nil {
			s.readerDown(r, err)
		} else {
			w.reader = r
		}
	}
	w.push(&walkItem{key: listKey(base), path: base, list: true, filter: filter, kids: -1})
	return w
}

func listKey(path string) string {
	if path == "/" {
		return "/"
	}
	return path + "/"
}

func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

func (w *zkWalk) push(it *walkItem) {
	heap.Push(&w.all, it)
	heap.Push(&w.pending, it)
}

func (w *zkWalk) run(fn func(store.Node) error) error {
	for w.all.Len() > 0 {
		if head := w.all.items[0]; head.cursor {
			// Nothing can be handed over before the cursor's next child: queue it.
			maxBatch, maxInflight := w.limits()
			w.expand(head, max(maxBatch, maxInflight))
			continue
		}
		w.dispatch()
		head := w.all.items[0]
		if !head.done {
			if err := w.collect(); err != nil {
				return err
			}
			continue
		}
		heap.Pop(&w.all)
		w.buffered--
		if head.list || head.gone || head.path < w.start {
			continue
		}
		if err := fn(store.Node{Path: head.path, Value: head.data, Version: zkVersion(head.stat)}); err != nil {
			return err
		}
		head.data = nil
	}
	return nil
}

// dispatch sends pending reads in key order while fewer than the concurrency are
// in flight, and while the window of undelivered reads has room (the head, and
// a batch after it, always goes: nothing can be handed over before it). Through the
// multiRead session a request carries a batch of reads and a few are in flight;
// through go-zookeeper each read is one request and conc are in flight.
func (w *zkWalk) dispatch() {
	maxBatch, maxInflight := w.limits()
	// over counts items sent past a full window in this call (-1: none may go).
	// When the window is full only the head, the smallest item not handed over,
	// may go, and with it the smallest pending items after it, up to one batch
	// (through go-zookeeper, one read each: up to the concurrency). Without them,
	// when the window filled with later subtrees while an earlier one was still
	// being listed (the whole tree: /ledgers' levels while /managed-ledgers was
	// read ahead), the rest of the earlier subtree went an item a round trip:
	// 21 s against 0.6 s for 48k nodes. The window grows by at most that much.
	over, maxOver := -1, max(maxBatch, maxInflight)
	for w.pending.Len() > 0 && w.inflight < maxInflight {
		var batch []*walkItem
		req, resp := 4+8+9, 0
		for w.pending.Len() > 0 && len(batch) < maxBatch {
			next := w.pending.items[0]
			if next.cursor {
				// Its children come next: queue a batch of them, as long as a
				// batch could go (the window checks each below).
				if w.buffered+len(batch) >= w.window && (over < 0 || over >= maxOver) {
					break
				}
				w.expand(next, maxBatch)
				continue
			}
			if w.buffered+len(batch) >= w.window {
				if over < 0 && next == w.all.items[0] {
					over = 0
				}
				if over < 0 || over >= maxOver {
					break
				}
				over++
			}
			req += 9 + 4 + len(w.s.zkPath(next.path)) + 1
			resp += w.expect(next)
			if len(batch) > 0 && (req > zkReadMaxRequest || resp > zkReadTargetBytes) {
				break
			}
			heap.Pop(&w.pending)
			batch = append(batch, next)
		}
		if len(batch) == 0 {
			return
		}
		w.inflight++
		go w.fetch(batch)
	}
}

// limits are the batch size and the requests in flight of the current read path.
func (w *zkWalk) limits() (maxBatch, maxInflight int) {
	if w.reader != nil && w.reader.failed() == nil {
		return zkReadMaxOps, zkReadInflight
	}
	return 1, w.s.conc
}

// expect is the response bytes a read is planned for: a listing by its Stat's
// count of children (names of ~40 bytes), data by the sizes read so far.
func (w *zkWalk) expect(it *walkItem) int {
	if !it.list {
		return w.s.sizes.node()
	}
	if it.kids < 0 {
		return 64 << 10
	}
	return 9 + 4 + int(it.kids)*(4+40)
}

func (w *zkWalk) fetch(items []*walkItem) {
	r := walkResult{items: items}
	if r.err = w.s.waitN(w.ctx, len(items)); r.err == nil {
		r.reads = w.read(items)
	}
	w.results <- r // never blocks: the channel holds every batch in flight
}

// read reads items through the multiRead session, or one by one through
// go-zookeeper when there is none or it fails.
func (w *zkWalk) read(items []*walkItem) []walkRead {
	if r := w.reader; r != nil && r.failed() == nil {
		reads, err := w.s.readBatch(r, items)
		if err == nil {
			return reads
		}
		w.s.readerDown(r, err)
	}
	reads := make([]walkRead, len(items))
	for i, it := range items {
		p := w.s.zkPath(it.path)
		if it.list {
			reads[i].children, _, reads[i].err = w.s.conn.Children(p)
		} else {
			reads[i].data, reads[i].stat, reads[i].err = w.s.conn.Get(p)
		}
		// A lost server, or a walk that ended, fails the rest of the batch
		// at once: each further read would wait for a reconnect that fails.
		if err := walkAbort(w.ctx, reads[i].err); err != nil {
			for j := i + 1; j < len(items); j++ {
				reads[j].err = err
			}
			break
		}
	}
	return reads
}

// walkAbort is the error that ends a batch of go-zookeeper reads early: the
// connection's (not a node's own, such as ErrNoNode or ErrNoAuth), or the walk's
// end; nil to go on.
func walkAbort(ctx context.Context, err error) error {
	if zkConnectionError(err) {
		return err
	}
	return ctx.Err()
}

// zkConnectionError reports whether err says the server, not the request, failed:
// no server reachable, the connection lost or closed, the session expired, or no
// answer in time.
func zkConnectionError(err error) bool {
	return errors.Is(err, gozk.ErrNoServer) || errors.Is(err, gozk.ErrConnectionClosed) || errors.Is(err, gozk.ErrClosing) ||
		errors.Is(err, gozk.ErrSessionExpired) || errors.Is(err, errRequestTimeout)
}

// collect waits for one read to finish and files its result: a node with children
// adds the listing of them, a listing adds its children.
func (w *zkWalk) collect() error {
	stall := w.s.timeout
	if w.s.limiter != nil {
		maxBatch, maxInflight := w.limits()
		inflight := max(w.s.conc, maxBatch*maxInflight)
		stall += time.Duration(float64(time.Second) * float64(inflight) / float64(w.s.limiter.Limit()))
	}
	timer := time.NewTimer(stall)
	defer timer.Stop()
	var r walkResult
	select {
	case r = <-w.results:
	case <-w.ctx.Done():
		return w.ctx.Err()
	case <-timer.C:
		return fmt.Errorf("walk %q: zookeeper %s: %w (%v)", w.prefix, w.s.hosts, errRequestTimeout, stall)
	}
	w.inflight--
	for i, it := range r.items {
		it.done = true
		w.buffered++
		rd := walkRead{err: r.err}
		if r.err == nil {
			rd = r.reads[i]
		}
		if err := w.file(it, rd); err != nil {
			return err
		}
	}
	return nil
}

// file records one read: a node with children adds the listing of them, a listing
// adds its children.
func (w *zkWalk) file(it *walkItem, r walkRead) error {
	switch {
	case errors.Is(r.err, gozk.ErrNoNode):
		it.gone = true
	case r.err != nil:
		return fmt.Errorf("walk %q: %w", w.prefix, w.s.readError(it.path, r.err))
	case it.list:
		w.addChildren(it, r.children)
	default:
		it.data, it.stat = r.data, r.stat
		if r.stat.NumChildren > 0 && w.wanted(listKey(it.path)) {
			w.push(&walkItem{key: listKey(it.path), path: it.path, list: true, kids: r.stat.NumChildren})
		}
	}
	return nil
}

// addChildren queues a cursor over the children of a listing, in path order.
func (w *zkWalk) addChildren(list *walkItem, names []string) {
	slices.Sort(names)
	c := &walkItem{path: list.path, filter: list.filter, cursor: true, names: names}
	if c.key, _ = w.nextChild(c); c.key != "" {
		w.push(c)
	}
}

// expand queues up to n of a cursor's children: their data when they are at
// or after start, else (when their subtree may reach start) their own listing.
// The cursor leaves both heaps when it has no child left.
func (w *zkWalk) expand(c *walkItem, n int) {
	for queued := 0; queued < n && c.next < len(c.names); c.next++ {
		p, ok := w.nextChild(c)
		switch {
		case !ok:
		case p >= w.start:
			w.push(&walkItem{key: p, path: p})
			queued++
		case w.wanted(listKey(p)):
			w.push(&walkItem{key: listKey(p), path: p, list: true, kids: -1})
			queued++
		}
	}
	if p, _ := w.nextChild(c); p != "" {
		c.key = p
		heap.Fix(&w.all, c.idx[0])
		heap.Fix(&w.pending, c.idx[1])
		return
	}
	heap.Remove(&w.all, c.idx[0])
	heap.Remove(&w.pending, c.idx[1])
}

// nextChild is the path of a cursor's next child ("" when none is left), and
// whether the walk wants it (its name continues the listing's filter, and it
// is not ZooKeeper's own /zookeeper unless the walk asked for it).
func (w *zkWalk) nextChild(c *walkItem) (path string, ok bool) {
	if c.next >= len(c.names) {
		return "", false
	}
	name := c.names[c.next]
	ok = strings.HasPrefix(name, c.filter) &&
		!(c.path == "/" && name == "zookeeper" && w.s.chroot == "" && !w.system)
	return childPath(c.path, name), ok
}

// wanted reports whether a subtree whose paths all start with key can hold a path
// >= start.
func (w *zkWalk) wanted(key string) bool {
	return key >= w.start || strings.HasPrefix(w.start, key)
}

// getNodesGets reads every path with pipelined go-zookeeper Gets (bounded by the
// concurrency and the rate cap): GetNodes without a multiRead session. One timer
// covers the batch: it fails when no answer came for the request timeout.
func (s *zkStore) getNodesGets(paths []string) ([]store.Node, error) {
	type result struct {
		i    int
		data []byte
		stat *gozk.Stat
		err  error
	}
	nodes := make([]store.Node, len(paths))
	results := make(chan result, len(paths)) // never blocks a Get left behind by a timeout
	var errs []error
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	next, inflight := 0, 0
	for done := 0; done < len(paths); done++ {
		for inflight < s.conc && next < len(paths) {
			if err := s.wait(context.Background()); err != nil {
				return nil, err
			}
			i := next
			next++
			inflight++
			nodes[i].Path = paths[i]
			go func() {
				data, stat, err := s.conn.Get(s.zkPath(paths[i]))
				results <- result{i, data, stat, err}
			}()
		}
		var r result
		select {
		case r = <-results:
		case <-timer.C:
			return nil, fmt.Errorf("read %d metadata node(s) from %q: zookeeper %s: %w (%v)", len(paths), paths[0], s.hosts, errRequestTimeout, s.timeout)
		}
		inflight--
		timer.Reset(s.timeout)
		switch {
		case errors.Is(r.err, gozk.ErrNoNode):
		case r.err != nil:
			errs = append(errs, s.readError(paths[r.i], r.err))
		default:
			nodes[r.i].Value, nodes[r.i].Version = r.data, zkVersion(r.stat)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return nodes, nil
}
