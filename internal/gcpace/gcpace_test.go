package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		base int
		want int
	}{
		{0, 100, 800},              // nothing measured yet: the runtime's 4 MB least goal
		{1 << 20, 100, 800},        // below 4 MB: as if 4 MB
		{8 << 20, 100, 400},        // 8 MB live + 32 MB
		{10 << 20, 100, 320},       // a live back-fill
		{32 << 20, 100, 100},       // the headroom equals the live heap
		{200 << 20, 100, 100},      // larger: the default pacing
		{200 << 20, 200, 200},      // never below the base
		{10 << 20, -1, -1},         // collection off stays off
		{(32 << 20) - 1, 100, 101}, // rounded up: never less than the headroom
	} {
		if got := Percent(c.live, c.base); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.base, got, c.want)
		}
	}
}

// headroom is how far the heap may grow past what the last collection left
// live before the next one starts: the runtime's goal minus the live heap.
func headroom() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - min(s[0].Value.Uint64(), s[1].Value.Uint64())
}

// paced collects until the headroom is at least Headroom (the hook runs after
// a cycle, on the finalizer goroutine), or fails after a few seconds.
func paced(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GC(); headroom() < Headroom; runtime.GC() {
		if time.Now().After(deadline) {
			t.Fatalf("headroom stayed %d MB (GOGC %d) %s, want at least %d MB", headroom()>>20, gogc(), what, Headroom>>20)
		}
		time.Sleep(time.Millisecond)
	}
}

// The runtime's own heap goal is the fact under test, not a count of
// collections: a count moves with the machine's load (a slow mark phase on
// busy cores lets more be allocated per cycle; CI saw the default's count
// halve between two runs of one test).
func TestStartWidensTheHeadroomUntilStopped(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: Start leaves the pacing alone (TestStartLeavesAUserGOGC)")
	}
	live := make([]byte, 8<<20) // a run's state: the default headroom is about this
	live[0] = 1
	runtime.GC()
	if h := headroom(); h >= Headroom {
		t.Fatalf("the default pacing already gives %d MB of headroom: the test needs a smaller live heap", h>>20)
	}
	stop := Start()
	paced(t, "while paced")
	inner := Start() // nested: the outer one still paces after the inner stop
	inner()
	if h := headroom(); h < Headroom { // SetGCPercent sets the goal at once
		t.Fatalf("the nested stop ended the pacing: headroom %d MB (GOGC %d)", h>>20, gogc())
	}
	paced(t, "after a nested stop")
	stop()
	// A hook that outlived its pacing would widen the headroom again after
	// one of these collections.
	for i := range 5 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond) // the finalizer goroutine's turn
		if h := headroom(); h >= Headroom {
			t.Fatalf("after stop and %d collections the headroom is %d MB (GOGC %d): the pacing did not end", i+1, h>>20, gogc())
		}
	}
	if p := gogc(); p != 100 {
		t.Errorf("GOGC after stop = %d, want the base 100", p)
	}
	runtime.KeepAlive(live)
}

func TestStartLeavesAUserGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	stop := Start()
	defer stop()
	if users != 0 {
		t.Fatalf("Start paced a run whose environment sets GOGC (users %d)", users)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC = %d, want 100 untouched", p)
	}
}

// gogc is the runtime's GOGC now.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// settles collects until GOGC is want (the hook runs after a cycle, on the
// finalizer goroutine), or fails after a few seconds.
func settles(t *testing.T, want func(int) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !want(gogc()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC stayed %d: %s", gogc(), what)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// The hook follows the live heap at every cycle: a live heap larger than the
// headroom gets the default pacing back, and a small one the headroom again.
func TestPaceFollowsTheLiveHeap(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: Start leaves the pacing alone")
	}
	stop := Start()
	defer stop()
	settles(t, func(p int) bool { return p >= 400 }, "a small live heap should get 32 MB of headroom (GOGC >= 400)")
	big := make([][]byte, 0, 100)
	for range cap(big) {
		b := make([]byte, 1<<20)
		b[0] = 1
		big = append(big, b)
	}
	settles(t, func(p int) bool { return p == 100 }, "100 MB live should get the default pacing back")
	runtime.KeepAlive(big)
	big = nil
	settles(t, func(p int) bool { return p >= 400 }, "after the live heap shrinks the headroom should return")
	stop()
	if p := gogc(); p != 100 {
		t.Errorf("GOGC after stop = %d, want 100", p)
	}
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	runtime.GC()
	if p := gogc(); p != 100 {
		t.Errorf("GOGC %d after stop and two collections: a hook outlived its pacing", p)
	}
}
