package testserver

import (
	"log/slog"
	"net/http"
	"time"
)

// Defaults of the idempotency layer. The retention is part of the
// protocol: clients are configured with the same figure.
const (
	// DefaultLease is how long a reservation is held before another
	// request with the same key may take it over.
	DefaultLease = 30 * time.Second
	// DefaultRetention is how long a completed key is replayed.
	DefaultRetention = 24 * time.Hour
	// DefaultMaxBody is the largest request body the layer reads.
	DefaultMaxBody = 1 << 20
	// DefaultInProgressRetryAfter is the Retry-After sent with 409
	// /in-progress.
	DefaultInProgressRetryAfter = time.Second
	// storeUnavailableRetryAfter is the Retry-After sent with 503
	// /store-unavailable.
	storeUnavailableRetryAfter = time.Second
)

// alwaysStoredHeaders are the response headers every replay needs.
var alwaysStoredHeaders = []string{"Content-Type", "Location", "Retry-After"}

// idempotencyConfig holds the options of an Idempotency layer.
type idempotencyConfig struct {
	lease                time.Duration
	retention            time.Duration
	store5xx             bool
	maxBody              int64
	logger               *slog.Logger
	inProgressRetryAfter time.Duration
	storedHeaders        []string // canonical names
	dialect              Dialect
	// retentionSet and store5xxSet say the option was given, so the
	// dialect's defaults do not override it.
	retentionSet, store5xxSet bool
}

func defaultIdempotencyConfig() idempotencyConfig {
	return idempotencyConfig{
		lease:                DefaultLease,
		retention:            DefaultRetention,
		maxBody:              DefaultMaxBody,
		logger:               slog.New(slog.DiscardHandler),
		inProgressRetryAfter: DefaultInProgressRetryAfter,
		storedHeaders:        canonicalHeaderNames(alwaysStoredHeaders),
		dialect:              idemDialect(),
	}
}

// applyDialectDefaults gives the dialect's retention and 5xx rule to the
// options that were not set explicitly.
func (c *idempotencyConfig) applyDialectDefaults() {
	if !c.retentionSet && c.dialect.Retention > 0 {
		c.retention = c.dialect.Retention
	}
	if !c.store5xxSet {
		c.store5xx = c.dialect.Store5xx
	}
}

// IdempotencyOption configures an Idempotency layer.
type IdempotencyOption func(*idempotencyConfig)

// WithLease sets how long a reservation is held before a retry with the
// same key may take it over (default 30 s). It should outlast the slowest
// handler. A non-positive d is ignored.
func WithLease(d time.Duration) IdempotencyOption {
	return func(c *idempotencyConfig) {
		if d > 0 {
			c.lease = d
		}
	}
}

// WithRetention sets how long a completed key is replayed (default 24 h).
// A non-positive d is ignored.
func WithRetention(d time.Duration) IdempotencyOption {
	return func(c *idempotencyConfig) {
		if d > 0 {
			c.retention = d
			c.retentionSet = true
		}
	}
}

// WithStore5xx makes a 5xx answer or a panic final: it is stored and
// replayed (Stripe v1 style). By default the key is released so a retry
// runs the handler again. A 503 is never stored: it says the request was
// not taken on.
func WithStore5xx(store bool) IdempotencyOption {
	return func(c *idempotencyConfig) { c.store5xx, c.store5xxSet = store, true }
}

// WithDialect makes the layer speak d, from LookupDialect (default: the
// "idem" dialect). Its retention and 5xx rule apply unless WithRetention
// or WithStore5xx say otherwise. A Dialect built by hand carries none of
// the answer writers and is ignored.
func WithDialect(d Dialect) IdempotencyOption {
	return func(c *idempotencyConfig) {
		if d.usable() {
			c.dialect = d
		}
	}
}

// WithMaxBody sets the largest request body the layer reads (default
// 1 MiB); a larger one is answered 413 /body-too-large and nothing is
// stored. A non-positive n is ignored.
func WithMaxBody(n int64) IdempotencyOption {
	return func(c *idempotencyConfig) {
		if n > 0 {
			c.maxBody = n
		}
	}
}

// WithLogger sets where the layer logs. Nil, the default, is silent.
// Keys are logged as a short hash, bodies never.
func WithLogger(l *slog.Logger) IdempotencyOption {
	return func(c *idempotencyConfig) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
	}
}

// WithInProgressRetryAfter sets the Retry-After of a 409 /in-progress
// answer (default 1 s). A non-positive d is ignored.
func WithInProgressRetryAfter(d time.Duration) IdempotencyOption {
	return func(c *idempotencyConfig) {
		if d > 0 {
			c.inProgressRetryAfter = d
		}
	}
}

// WithStoredHeaders names response headers kept for replays in addition
// to Content-Type, Location and Retry-After.
func WithStoredHeaders(names ...string) IdempotencyOption {
	return func(c *idempotencyConfig) {
		c.storedHeaders = canonicalHeaderNames(append(alwaysStoredHeaders[:len(alwaysStoredHeaders):len(alwaysStoredHeaders)], names...))
	}
}

// canonicalHeaderNames returns names in canonical form, without
// duplicates or empty names.
func canonicalHeaderNames(names []string) []string {
	out := make([]string, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		n = http.CanonicalHeaderKey(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}
