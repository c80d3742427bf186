// Command idem is the command-line face of the idem SDK: it runs the
// reference server (serve), checks any server against the idempotency
// protocol (check), and manages a client keystore.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(os.Getenv).ExecuteContext(ctx)
	stop()
	if err != nil {
		// cobra has printed the error; a command may ask for its own
		// status (idem check: 2 when it could not run).
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			os.Exit(coded.ExitCode())
		}
		os.Exit(1)
	}
}
