package pgstore

import (
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/idemkit/idem/server"
)

// DefaultSchema is the schema Open uses unless WithSchema says otherwise.
const DefaultSchema = "idem"

// defaultConnectTimeout bounds each connection attempt when the DSN sets
// no connect_timeout, so an unreachable database fails fast instead of
// hanging the request that needed it.
const defaultConnectTimeout = 5 * time.Second

// schemaName is what WithSchema accepts: a plain lower-case identifier, so
// the name never needs quoting rules explained to anyone.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Option configures Open.
type Option func(*config)

type config struct {
	schema         string
	logger         *slog.Logger
	connectTimeout time.Duration
	maxConns       int32
	grace          time.Duration
	asyncReserve   bool
}

func newConfig(opts []Option) (config, error) {
	cfg := config{schema: DefaultSchema, connectTimeout: defaultConnectTimeout, grace: server.DefaultReservationGrace}
	for _, opt := range opts {
		opt(&cfg)
	}
	if !schemaName.MatchString(cfg.schema) {
		return config{}, fmt.Errorf("pgstore: schema %q must match %s", cfg.schema, schemaName)
	}
	if cfg.connectTimeout <= 0 {
		return config{}, fmt.Errorf("pgstore: connect timeout must be positive, got %v", cfg.connectTimeout)
	}
	if cfg.maxConns < 0 {
		return config{}, fmt.Errorf("pgstore: max connections must not be negative, got %d", cfg.maxConns)
	}
	if cfg.grace < time.Microsecond {
		return config{}, fmt.Errorf("pgstore: reservation grace must be at least 1µs, got %v", cfg.grace)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

// WithSchema puts the store's tables in schema (default DefaultSchema).
// The name must be a lower-case SQL identifier of at most 63 characters.
func WithSchema(schema string) Option {
	return func(c *config) { c.schema = schema }
}

// WithLogger sends the store's diagnostics to l. A nil logger, the
// default, discards them. Keys are logged only as a short hash.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithConnectTimeout bounds each attempt to open a connection when the DSN
// does not set connect_timeout itself (default 5s).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) { c.connectTimeout = d }
}

// WithMaxConns sets the size of the connection pool. Zero, the default,
// takes the DSN's pool_max_conns if it sets one, else 16
// (pgpool.DefaultMaxConns): enough for 16 requests in flight, where
// pgxpool's own default, the larger of 4 and the number of CPUs, makes a
// busy server's requests queue for a connection.
func WithMaxConns(n int32) Option {
	return func(c *config) { c.maxConns = n }
}

// WithReservationGrace sets how long a reservation stays after its lease
// ended (default server.DefaultReservationGrace) before Sweep deletes
// it as abandoned. Until then a retry with the same payload can take it
// over. It must be at least a microsecond, the database's resolution.
func WithReservationGrace(d time.Duration) Option {
	return func(c *config) { c.grace = d }
}

// WithAsyncReservations makes Reserve commit without waiting for its
// write-ahead log record to reach the disk (synchronous_commit = off for
// that one transaction; the session and the server keep their setting),
// so a protected request makes one durable commit, its completion,
// instead of two. A reservation the database loses in a crash never
// lets an effect commit twice: the completion's durable commit flushes
// the log up to itself, the reservation included, and a completion whose
// reservation was lost finds no row to compare its token with and is
// fenced (docs/PROTOCOL.md, "One durable commit per request").
//
// Enable it only when every effect of a guarded handler commits in the
// completion's transaction (CompleteTx) or is otherwise fenced by it. An
// effect outside the database (a call to another service) would run
// again on a retry after a database crash had lost its reservation, where
// a durable reservation keeps the key reserved until its lease ends.
// Off by default.
func WithAsyncReservations(enabled bool) Option {
	return func(c *config) { c.asyncReserve = enabled }
}
