package rusage

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// PIDCPU of this process agrees with getrusage's figure, within the /proc tick.
// It spins until getrusage counts 300 ms of CPU, not for 300 ms of wall time: on
// a loaded machine (go test ./... runs packages side by side) the wall time
// buys less CPU.
func TestPIDCPUOfSelf(t *testing.T) {
	for start := ProcessCPU(); ProcessCPU()-start < 300*time.Millisecond; {
		for x := 0; x < 1_000_000; x++ {
			_ = x * x
		}
	}
	before := ProcessCPU()
	got := PIDCPU(os.Getpid())
	after := ProcessCPU()
	if got < 200*time.Millisecond {
		t.Fatalf("PIDCPU = %v after 300 ms of CPU spent spinning", got)
	}
	if got < before-2*clockTick || got > after+2*clockTick {
		t.Fatalf("PIDCPU = %v, getrusage %v..%v", got, before, after)
	}
	if PIDCPU(-1) != 0 {
		t.Fatal("PIDCPU of no process is not 0")
	}
}

// PeakRSS of a process that touched 96 MB is at least that, and 64 MB more
// than that of one that touched nothing; each runs as a child of this test,
// which first grows to 200 MB itself (a child must not report its parent's).
func TestPeakRSS(t *testing.T) {
	if n, err := strconv.Atoi(os.Getenv("RUSAGE_TEST_TOUCH_MB")); err == nil {
		b := make([]byte, n<<20)
		for i := range b {
			if i%4096 == 0 {
				b[i] = 1
			}
		}
		fmt.Printf("peak %d %d\n", PeakRSS(), b[len(b)/2])
		os.Exit(0)
	}
	ballast := make([]byte, 200<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	peak := func(mb int) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSS$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("RUSAGE_TEST_TOUCH_MB=%d", mb))
		out, err := cmd.Output()
		var p, one int64
		if _, serr := fmt.Sscanf(string(out), "peak %d %d", &p, &one); err != nil || serr != nil || one != 1 {
			t.Fatalf("child touching %d MB: %v, %v: %q", mb, err, serr, out)
		}
		return p
	}
	small, big := peak(1), peak(96)
	if big < 96<<20 || big-small < 64<<20 || small > 100<<20 {
		t.Fatalf("peak RSS %d MB touching 96 MB, %d MB touching 1 MB (the parent holds %d MB)", big>>20, small>>20, len(ballast)>>20)
	}
}
