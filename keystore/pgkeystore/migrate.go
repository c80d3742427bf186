package pgkeystore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// postgresAddedColumn is a record column added after the keystore table
// was first published, with its definition.
type postgresAddedColumn struct {
	name, definition string
}

// postgresAddedColumns are added to a keystore table created before them
// when it is opened. Each is nullable or has a constant default, so adding
// it rewrites no rows.
var postgresAddedColumns = []postgresAddedColumn{
	{name: "host", definition: `text NOT NULL DEFAULT ''`},
	{name: "accepted_at", definition: `timestamptz`},
	{name: "may_have_executed", definition: `boolean NOT NULL DEFAULT false`},
	{name: "reconciliations", definition: `jsonb`},
	{name: "principal", definition: `text NOT NULL DEFAULT ''`},
	{name: "secret_headers", definition: `text[]`},
	{name: "purged_at", definition: `timestamptz`},
	// Rows written before it have none and are read as they are.
	{name: "checksum", definition: `bytea`},
}

func isPostgresAddedColumn(name string) bool {
	for _, c := range postgresAddedColumns {
		if c.name == name {
			return true
		}
	}
	return false
}

// addMissingPostgresColumns adds the postgresAddedColumns that schema.table
// lacks; present holds the columns it has. A table that has them all is
// left alone, so opening an up-to-date keystore needs no ALTER privilege
// and takes no table lock.
func addMissingPostgresColumns(ctx context.Context, tx pgx.Tx, schema, table string, present map[string]bool) error {
	t := pgx.Identifier{schema, table}.Sanitize()
	for _, c := range postgresAddedColumns {
		if present[c.name] {
			continue
		}
		stmt := `ALTER TABLE ` + t + ` ADD COLUMN IF NOT EXISTS ` + pgx.Identifier{c.name}.Sanitize() + ` ` + c.definition
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("keystore: postgres: add column %s to %s.%s: %w", c.name, schema, table, err)
		}
	}
	return nil
}
