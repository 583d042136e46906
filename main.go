// Command ledgermedic inspects and safely repairs the on-disk state of an
// Apache Pulsar cluster. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ledgermedic/ledgermedic/app"
)

func main() {
	// Ctrl-C cancels the context: long loops stop cleanly and writes stay journaled.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, os.Args, app.ProcessEnv())
	stop()
	os.Exit(code)
}
