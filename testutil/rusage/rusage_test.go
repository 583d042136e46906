package rusage

import (
	"os"
	"os/exec"
	"runtime"
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

const envTouchMiB = "LEDGERMEDIC_RUSAGE_TOUCH_MIB"

// PeakRSS of a child that touched 96 MiB more than another is about 96 MiB more.
func TestPeakRSSOfChild(t *testing.T) {
	if s := os.Getenv(envTouchMiB); s != "" {
		mib, _ := strconv.Atoi(s)
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		runtime.KeepAlive(b)
		return
	}
	peak := func(mib int) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSSOfChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envTouchMiB+"="+strconv.Itoa(mib))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return PeakRSS(cmd.ProcessState)
	}
	small, big := peak(0), peak(96)
	if small <= 0 || big-small < 80<<20 || big-small > 112<<20 {
		t.Errorf("peak RSS %d bytes with nothing touched, %d with 96 MiB", small, big)
	}
	if PeakRSS(nil) != 0 {
		t.Error("PeakRSS(nil) != 0")
	}
}
