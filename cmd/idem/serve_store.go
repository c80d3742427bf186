package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/internal/redact"
	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/pgstore"
	"github.com/idemkit/idem/internal/testserver/redisstore"
)

// storeForms lists what --store accepts, for help and error messages.
const storeForms = "memory, postgres://… (postgresql://…), redis://… (rediss://…) or a Redis Cluster, " +
	"redis://host:p1?addr=host:p2&addr=host:p3"

// storeOpenTimeout bounds connecting to the store at start, so a
// database that does not answer fails the command instead of hanging it.
const storeOpenTimeout = 15 * time.Second

// storeKind is the family of store a --store value names.
type storeKind int

const (
	storeMemory storeKind = iota
	storePostgres
	storeRedis
)

// parseStoreKind reads the kind of store from a --store value, by URL
// scheme for the shared stores.
func parseStoreKind(location string) (storeKind, error) {
	if location == "memory" {
		return storeMemory, nil
	}
	scheme, _, found := strings.Cut(location, "://")
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		if found {
			return storePostgres, nil
		}
	case "redis", "rediss", "unix":
		if found {
			return storeRedis, nil
		}
	}
	return 0, fmt.Errorf("unsupported --store %q: want %s", redactURL(location), storeForms)
}

// openServeStore opens the store the flags name. For memory it returns
// nil: the server then makes and owns its own memory store. The caller
// closes any store it gets.
func openServeStore(ctx context.Context, f serveFlags, logger *slog.Logger) (testserver.Store, error) {
	kind, err := parseStoreKind(f.store)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	switch kind {
	case storePostgres:
		st, err := pgstore.Open(ctx, f.store, pgstore.WithSchema(f.storeSchema), pgstore.WithLogger(logger),
			pgstore.WithReservationGrace(reservationGrace(f)))
		if err != nil {
			return nil, storeOpenError("postgres", f.store, err)
		}
		return st, nil
	case storeRedis:
		// go-redis reports pool trouble through one process-wide logger
		// that prints to stderr by default; route it to ours.
		routeRedisLog(logger)
		opts := []redisstore.Option{redisstore.WithPrefix(f.storePrefix), redisstore.WithLogger(logger),
			redisstore.WithReservationGrace(reservationGrace(f))}
		if f.redisVolatile {
			opts = append(opts, redisstore.WithAllowVolatile())
		}
		st, err := redisstore.Open(ctx, f.store, opts...)
		if errors.Is(err, redisstore.ErrUnsafeServer) {
			return nil, fmt.Errorf("%w; --redis-allow-volatile starts anyway, for throwaway data", storeOpenError("redis", f.store, err))
		}
		if err != nil {
			return nil, storeOpenError("redis", f.store, err)
		}
		return st, nil
	}
	return nil, nil
}

// reservationGrace is how long an abandoned reservation outlives its lease
// before the sweep deletes it: the server's retention, so that a key is
// remembered as long whether its request finished or its owner died.
func reservationGrace(f serveFlags) time.Duration {
	if f.retention > 0 {
		return f.retention
	}
	return testserver.DefaultReservationGrace
}

// storeOpenError words a failure to open the store as one line that names
// the store without its password.
func storeOpenError(kind, location string, err error) error {
	msg := redact.Text(strings.Join(strings.Fields(err.Error()), " "))
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("no answer within %s (%s)", storeOpenTimeout, msg)
	}
	return fmt.Errorf("cannot open the %s store at %s: %s", kind, redactURL(location), redact.Scrub(msg, redact.Secrets(location)))
}

// redactURL hides the credentials of a store location in messages and
// logs: a URL's password, secret query parameters (?password=,
// ?sslpassword=), and the password of a key=value connection string.
func redactURL(location string) string {
	return redact.Location(location)
}

// redisLogger sends go-redis's internal messages to the server's logger
// at debug level: the failures they describe also come back as errors,
// which the server reports itself.
// redisLogTo is the logger go-redis's process-wide logger writes to: the
// last serve's. go-redis's SetLogger writes a plain global, so it is
// called once (redisLogOnce) and later serves swap the target here.
var (
	redisLogTo   atomic.Pointer[slog.Logger]
	redisLogOnce sync.Once
)

// routeRedisLog sends go-redis's log lines to logger.
func routeRedisLog(logger *slog.Logger) {
	redisLogTo.Store(logger)
	redisLogOnce.Do(func() { redis.SetLogger(redisLogger{}) })
}

// redisLogger writes go-redis's lines at debug level to redisLogTo.
type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l := redisLogTo.Load()
	if l != nil && l.Enabled(ctx, slog.LevelDebug) {
		l.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
	}
}
