package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server/pgstore"
)

// Store is a testserver.Store in PostgreSQL: the idempotency records of
// server/pgstore, and the payments API's tables beside them in the same
// schema, each effect committed with its key through CompleteTx. It is
// safe for concurrent use, and any number of Stores may share one
// database and schema.
type Store struct {
	*pgstore.Store
	pool *pgxpool.Pool
	q    queries
}

var _ testserver.Store = (*Store)(nil)

// The options of server/pgstore, which Open takes.
type Option = pgstore.Option

// DefaultSchema is the schema Open uses unless WithSchema says otherwise.
const DefaultSchema = pgstore.DefaultSchema

var (
	WithSchema            = pgstore.WithSchema
	WithLogger            = pgstore.WithLogger
	WithConnectTimeout    = pgstore.WithConnectTimeout
	WithMaxConns          = pgstore.WithMaxConns
	WithReservationGrace  = pgstore.WithReservationGrace
	WithAsyncReservations = pgstore.WithAsyncReservations
)

// Open opens server/pgstore on dsn and creates the payments tables in
// its schema if they are missing. Reservations commit asynchronously
// (WithAsyncReservations) unless opts say otherwise: every effect of the
// payments API commits with its key's completion, which is what makes
// that safe.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	opts = append([]Option{pgstore.WithAsyncReservations(true)}, opts...)
	records, err := pgstore.Open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	pool := records.Pool()
	if err := migrate(ctx, pool, records.Schema()); err != nil {
		_ = records.Close()
		return nil, fmt.Errorf("pgstore: open schema %q: %w", records.Schema(), err)
	}
	return &Store{Store: records, pool: pool, q: newQueries(records.Schema())}, nil
}

// table returns the quoted, schema-qualified name of one of the tables.
func table(schema, name string) string {
	return pgx.Identifier{schema, name}.Sanitize()
}
