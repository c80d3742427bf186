package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrationLockClass is the first half of the advisory lock key that
// serialises schema creation; the second half is hashtext(schema), so
// stores in different schemas do not wait for each other.
const migrationLockClass = 0x1de3

// schemaDDL creates the store's tables if they are missing. %[1]s is the
// quoted schema name. Its only constraint is the one the protocol rests
// on, the unique (scope, key); the two partial indexes are what Sweep's
// bounded range scans read. The store's own statements are the only
// writers and keep each state's columns filled, so CHECK constraints
// would only cost every write their evaluation (upgradeSchema drops those
// of earlier versions). CREATE … IF NOT EXISTS alone is not safe against a
// concurrent CREATE (both may pass the check and one then fails on the
// catalog's unique index), hence the advisory lock in migrate.
const schemaDDL = `
CREATE SCHEMA IF NOT EXISTS %[1]s;

CREATE TABLE IF NOT EXISTS %[1]s.idempotency_records (
	principal       text        NOT NULL,
	method          text        NOT NULL,
	route           text        NOT NULL,
	key             text        NOT NULL,
	fingerprint     text        NOT NULL,
	state           text        NOT NULL,
	token           text,
	lease_expires   timestamptz,
	response_status integer,
	response_header bytea,
	response_body   bytea,
	resource_id     text,
	created_at      timestamptz NOT NULL,
	expires_at      timestamptz,
	CONSTRAINT idempotency_records_scope_key UNIQUE (principal, method, route, key)
);

CREATE INDEX IF NOT EXISTS idempotency_records_expiry
	ON %[1]s.idempotency_records (expires_at) WHERE state = 'completed';

CREATE INDEX IF NOT EXISTS idempotency_records_lease
	ON %[1]s.idempotency_records (lease_expires) WHERE state = 'reserved';
`

// migrate creates the schema and its tables if they are missing. Several
// processes may call it at once: the advisory lock lets one create and
// the others then find everything in place.
func migrate(ctx context.Context, db interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}, schema string) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrationLockClass, schema); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		ddl := fmt.Sprintf(schemaDDL, pgx.Identifier{schema}.Sanitize())
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
		return upgradeSchema(ctx, tx, schema)
	})
}
