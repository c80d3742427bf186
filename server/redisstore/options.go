package redisstore

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/idemkit/idem/server"
)

// DefaultPrefix starts every key the store writes unless WithPrefix says
// otherwise.
const DefaultPrefix = "idem:"

// DefaultReservationGrace is how long a reservation outlives its lease
// before Redis drops it, unless WithReservationGrace says otherwise: the
// same for every store, server.DefaultReservationGrace.
const DefaultReservationGrace = server.DefaultReservationGrace

// Option configures Open.
type Option func(*config)

type config struct {
	prefix        string
	logger        *slog.Logger
	grace         time.Duration
	allowVolatile bool
}

func newConfig(opts []Option) (config, error) {
	cfg := config{prefix: DefaultPrefix, grace: DefaultReservationGrace}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.prefix == "" {
		return config{}, errors.New("redisstore: key prefix must not be empty")
	}
	if cfg.grace < time.Millisecond {
		return config{}, fmt.Errorf("redisstore: reservation grace must be at least 1ms, got %v", cfg.grace)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

// WithPrefix starts every key the store writes with prefix (default
// DefaultPrefix), so several stores can share one Redis database.
func WithPrefix(prefix string) Option {
	return func(c *config) { c.prefix = prefix }
}

// WithLogger sends the store's diagnostics to l. A nil logger, the
// default, discards them. Keys are logged only as a short hash.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithReservationGrace sets how long a reservation stays in Redis after
// its lease ran out (default DefaultReservationGrace). Until then a retry
// with the same payload can take it over, and its owner may still
// complete it if nobody did; afterwards the key is free again and a late
// completion is fenced. It must be at least a millisecond, Redis's
// resolution.
func WithReservationGrace(d time.Duration) Option {
	return func(c *config) { c.grace = d }
}

// WithAllowVolatile lets Open use a Redis that may lose or evict records
// (one that persists nothing, or whose maxmemory-policy evicts), which it
// otherwise refuses with ErrUnsafeServer; each reason is logged at Error
// instead. For tests and throwaway data: on such a Redis a restart or an
// eviction makes retries run their requests again.
func WithAllowVolatile() Option {
	return func(c *config) { c.allowVolatile = true }
}
