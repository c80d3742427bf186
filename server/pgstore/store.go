package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/internal/pgpool"
	"github.com/idemkit/idem/server"
)

// Store is a server.Store in PostgreSQL. It is safe for concurrent
// use, and any number of Stores (in one process or many) may share one
// database and schema.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	schema   string
	q        queries
	grace    time.Duration // how long Sweep leaves a reservation past its lease
	logger   *slog.Logger
}

var _ server.Store = (*Store)(nil)

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value string), creates the store's schema if it is missing and
// returns the store. It fails, rather than returning a store that fails
// later, when the database cannot be reached.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	poolCfg, err := pgpool.Config(dsn, cfg.connectTimeout, cfg.maxConns)
	if err != nil {
		// pgx redacts the password from the DSN it quotes.
		return nil, fmt.Errorf("pgstore: invalid DSN: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := migrate(ctx, pool, cfg.schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open schema %q: %w", cfg.schema, err)
	}
	cfg.logger.Debug("pgstore opened", "schema", cfg.schema)
	st := newStore(pool, cfg)
	st.ownsPool = true
	return st, nil
}

// New returns a store on the caller's pool, creating the store's schema
// if it is missing: the pool the API's own handlers use, so a handler can
// commit its effect with the key's completion (CompleteTx). Close leaves
// the pool open; WithConnectTimeout and WithMaxConns do not apply.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool, cfg.schema); err != nil {
		return nil, fmt.Errorf("pgstore: open schema %q: %w", cfg.schema, err)
	}
	return newStore(pool, cfg), nil
}

func newStore(pool *pgxpool.Pool, cfg config) *Store {
	return &Store{pool: pool, schema: cfg.schema, q: newQueries(cfg.schema, cfg.asyncReserve), grace: cfg.grace, logger: cfg.logger}
}

// Pool returns the store's connection pool, to begin the transactions
// CompleteTx joins.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema that holds the store's table.
func (s *Store) Schema() string { return s.schema }

// Close closes the pool Open made, waiting for connections in use to be
// returned; a pool given to New stays open.
func (s *Store) Close() error {
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

// table returns the quoted, schema-qualified name of one of the tables.
func table(schema, name string) string {
	return pgx.Identifier{schema, name}.Sanitize()
}
