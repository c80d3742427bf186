package pgstore

import (
	"fmt"
	"log/slog"
	"regexp"
	"time"
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
}

func newConfig(opts []Option) (config, error) {
	cfg := config{schema: DefaultSchema, connectTimeout: defaultConnectTimeout}
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

// WithMaxConns caps the connection pool; zero keeps pgxpool's default
// (the larger of 4 and the number of CPUs) or the DSN's pool_max_conns.
func WithMaxConns(n int32) Option {
	return func(c *config) { c.maxConns = n }
}
