package rusage

import (
	"os"
	"testing"
	"time"
)

// PIDCPU of this process agrees with getrusage's figure, within the /proc tick.
func TestPIDCPUOfSelf(t *testing.T) {
	deadline := time.Now().Add(300 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	before := ProcessCPU()
	got := PIDCPU(os.Getpid())
	after := ProcessCPU()
	if got < 200*time.Millisecond {
		t.Fatalf("PIDCPU = %v after 300 ms of spinning", got)
	}
	if got < before-2*clockTick || got > after+2*clockTick {
		t.Fatalf("PIDCPU = %v, getrusage %v..%v", got, before, after)
	}
	if PIDCPU(-1) != 0 {
		t.Fatal("PIDCPU of no process is not 0")
	}
}
