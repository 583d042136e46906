package rusage

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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

// ThreadsCPU of this process's threads named as the process (every Go thread
// is) is its PIDCPU, within a tick per thread; of a name no thread has, 0.
func TestThreadsCPUOfSelf(t *testing.T) {
	for start := ProcessCPU(); ProcessCPU()-start < 300*time.Millisecond; {
		for x := 0; x < 1_000_000; x++ {
			_ = x * x
		}
	}
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	whole := PIDCPU(os.Getpid())
	got := ThreadsCPU(os.Getpid(), strings.TrimSpace(string(comm)))
	if slack := time.Duration(len(tasks)+2) * clockTick; got < 200*time.Millisecond || got < whole-slack || got > whole+slack {
		t.Fatalf("ThreadsCPU = %v, PIDCPU %v (%d threads)", got, whole, len(tasks))
	}
	if n := ThreadsCPU(os.Getpid(), "no thread is called this"); n != 0 {
		t.Fatalf("ThreadsCPU of no thread = %v", n)
	}
}

// PeakRSS of a process that touched 96 MB is at least that, and 64 MB more
// than that of one that touched nothing; each runs as a child of this test
// (PeakOfChild), which first grows to 200 MB itself (a child must not report
// its parent's).
func TestPeakRSS(t *testing.T) {
	if n, err := strconv.Atoi(os.Getenv("RUSAGE_TEST_TOUCH_MB")); err == nil {
		b := make([]byte, n<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		PrintPeak(t)
		fmt.Println(b[len(b)/2])
		return
	}
	ballast := make([]byte, 200<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	peak := func(mb int) float64 {
		return PeakOfChild(t, "TestPeakRSS", fmt.Sprintf("RUSAGE_TEST_TOUCH_MB=%d", mb))
	}
	small, big := peak(1), peak(96)
	if big < 96 || big-small < 64 || small > 100 {
		t.Fatalf("peak RSS %.0f MiB touching 96 MB, %.0f MiB touching 1 MB (the parent holds %d MB)", big, small, len(ballast)>>20)
	}
}
