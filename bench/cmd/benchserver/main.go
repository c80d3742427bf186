// Command benchserver serves the reference server's POST /v1/payments on
// loopback ports, for bench/cmd/load: the whole reference server
// (idempotency layer on) once per -protected store, and the same payment
// handler without the layer once per -unprotected store. It runs until
// interrupted.
//
//	go run ./bench/cmd/benchserver -unprotected 127.0.0.1:18081 \
//		-protected 127.0.0.1:18080 \
//		-unprotected '127.0.0.1:18085,postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		-protected '127.0.0.1:18082,postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		-protected 127.0.0.1:18083,redis://127.0.0.1:6379/0
//
// -onecommit serves the reference server in one-commit mode on a
// postgres:// store (testserver.WithOneCommit).
//
// A -protected, -unprotected or -plain value is an address, optionally
// followed by a comma and the store: memory (the default), a postgres://
// DSN (pgxpool settings such as pool_max_conns go in the DSN) or a
// redis:// URL. -plain serves a handler written with net/http and
// encoding/json alone that checks and stores a payment as the reference
// handler does (plain.go), the baseline of the reference handler's own
// cost. The shared stores keep their data in their own schema (-schema,
// default idem_bench) or key prefix (-prefix, default idem-bench:), apart
// from other users of the database. Every listener also answers GET
// /debug/cpu with the process's CPU time (cpu.go), for
// bench/cmd/serverbench.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/pgstore"
	"github.com/idemkit/idem/internal/testserver/redisstore"
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

// Where the shared stores keep the benchmark's records unless -schema or
// -prefix say otherwise.
const (
	benchSchema = "idem_bench"
	benchPrefix = "idem-bench:"
)

// storeNames are where the shared stores keep their data.
type storeNames struct{ schema, prefix string }

// openTimeout bounds connecting to a shared store at start.
const openTimeout = 15 * time.Second

// serveFlag collects the values of a repeatable flag.
type serveFlag []string

func (p *serveFlag) String() string     { return strings.Join(*p, " ") }
func (p *serveFlag) Set(v string) error { *p = append(*p, v); return nil }

// splitServe splits "addr[,store]"; the store defaults to memory.
func splitServe(v string) (addr, location string) {
	addr, location, _ = strings.Cut(v, ",")
	if location == "" {
		location = "memory"
	}
	return addr, location
}

// endpoint is one listener and what it serves.
type endpoint struct {
	addr, what string
	h          http.Handler
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("benchserver", flag.ContinueOnError)
	var protected, unprotected, plain, oneCommit serveFlag
	fs.Var(&protected, "protected", "`addr[,store]` of a protected server; store is memory (default), postgres://… or redis://…; repeatable")
	fs.Var(&unprotected, "unprotected", "`addr[,store]` of the unprotected handler on that store; repeatable")
	fs.Var(&oneCommit, "onecommit", "`addr,postgres://…` of the reference server in one-commit mode on that store; repeatable")
	fs.Var(&plain, "plain", "`addr[,store]` of a plain net/http JSON handler with the same checks and effect; repeatable")
	names := storeNames{}
	fs.StringVar(&names.schema, "schema", benchSchema, "Postgres schema of the shared stores")
	fs.StringVar(&names.prefix, "prefix", benchPrefix, "Redis key prefix of the shared stores")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(protected)+len(unprotected)+len(plain)+len(oneCommit) == 0 {
		protected = serveFlag{"127.0.0.1:18080"}
		unprotected = serveFlag{"127.0.0.1:18081"}
	}

	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}()
	var endpoints []endpoint
	bare := func(values serveFlag, what string, handler func(testserver.Store) http.Handler) error {
		for _, v := range values {
			addr, location := splitServe(v)
			st, err := openStore(ctx, location, names)
			if err != nil {
				return err
			}
			if st == nil {
				st = testserver.NewMemoryStore()
			}
			closers = append(closers, st.Close)
			endpoints = append(endpoints, endpoint{addr, what + ", " + redact(location), handler(st)})
		}
		return nil
	}
	if err := bare(unprotected, "unprotected", testserver.UnguardedPaymentsHandler); err != nil {
		return err
	}
	if err := bare(plain, "plain", plainPaymentsHandler); err != nil {
		return err
	}
	type guarded struct {
		value, what string
		opts        []testserver.Option
	}
	var servers []guarded
	for _, p := range protected {
		servers = append(servers, guarded{p, "protected", nil})
	}
	for _, p := range oneCommit {
		// Its failures go to stderr: a 503 under load says why.
		warn := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		servers = append(servers, guarded{p, "onecommit", []testserver.Option{testserver.WithOneCommit(), testserver.WithServerLogger(warn)}})
	}
	for _, g := range servers {
		addr, location := splitServe(g.value)
		st, err := openStore(ctx, location, names)
		if err != nil {
			return err
		}
		opts := g.opts
		if st != nil {
			closers = append(closers, st.Close)
			opts = append(opts, testserver.WithStore(st))
		}
		ref, err := testserver.New(opts...)
		if err != nil {
			return err
		}
		closers = append(closers, ref.Close)
		endpoints = append(endpoints, endpoint{addr, g.what + ", " + redact(location), ref.Handler()})
	}
	return serve(ctx, endpoints)
}

// openStore opens the store a -protected value names; nil means the
// reference server's own memory store.
func openStore(ctx context.Context, location string, names storeNames) (testserver.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	scheme, _, _ := strings.Cut(location, "://")
	switch strings.ToLower(scheme) {
	case "memory":
		return nil, nil
	case "postgres", "postgresql":
		st, err := pgstore.Open(ctx, location, pgstore.WithSchema(names.schema))
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", redact(location), err)
		}
		return st, nil
	case "redis", "rediss":
		// Benchmark data is throwaway: a Redis that persists nothing will do.
		st, err := redisstore.Open(ctx, location, redisstore.WithPrefix(names.prefix), redisstore.WithAllowVolatile())
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", redact(location), err)
		}
		return st, nil
	}
	return nil, fmt.Errorf("unsupported store %q: want memory, postgres://… or redis://…", redact(location))
}

// redact hides a password in a store URL.
func redact(location string) string {
	if u, err := url.Parse(location); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return location
}

// serve runs every endpoint until ctx ends or one of them fails.
func serve(ctx context.Context, endpoints []endpoint) error {
	errs := make(chan error, len(endpoints))
	var running []*http.Server
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, hs := range running {
			_ = hs.Shutdown(shutdownCtx)
		}
	}()
	for _, e := range endpoints {
		ln, err := net.Listen("tcp", e.addr)
		if err != nil {
			return err
		}
		hs := &http.Server{Handler: withCPU(e.h), ReadHeaderTimeout: 10 * time.Second}
		running = append(running, hs)
		fmt.Printf("listening on http://%s (%s)\n", ln.Addr(), e.what)
		go func() { errs <- hs.Serve(ln) }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
