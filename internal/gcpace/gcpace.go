// Package gcpace paces the garbage collector of a command's run by a fixed
// headroom: the heap may grow by at least Headroom bytes past what the last
// collection left live before the next one starts.
//
// Go's default pacing (GOGC=100) lets the heap grow by as much as is live. A run
// whose live heap is small (a back-fill holds about 10 MB) then collects every
// few megabytes allocated, and each cycle's fixed costs (stacks, globals, the
// mark workers' start and stop, the write barrier while it runs) are paid that
// often: a fifth to a quarter of a live back-fill's CPU (docs/benchmarks.md,
// "Garbage collection of a run"). A larger GOGC would
// multiply the headroom of every heap, so a large run would pay its live heap
// again in memory; a fixed headroom costs at most Headroom bytes, and nothing
// once the live heap is larger than it (then the default pacing holds).
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Headroom is the least the heap may grow by between collections.
const Headroom = 32 << 20

// minHeap is the runtime's own least heap goal at GOGC=100 (4 MB): a live heap
// below it, or none measured yet, is paced as if it were this large.
const minHeap = 4 << 20

var (
	mu    sync.Mutex
	users int // Start calls not yet stopped
	base  int // GOGC when the first user started
	gen   int // bumped by every first Start: a hook of an earlier pacing ends
)

// Start paces collections until the returned stop is called; calls nest (the
// pacing ends with the last stop). It does nothing when the environment sets
// GOGC: whoever set it chose the pacing.
func Start() (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	mu.Lock()
	defer mu.Unlock()
	users++
	if users == 1 {
		base = debug.SetGCPercent(100)
		debug.SetGCPercent(base)
		gen++
		arm(&hook{gen: gen})
		pace()
	}
	var once sync.Once
	return func() { once.Do(release) }
}

func release() {
	mu.Lock()
	defer mu.Unlock()
	if users--; users == 0 {
		debug.SetGCPercent(base)
	}
}

// hook runs pace after every collection: a finalizer runs once the object is
// found unreachable (nothing may hold it), and re-arming it makes the next
// cycle find it again. It holds a pointer so that it is not tiny-allocated
// (such objects may never be finalized).
type hook struct {
	gen int
	_   *int
}

func arm(h *hook) { runtime.SetFinalizer(h, afterCycle) }

func afterCycle(h *hook) {
	mu.Lock()
	defer mu.Unlock()
	if users == 0 || h.gen != gen {
		return // the pacing it served has ended: not re-armed
	}
	pace()
	arm(h)
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// pace sets GOGC so that the next collection waits for Headroom more bytes
// than the last one left live, or for what base would wait for if that is more.
func pace() {
	metrics.Read(liveSample)
	if liveSample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	debug.SetGCPercent(Percent(liveSample[0].Value.Uint64(), base))
}

// Percent is the GOGC that gives a live heap of live bytes a headroom of at
// least Headroom, never below base (the pacing without us). A base that turns
// collection off (negative) is kept.
func Percent(live uint64, base int) int {
	if base < 0 {
		return base
	}
	live = max(live, minHeap)
	return max(base, int((Headroom*100+live-1)/live))
}
