package pgkeystore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// postgresFirstDDL is the keystore table as first published, before any of
// postgresAddedColumns: what an operator who upgrades has in the database.
const postgresFirstDDL = `(
	key             text        PRIMARY KEY,
	name            text,
	method          text        NOT NULL,
	url             text        NOT NULL,
	header          jsonb,
	body            bytea,
	fingerprint     text        NOT NULL,
	state           text        NOT NULL,
	created_at      timestamptz NOT NULL,
	updated_at      timestamptz NOT NULL,
	attempts        integer     NOT NULL DEFAULT 0,
	response_status integer,
	response_header jsonb,
	response_body   bytea,
	operation       text        NOT NULL DEFAULT '',
	last_error      text        NOT NULL DEFAULT '',
	claim_owner     text,
	claim_until     timestamptz
)`

// A table made by hand with the first DDL, holding a row written then,
// gains every added column on open; the old row reads back without the
// added fields, and new records keep them.
func TestPostgresMigratesTheFirstPublishedTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	conn, err := pgx.Connect(ctx, testenv.DirectDSN(testenv.PostgresDSN(t)))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	table := pgx.Identifier{schema, DefaultTable}.Sanitize()
	_, err = conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()+`; CREATE TABLE `+table+` `+postgresFirstDDL)
	require.NoError(t, err)
	old := pendingRecord(1)
	_, err = conn.Exec(ctx, `INSERT INTO `+table+` (key, method, url, fingerprint, state, created_at, updated_at, last_error)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		old.Key, old.Method, old.URL, old.Fingerprint, string(keystore.Failed), old.CreatedAt, old.UpdatedAt, "gave up")
	require.NoError(t, err)

	p := openPostgresIn(t, schema, nil)
	got, err := p.Get(ctx, old.Key)
	require.NoError(t, err)
	assert.Equal(t, keystore.Failed, got.State)
	assert.Equal(t, "gave up", got.LastError)
	assertNoAddedFields(t, got)

	r := addedFieldsRecord(2)
	_, _, err = p.Create(ctx, r)
	require.NoError(t, err)
	got, err = p.Get(ctx, r.Key)
	require.NoError(t, err)
	assertAddedFields(t, r, got)

	var types []string
	for _, c := range postgresAddedColumns {
		var typ, nullable string
		require.NoError(t, conn.QueryRow(ctx, `SELECT data_type, is_nullable FROM information_schema.columns
			WHERE table_schema = $1 AND table_name = $2 AND column_name = $3`, schema, DefaultTable, c.name).Scan(&typ, &nullable), c.name)
		types = append(types, c.name+" "+typ+" "+nullable)
	}
	assert.Equal(t, []string{
		"host text NO", "accepted_at timestamp with time zone YES",
		"may_have_executed boolean NO", "reconciliations jsonb YES",
		"principal text NO", "secret_headers ARRAY YES",
		"purged_at timestamp with time zone YES", "checksum bytea YES",
	}, types)
}
