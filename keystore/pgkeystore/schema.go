package pgkeystore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/keystore"
)

// postgresIdentifier is what Open accepts as a schema or table
// name: plain lower-case SQL identifiers, so a name never needs quoting in
// an operator's psql session and can never smuggle SQL in.
var postgresIdentifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

// postgresColumns are the columns every keystore table must have: a
// record's, then the claim's. Open refuses a table that lacks one
// rather than failing later, query by query.
var postgresColumns = append(slices.Clone(postgresRecordColumns), "claim_owner", "claim_until")

// postgresObject is one database object of the keystore: the name to look
// it up by (to_regnamespace for the schema, to_regclass otherwise) and the
// statement that creates it.
type postgresObject struct {
	kind, name, create string
}

// postgresDDL returns the keystore's schema and table, then its indexes.
func postgresDDL(schema, table string) (tables, indexes []postgresObject) {
	s := pgx.Identifier{schema}.Sanitize()
	t := pgx.Identifier{schema, table}.Sanitize()
	tables = []postgresObject{
		{kind: "schema", name: s, create: `CREATE SCHEMA IF NOT EXISTS ` + s},
		{kind: "table", name: t, create: `CREATE TABLE IF NOT EXISTS ` + t + ` (
			key               text        PRIMARY KEY,
			name              text,
			method            text        NOT NULL,
			url               text        NOT NULL,
			header            jsonb,
			body              bytea,
			fingerprint       text        NOT NULL,
			state             text        NOT NULL,
			created_at        timestamptz NOT NULL,
			updated_at        timestamptz NOT NULL,
			attempts          integer     NOT NULL DEFAULT 0,
			response_status   integer,
			response_header   jsonb,
			response_body     bytea,
			operation         text        NOT NULL DEFAULT '',
			last_error        text        NOT NULL DEFAULT '',
			host              text        NOT NULL DEFAULT '',
			accepted_at       timestamptz,
			may_have_executed boolean     NOT NULL DEFAULT false,
			reconciliations   jsonb,
			principal         text        NOT NULL DEFAULT '',
			secret_headers    text[],
			purged_at         timestamptz,
			checksum          bytea,
			claim_owner       text,
			claim_until       timestamptz
		)`},
	}
	idx := func(suffix, unique, columns string) postgresObject {
		name := table + "_" + suffix
		return postgresObject{
			kind:   "index",
			name:   pgx.Identifier{schema, name}.Sanitize(),
			create: `CREATE ` + unique + `INDEX IF NOT EXISTS ` + pgx.Identifier{name}.Sanitize() + ` ON ` + t + ` ` + columns,
		}
	}
	indexes = []postgresObject{
		// Only named intents take part in name uniqueness; unnamed ones
		// are stored with a NULL name.
		idx("name_key", "UNIQUE ", `(name) WHERE name IS NOT NULL`),
		// Claim scans pending records oldest first.
		idx("pending_idx", "", `(created_at, key) WHERE state = 'pending'`),
		// List filters and orders by creation time.
		idx("created_idx", "", `(created_at, key)`),
		// Purge looks for old final records only.
		idx("final_idx", "", `(updated_at) WHERE state <> 'pending'`),
		// Namesakes finds a business name under every principal.
		idx("business_idx", "", `(`+postgresBusinessName+`) WHERE name IS NOT NULL`),
	}
	return tables, indexes
}

// postgresLockID is the advisory lock that serialises schema creation for
// one schema.table, so processes opening the same keystore at once do not
// trip over each other's CREATE ... IF NOT EXISTS.
func postgresLockID(schema, table string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("idem/keystore/" + schema + "." + table))
	return int64(h.Sum64())
}

