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

// cycles allocates total bytes of garbage in small pieces, with a small live
// heap, and returns how many collections ran meanwhile.
func cycles(total int) uint32 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var keep [][]byte
	for i := 0; i < total/(64<<10); i++ {
		b := make([]byte, 64<<10)
		b[0] = byte(i)
		if i%64 == 0 { // a little stays live, as a run's state does
			keep = append(keep, b)
		}
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return after.NumGC - before.NumGC
}

func TestStartWidensTheHeadroomUntilStopped(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: Start leaves the pacing alone (TestStartLeavesAUserGOGC)")
	}
	const total = 512 << 20
	plain := cycles(total)
	stop := Start()
	paced := cycles(total)
	inner := Start() // nested: the outer stop still paces
	inner()
	nested := cycles(total)
	stop()
	again := cycles(total)
	t.Logf("collections for %d MB of garbage: default %d, paced %d, after a nested stop %d, stopped %d",
		total>>20, plain, paced, nested, again)
	// 512 MB at a 4-6 MB goal is about a hundred collections; at 32 MB of
	// headroom about sixteen (more when a cycle ends before the last one's hook
	// has run: the hook then waits for the next).
	if paced*2 > plain || nested*2 > plain {
		t.Errorf("paced runs collected %d and %d times, not half the default's %d", paced, nested, plain)
	}
	if again*2 < plain {
		t.Errorf("after stop, %d collections against the default's %d: the pacing did not end", again, plain)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC after stop = %d, want the base 100", p)
	}
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
