package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrationLockClass is the first half of the advisory lock key that
// serialises creating the payments tables (server/pgstore takes 0x1de3
// for its own).
const migrationLockClass = 0x1de4

// schemaDDL creates the payments API's tables if they are missing. %[1]s
// is the quoted schema name, which server/pgstore has created.
const schemaDDL = `
CREATE TABLE IF NOT EXISTS %[1]s.payments (
	principal text        NOT NULL,
	id        text        NOT NULL,
	amount    bigint      NOT NULL,
	currency  text        NOT NULL,
	reference text        NOT NULL,
	status    text        NOT NULL,
	created   timestamptz NOT NULL,
	seq       bigserial   NOT NULL,
	PRIMARY KEY (principal, id)
);

CREATE INDEX IF NOT EXISTS payments_newest_first
	ON %[1]s.payments (principal, created DESC, seq DESC);

CREATE TABLE IF NOT EXISTS %[1]s.operations (
	principal text        NOT NULL,
	id        text        NOT NULL,
	kind      text        NOT NULL,
	amount    bigint      NOT NULL,
	currency  text        NOT NULL,
	reference text        NOT NULL,
	created   timestamptz NOT NULL,
	settle_at timestamptz NOT NULL,
	PRIMARY KEY (principal, id)
);`

// migrate creates the tables if they are missing, under an advisory lock
// so replicas starting together do not race on the DDL.
func migrate(ctx context.Context, db interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}, schema string) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrationLockClass, schema); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(schemaDDL, pgx.Identifier{schema}.Sanitize())); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
		return nil
	})
}
