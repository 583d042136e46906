// Package rusage gives benchmarks the CPU time of their own process, which a
// loaded machine sways less than wall time, and memory tests the peak RSS of a
// child process.
package rusage

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
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
	_, cpu := statCPU("/proc/" + strconv.Itoa(pid) + "/stat")
	return cpu
}

// ThreadsCPU is PIDCPU over the threads of process pid whose names hold part
// (/proc/PID/task/TID/stat): a JVM server's JIT compiler threads ("C2
// CompilerThre") say whether it was still compiling its request paths while a
// benchmark timed it.
func ThreadsCPU(pid int, part string) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		if name, cpu := statCPU(dir + t.Name() + "/stat"); strings.Contains(name, part) {
			sum += cpu
		}
	}
	return sum
}

// statCPU reads a /proc stat file's command name and utime + stime; "", 0 when
// it cannot.
func statCPU(path string) (name string, cpu time.Duration) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0
	}
	// The command name (field 2) is in parentheses and may hold spaces; utime and
	// stime are fields 14 and 15, the 12th and 13th after it.
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return "", 0
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 13 {
		return "", 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0
	}
	return string(b[i+1 : j]), time.Duration(ut+st) * clockTick
}

// clockTick is USER_HZ, 100 on every Linux ABI Go supports.
const clockTick = 10 * time.Millisecond

// PeakRSS is this process's peak resident set size in bytes (VmHWM of
// /proc/self/status); ok is false where the kernel does not say. A test that
// measures a command's peak runs it in a child process that reports this:
// the ru_maxrss a parent gets from wait4 is no good for it, because a child
// started by fork+exec (Go's vfork with a shared address space) begins with
// its parent's peak and keeps it across exec.
func PeakRSS() (bytes int64, ok bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, found := strings.CutPrefix(line, "VmHWM:"); found {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// peakPrefix marks the line in which a child reports its peak (PrintPeak).
const peakPrefix = "peak-RSS-MiB="

// PrintPeak prints this process's peak RSS for the parent's PeakOfChild;
// a test running as such a child calls it last.
func PrintPeak(t testing.TB) {
	peak, ok := PeakRSS()
	if !ok {
		t.Skip("no /proc/self/status")
	}
	fmt.Printf("%s%.1f\n", peakPrefix, float64(peak)/(1<<20))
}

// PeakOfChild runs test (a test of this test binary) in a child process with
// env added to its environment, and returns the peak RSS in MiB the child
// printed (PrintPeak): a size's peak of its own, not sharing the parent's.
func PeakOfChild(t testing.TB, test string, env ...string) float64 {
	t.Helper()
	_, mib := RunChild(t, test, env...)
	return mib
}

// RunChild is PeakOfChild that also returns all the child printed, for what
// else it reports.
func RunChild(t testing.TB, test string, env ...string) (out string, peakMiB float64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	out = string(b)
	if err != nil {
		t.Fatalf("child %s %v: %v\n%s", test, env, err, out)
	}
	_, rest, ok := strings.Cut(out, peakPrefix)
	if !ok {
		t.Fatalf("child %s %v printed no peak:\n%s", test, env, out)
	}
	mib, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
	if err != nil {
		t.Fatalf("child %s %v: %v", test, env, err)
	}
	return out, mib
}
