// Package rusage gives benchmarks the CPU time of their own process, which a
// loaded machine sways less than wall time.
package rusage

import (
	"syscall"
	"time"
)

// ProcessCPU is the user + system CPU time of this process so far, all threads
// (0 if the kernel will not say, which getrusage of the process itself does not do).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
