package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tables are the example's own tables, in the schema of the keys.
type tables struct {
	orders, outbox, receipts string
}

func newTables(schema string) tables {
	return tables{
		orders:   pgx.Identifier{schema, "orders"}.Sanitize(),
		outbox:   pgx.Identifier{schema, "outbox"}.Sanitize(),
		receipts: pgx.Identifier{schema, "receipts"}.Sanitize(),
	}
}

// create makes the tables if they are missing. The outbox and the
// receipts have no unique constraint on the order on purpose: one row
// each is the workflow's and server.Once's doing, and the tests count
// rows to prove it.
func (t tables) create(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	stmts := []string{
		`CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{schema}.Sanitize(),
		`CREATE TABLE IF NOT EXISTS ` + t.orders + ` (
			id text PRIMARY KEY, amount bigint NOT NULL, currency text NOT NULL, ship_to text NOT NULL,
			state text NOT NULL, problem text NOT NULL DEFAULT '',
			created timestamptz NOT NULL DEFAULT now(), updated timestamptz NOT NULL DEFAULT now())`,
		`CREATE TABLE IF NOT EXISTS ` + t.outbox + ` (
			id bigserial PRIMARY KEY, message_id text NOT NULL, order_id text NOT NULL,
			body bytea NOT NULL, sent timestamptz)`,
		`CREATE TABLE IF NOT EXISTS ` + t.receipts + ` (
			id bigserial PRIMARY KEY, message_id text NOT NULL, order_id text NOT NULL,
			created timestamptz NOT NULL DEFAULT now())`,
	}
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("create the example's tables: %w", err)
		}
	}
	return nil
}
