// Command benchserver serves the reference server's POST /v1/payments on
// two loopback ports, for bench/cmd/load: the whole reference server
// (idempotency layer on) on -protected, and the same payment handler
// without the layer on -unprotected. Both use the memory store. It runs
// until interrupted.
//
//	go run ./bench/cmd/benchserver -protected 127.0.0.1:18080 -unprotected 127.0.0.1:18081
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemkit/idem/internal/testserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("benchserver", flag.ContinueOnError)
	protectedAddr := fs.String("protected", "127.0.0.1:18080", "address of the protected server")
	unprotectedAddr := fs.String("unprotected", "127.0.0.1:18081", "address of the unprotected handler")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ref, err := testserver.New()
	if err != nil {
		return err
	}
	defer ref.Close()
	plain := testserver.NewMemoryStore()
	defer plain.Close()

	servers := []struct {
		addr string
		h    http.Handler
	}{{*protectedAddr, ref.Handler()}, {*unprotectedAddr, testserver.UnguardedPaymentsHandler(plain)}}
	errs := make(chan error, len(servers))
	var running []*http.Server
	for _, s := range servers {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			return err
		}
		hs := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
		running = append(running, hs)
		fmt.Printf("listening on http://%s\n", ln.Addr())
		go func() { errs <- hs.Serve(ln) }()
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, hs := range running {
		_ = hs.Shutdown(shutdownCtx)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
