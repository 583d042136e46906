// Command ledgermedic inspects and safely repairs the on-disk state of an
// Apache Pulsar cluster. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/ledgermedic/ledgermedic/app"
)

func main() {
	// Ctrl-C cancels the context: long loops stop cleanly and writes stay journaled.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := cpuProfile(os.Getenv("LEDGERMEDIC_CPUPROFILE"))
	code := app.Run(ctx, os.Args, app.ProcessEnv())
	stopProfile()
	stop()
	os.Exit(code)
}

// cpuProfile writes a CPU profile of the run to file when it is set
// (LEDGERMEDIC_CPUPROFILE, for `go tool pprof`): where a run on a big cluster
// spends its time.
func cpuProfile(file string) (stop func()) {
	if file == "" {
		return func() {}
	}
	f, err := os.Create(file)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "note: LEDGERMEDIC_CPUPROFILE=%s: %v\n", file, err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
