// Command peerserver serves the payments app of bench/cmd/benchserver on
// Fiber v2 (internal/peerbench/fiberapp), for bench/cmd/serverbench -peers:
// once per -fiber-idempotency value behind Fiber's idempotency middleware,
// once per -fiber-unprotected value without it. It runs until interrupted.
//
//	go run ./cmd/peerserver -fiber-idempotency 127.0.0.1:18090 \
//		-fiber-idempotency '127.0.0.1:18091,postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		-fiber-unprotected 127.0.0.1:18092,redis://127.0.0.1:6379/0
//
// A value is an address, optionally followed by a comma and the store:
// memory (the default), a postgres:// DSN or a redis:// URL. The payments
// go to that store as benchserver keeps them (testserver's pgstore in
// -schema, redisstore under -prefix); the middleware's records go to
// Fiber's in-memory storage, to a table fiber_idempotency in -schema, or
// to gofiber/storage/redis under -prefix. Every listener also answers GET
// /debug/cpu with the process's CPU time in microseconds, as benchserver's
// do.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/storage/redis/v3"

	"github.com/idemkit/idem/internal/peerbench/fiberapp"
	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/pgstore"
	"github.com/idemkit/idem/internal/testserver/redisstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerserver:", err)
		os.Exit(1)
	}
}

// openTimeout bounds connecting to a store at start.
const openTimeout = 15 * time.Second

// serveFlag collects the values of a repeatable flag.
type serveFlag []string

func (p *serveFlag) String() string     { return strings.Join(*p, " ") }
func (p *serveFlag) Set(v string) error { *p = append(*p, v); return nil }

// names are where the shared stores keep a run's data.
type names struct{ schema, prefix string }

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("peerserver", flag.ContinueOnError)
	var guarded, bare serveFlag
	fs.Var(&guarded, "fiber-idempotency", "`addr[,store]` of the app behind Fiber's idempotency middleware; store is memory (default), postgres://… or redis://…; repeatable")
	fs.Var(&bare, "fiber-unprotected", "`addr[,store]` of the app without the middleware; repeatable")
	n := names{}
	fs.StringVar(&n.schema, "schema", "idem_bench", "Postgres schema of the payments and the middleware's table")
	fs.StringVar(&n.prefix, "prefix", "idem-bench:", "Redis key prefix of the payments and the middleware's records")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || len(guarded)+len(bare) == 0 {
		return fmt.Errorf("want -fiber-idempotency or -fiber-unprotected values and no arguments")
	}
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}()
	var apps []*fiber.App
	for _, guard := range []bool{false, true} {
		values, what := bare, "Fiber unprotected"
		if guard {
			values, what = guarded, "Fiber idempotency"
		}
		for _, v := range values {
			addr, location, _ := strings.Cut(v, ",")
			if location == "" {
				location = "memory"
			}
			store, storage, closeAll, err := open(ctx, location, n, guard)
			if err != nil {
				return err
			}
			closers = append(closers, closeAll)
			app := fiberapp.New(store, guard, storage)
			app.Get("/debug/cpu", cpu)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			apps = append(apps, app)
			fmt.Printf("listening on http://%s (%s, %s)\n", ln.Addr(), what, redact(location))
			go func() { _ = app.Listener(ln) }()
		}
	}
	<-ctx.Done()
	for _, app := range apps {
		_ = app.ShutdownWithTimeout(5 * time.Second)
	}
	return nil
}

// open returns the payments store and, for a guarded app, the
// middleware's storage (nil: its own in-memory one) on location.
func open(ctx context.Context, location string, n names, guard bool) (testserver.Store, fiber.Storage, func() error, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	scheme, _, _ := strings.Cut(location, "://")
	switch strings.ToLower(scheme) {
	case "memory":
		st := testserver.NewMemoryStore()
		return st, nil, st.Close, nil
	case "postgres", "postgresql":
		st, err := pgstore.Open(ctx, location, pgstore.WithSchema(n.schema))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("opening %s: %w", redact(location), err)
		}
		if !guard {
			return st, nil, st.Close, nil
		}
		ps, err := fiberapp.OpenPGStorage(ctx, location, n.schema, "fiber_idempotency")
		if err != nil {
			_ = st.Close()
			return nil, nil, nil, fmt.Errorf("opening %s: %w", redact(location), err)
		}
		return st, ps, func() error { _ = ps.Close(); return st.Close() }, nil
	case "redis", "rediss":
		// Benchmark data is throwaway: a Redis that persists nothing will do.
		st, err := redisstore.Open(ctx, location, redisstore.WithPrefix(n.prefix), redisstore.WithAllowVolatile())
		if err != nil {
			return nil, nil, nil, fmt.Errorf("opening %s: %w", redact(location), err)
		}
		if !guard {
			return st, nil, st.Close, nil
		}
		rs := redis.New(redis.Config{URL: location})
		return st, fiberapp.Prefixed(rs, n.prefix+"fiber:"), func() error { _ = rs.Close(); return st.Close() }, nil
	}
	return nil, nil, nil, fmt.Errorf("unsupported store %q: want memory, postgres://… or redis://…", redact(location))
}

// cpu answers the process's CPU time so far, user plus system, in
// microseconds.
func cpu(c *fiber.Ctx) error {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextPlain)
	return c.SendString(strconv.FormatInt(ru.Utime.Nano()/1000+ru.Stime.Nano()/1000, 10))
}

// redact hides a password in a store URL.
func redact(location string) string {
	if u, err := url.Parse(location); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return location
}
