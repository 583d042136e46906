// Package rusage gives benchmarks the CPU time of their own process, which a
// loaded machine sways less than wall time, and memory tests the peak resident
// size of the child processes they run.
package rusage

import (
	"bytes"
	"os"
	"strconv"
	"strings"
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

// PIDCPU is the user + system CPU time of process pid so far, all threads, from
// /proc/PID/stat (in clock ticks of 10 ms: sum it over many iterations), or 0
// when it cannot be read. Benchmarks read it for the server they started, which
// shares the machine's cores with the client they measure.
func PIDCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces; utime and
	// stime are fields 14 and 15, the 12th and 13th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * clockTick
}

// clockTick is USER_HZ, 100 on every Linux ABI Go supports.
const clockTick = 10 * time.Millisecond

// PeakRSS is this process's peak resident set size in bytes (VmHWM in
// /proc/self/status), or 0 where the kernel does not say. A memory test runs
// the code it measures in a child process, which reports this: the child's
// getrusage ru_maxrss is no measure, as Linux starts it at the RSS its parent
// had when it started the child.
func PeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
