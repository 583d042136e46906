package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/ledgermedic/ledgermedic/repair"
)

func main() {
	b, _ := os.ReadFile(os.Args[1])
	f, _ := os.Create("/tmp/h15/cpu.prof")
	pprof.StartCPUProfile(f)
	t := time.Now()
	c, bad := repair.ParseCandidates("x", b)
	pprof.StopCPUProfile()
	fmt.Println(len(c), len(bad), time.Since(t))
}