// ensurePostgresSchema creates the schema, table and indexes if they do not
// exist, then checks that the table is a keystore. Unless mayCreate, a
// missing schema or table is ErrNoKeystore.
func ensurePostgresSchema(ctx context.Context, pool *pgxpool.Pool, schema, table string, mayCreate bool) error {
	var err error
	// The advisory lock covers openers of this keystore; another program
	// creating the same schema concurrently can still race CREATE SCHEMA
	// IF NOT EXISTS, which surfaces as a duplicate error and is retried.
	for range 3 {
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, postgresLockID(schema, table)); err != nil {
				return err
			}
			tables, indexes := postgresDDL(schema, table)
			if !mayCreate {
				if err := requirePostgresObjects(ctx, tx, schema, table, tables); err != nil {
					return err
				}
			}
			if err := createMissingPostgresObjects(ctx, tx, tables); err != nil {
				return err
			}
			// A table of that name that predates us must be a keystore
			// before anything is added to it.
			if err := checkPostgresColumns(ctx, tx, schema, table); err != nil {
				return err
			}
			if err := createMissingPostgresObjects(ctx, tx, indexes); err != nil {
				return err
			}
			if !mayCreate {
				return nil // an older keystore without runs is read as one with none
			}
			return createMissingPostgresObjects(ctx, tx, []postgresObject{postgresRunDDL(schema, table)})
		})
		if !isPostgresDuplicateObject(err) {
			break
		}
	}
	if errors.Is(err, keystore.ErrCorrupt) || errors.Is(err, ErrNoKeystore) {
		return err
	}
	if err != nil {
		return fmt.Errorf("keystore: postgres: create %s.%s: %w", schema, table, err)
	}
	return nil
}

// requirePostgresObjects fails with ErrNoKeystore when one of objects
// does not exist.
func requirePostgresObjects(ctx context.Context, tx pgx.Tx, schema, table string, objects []postgresObject) error {
	for _, o := range objects {
		exists, err := postgresObjectExists(ctx, tx, o)
		if err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("%w at schema %s table %s: the %s does not exist", ErrNoKeystore, schema, table, o.kind)
		}
	}
	return nil
}

// postgresObjectExists looks o up in the catalog.
func postgresObjectExists(ctx context.Context, tx pgx.Tx, o postgresObject) (bool, error) {
	lookup := `SELECT to_regclass($1) IS NOT NULL`
	if o.kind == "schema" {
		lookup = `SELECT to_regnamespace($1) IS NOT NULL`
	}
	var exists bool
	if err := tx.QueryRow(ctx, lookup, o.name).Scan(&exists); err != nil {
		return false, fmt.Errorf("look up %s %s: %w", o.kind, o.name, err)
	}
	return exists, nil
}

// createMissingPostgresObjects runs the create statement of each object
// that does not exist yet. Looking first, rather than relying on IF NOT
// EXISTS alone, means opening an existing keystore needs no CREATE privilege
// and takes no table lock: CREATE INDEX IF NOT EXISTS locks the table
// against writes before it finds the index already there.
func createMissingPostgresObjects(ctx context.Context, tx pgx.Tx, objects []postgresObject) error {
	for _, o := range objects {
		exists, err := postgresObjectExists(ctx, tx, o)
		if err != nil {
			return err
		}
		if exists {
			continue
		}
		if _, err := tx.Exec(ctx, o.create); err != nil {
			return fmt.Errorf("create %s %s: %w", o.kind, o.name, err)
		}
	}
	return nil
}

// checkPostgresColumns fails with ErrCorrupt when schema.table exists but is
// not shaped like a keystore table (someone else's table of that name), and
// adds to a keystore table the columns it predates (postgresAddedColumns).
func checkPostgresColumns(ctx context.Context, tx pgx.Tx, schema, table string) error {
	rows, err := tx.Query(ctx,
		`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`,
		schema, table)
	if err != nil {
		return fmt.Errorf("keystore: postgres: inspect %s.%s: %w", schema, table, err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("keystore: postgres: inspect %s.%s: %w", schema, table, err)
	}
	present := make(map[string]bool, len(have))
	for _, c := range have {
		present[c] = true
	}
	var missing []string
	for _, c := range postgresColumns {
		if !present[c] && !isPostgresAddedColumn(c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: table %s.%s lacks columns %s", keystore.ErrCorrupt, schema, table, strings.Join(missing, ", "))
	}
	return addMissingPostgresColumns(ctx, tx, schema, table, present)
}

// isPostgresDuplicateObject reports the errors a concurrent CREATE ... IF
// NOT EXISTS can raise: unique_violation on the catalog, duplicate_schema,
// duplicate_table (also raised for indexes) and duplicate_object.
func isPostgresDuplicateObject(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "23505", "42P06", "42P07", "42710":
		return true
	}
	return false
}
