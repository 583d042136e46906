package rusage

import (
	"os"
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
