package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// droppedChecks are the CHECK constraints that earlier versions created
// on the records table and this one no longer has: the store's own
// statements keep each state's columns filled, and evaluating the checks
// cost every reservation and completion.
var droppedChecks = []string{
	"idempotency_records_state_check",
	"idempotency_records_reserved_has_lease",
	"idempotency_records_completed_has_response",
}

// upgradeSchema brings a records table created by an earlier version to
// this one's shape, in tx (migrate's, under its advisory lock). It is
// idempotent, and it reads the catalog first: ALTER TABLE takes an
// exclusive lock on the table, which a store starting beside busy
// replicas must not queue for when there is nothing to change.
func upgradeSchema(ctx context.Context, tx pgx.Tx, schema string) error {
	records := table(schema, "idempotency_records")
	rows, err := tx.Query(ctx, `
SELECT conname FROM pg_constraint
WHERE conrelid = to_regclass($1) AND contype = 'c' AND conname = ANY($2)
ORDER BY conname`, records, droppedChecks)
	if err != nil {
		return fmt.Errorf("read the records table's constraints: %w", err)
	}
	present, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read the records table's constraints: %w", err)
	}
	for _, name := range present {
		drop := fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s", records, pgx.Identifier{name}.Sanitize())
		if _, err := tx.Exec(ctx, drop); err != nil {
			return fmt.Errorf("drop constraint %s: %w", name, err)
		}
	}
	return nil
}
